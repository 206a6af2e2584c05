"""One DuckDB connection per page render: the warehouse views plus the review state.

Reviews and adjudications live in the state database (SQLite or PostgreSQL); they are
read once per render with a plain SQL select and registered as Arrow tables, so the
queue can join, filter, sort and paginate in one DuckDB query.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import duckdb
import pyarrow as pa
from sqlmodel import select

from review_app.agreement import Overlap
from review_app.final import resolve_all
from warehouse import query, state
from warehouse import review_tables as rt
from warehouse.state import WITHDRAWN
from warehouse.store import Store

# per set of shard files: the bound connection, and a lock held while its queue table is built
_BASES: OrderedDict[tuple, tuple[duckdb.DuckDBPyConnection, threading.Lock]] = OrderedDict()
_BASES_LOCK = threading.Lock()
_MAX_BASES = 8

_VOTE_SCHEMA = pa.schema([("episode_id", pa.string()), ("reviewer", pa.string()), ("decision", pa.string())])
_STATUS_SCHEMA = pa.schema(
    [
        ("episode_id", pa.string()),
        ("reviewers", pa.list_(pa.string())),
        ("status", pa.string()),
        ("final", pa.string()),
        ("first_wrong_step", pa.int64()),
    ]
)


def review_connection(store: Store, round_ids: list[str] | None, overlap: Overlap,
                      queue_rows: str | None = None) -> duckdb.DuckDBPyConnection:
    """Warehouse views, and ``votes`` (latest decision per episode and reviewer) and
    ``status`` (one row per reviewed episode: reviewers, status, the decision that counts).

    ``status`` is :func:`review_app.final.resolve_all`, the one rule exports, releases and
    ``flywheel status`` use too, so the dashboard cannot count differently. ``queue_rows``: the
    SELECT of the queue's narrow rows, kept as the table ``queue_rows`` (see :func:`warehouse_cursor`)."""
    con = warehouse_cursor(store, round_ids, queue_rows)
    with store.session() as s:
        rstmt = select(
            state.Review.episode_id, state.Review.round_id, state.Review.reviewer, state.Review.decision,
            state.Review.first_wrong_step, state.Review.recovered, state.Review.decided_at,
        ).order_by(state.Review.id)
        astmt = select(
            rt.Adjudication.episode_id, rt.Adjudication.round_id, rt.Adjudication.decision,
            rt.Adjudication.reason, rt.Adjudication.first_wrong_step, rt.Adjudication.recovered,
            rt.Adjudication.decided_at,
        ).order_by(rt.Adjudication.id)
        if round_ids:
            rstmt = rstmt.where(state.Review.round_id.in_(round_ids))
            astmt = astmt.where(rt.Adjudication.round_id.in_(round_ids))
        reviews = s.exec(rstmt).all()
        adjs = s.exec(astmt).all()
    latest = {(r.episode_id, r.reviewer): r.decision for r in reviews}  # in id order: a reviewer's latest wins
    votes = [{"episode_id": e, "reviewer": who, "decision": d} for (e, who), d in latest.items() if d != WITHDRAWN]
    finals = resolve_all(reviews, adjs, overlap)
    status = [
        {"episode_id": f.episode_id, "reviewers": list(f.reviewers), "status": f.status, "final": f.decision,
         "first_wrong_step": f.first_wrong_step}
        for f in finals.values()
    ]
    con.register("votes", pa.Table.from_pylist(votes, _VOTE_SCHEMA))
    con.register("status", pa.Table.from_pylist(status, _STATUS_SCHEMA))
    return con


def warehouse_cursor(store: Store, round_ids: list[str] | None, queue_rows: str | None = None) -> duckdb.DuckDBPyConnection:
    """A cursor with the warehouse views over the recorded shards of ``round_ids``.

    Binding views reads every shard's footer; with many shards that is most of a page
    render, so the bound connection is kept per set of shard files (a new shard makes a
    new key) and each render gets its own cursor (DuckDB cursors are one per thread;
    temporary views registered on one are invisible to the others).

    With ``queue_rows`` (a SELECT over the views), its result is kept in the bound
    connection as the table ``queue_rows``, built once per set of shard files: joining a
    million episodes' Parquet rows on every render took most of the queue's time."""
    recorded = store.recorded(round_ids)
    key = (store.location, str(store.local_dir), store.state_url,  # the local dir: where its read copies are
           tuple((t, tuple(p)) for t, p in sorted(recorded.items())))
    with _BASES_LOCK:
        if key not in _BASES:
            # a bucket's shards: fetched once into the read cache
            _BASES[key] = (query.connect(store.readable(recorded)), threading.Lock())
            while len(_BASES) > _MAX_BASES:
                _BASES.popitem(last=False)  # not closed: a render may still use a cursor of it
        _BASES.move_to_end(key)
        base, building = _BASES[key]
    cursor = base.cursor()
    if queue_rows:
        with building:  # one render builds it; the others wait for it rather than build it again
            if not cursor.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'queue_rows'").fetchall()[0][0]:
                cursor.execute(f"CREATE TABLE queue_rows AS {queue_rows}").fetchall()  # the shared catalog's
    return cursor
