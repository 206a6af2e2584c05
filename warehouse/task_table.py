"""A round's committed tasks as one Arrow table, read once per process and kept for the next shard."""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow as pa

from warehouse import query, state
from warehouse.store import Store

_TASK_TABLES: OrderedDict[tuple, pa.Table] = OrderedDict()
_TASK_TABLES_KEPT = 4  # rounds whose tasks a process keeps
_TASK_TABLES_LOCK = threading.Lock()  # shards may run in threads


def round_task_table(store: Store, round_id: str) -> pa.Table:
    """The round's committed tasks (every column, in key order), read once per process: a shard
    reads its tasks from it instead of opening DuckDB over the warehouse (tens of milliseconds a
    shard). Keyed by the recorded shards' paths and checksums, and a committed shard never
    changes, so it cannot be stale."""
    with store.session() as s:
        recorded = state.shard_files(session=s, table_name="tasks", round_ids=[round_id])
    key = (str(store.data_dir), store.state_url, round_id, tuple(recorded))
    with _TASK_TABLES_LOCK:
        if key in _TASK_TABLES:
            _TASK_TABLES.move_to_end(key)
            return _TASK_TABLES[key]
    table = query.connect(store.readable({"tasks": recorded})).sql(
        "SELECT * FROM tasks ORDER BY task_id").fetch_arrow_table()
    with _TASK_TABLES_LOCK:
        _TASK_TABLES[key] = table
        while len(_TASK_TABLES) > _TASK_TABLES_KEPT:
            _TASK_TABLES.popitem(last=False)
    return table
