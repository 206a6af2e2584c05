"""The world's state hash kept current from the rows that changed, equal to a full recomputation.

:meth:`World.state_hash` is the canonical digest: the digest of the sorted ``[table, table
digest]`` pairs, each table digest the digest of its essential rows sorted by key. Both are
a hash of canonical JSON, and the canonical JSON of a list is its items' canonical JSON
joined by commas inside brackets. So this keeps each row's JSON, each pair's JSON and the
joined texts, re-encodes only the rows a step changed, and hashes the same bytes a full
recomputation would (tests/test_phone_incremental.py compares the two after every step).
"""

from __future__ import annotations

import hashlib
from typing import Any

from generators.phone.world import EMPTY_TABLE_DIGEST, Row, Snapshot, Table, row_json

# per table, its rows' canonical JSON by key
RowTexts = dict[str, dict[str, str]]


def _hash(text: str) -> str:
    """What :func:`warehouse.ids.digest` gives for a value whose canonical JSON is ``text``."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=32).hexdigest()[:16]


def row_text(table: Table, row: Row) -> str:
    """The canonical JSON of a row's essential fields (one item of its table's digest)."""
    return row_json(table.essential(row))


def table_texts(table: Table, rows: dict[str, Row]) -> dict[str, str]:
    """Every row's canonical JSON, by key."""
    return {k: row_text(table, r) for k, r in rows.items()}


def digest_of_texts(texts: dict[str, str]) -> str:
    """A table's digest from its rows' JSON: equal to ``digest([essential rows sorted by key])``."""
    if not texts:
        return EMPTY_TABLE_DIGEST
    return _hash("[" + ",".join([texts[k] for k in sorted(texts)]) + "]")


class Baseline:
    """What every episode started from one initial world shares: its snapshot (``initial``), table
    digests and state hash, computed once. Nothing here changes in place, except what fills lazily:
    a table's row texts and sorted keys the first time an episode changes the table, and which
    tables each app owns."""

    def __init__(self, tables: dict[str, Table], initial: Snapshot):
        self.initial = initial
        # the row texts are not kept from here: most tables never change, and 256 cached worlds a family add up
        self.digests = {n: digest_of_texts(table_texts(t, initial[n])) for n, t in tables.items()}
        self.pairs = {n: row_json([n, d]) for n, d in self.digests.items()}
        self.names = sorted(self.pairs)  # the tables in the order the state hash lists them
        self.hash = _hash("[" + ",".join([self.pairs[n] for n in self.names]) + "]")
        self.texts: dict[str, tuple[dict[str, str], list[str]]] = {}  # row texts by key, and the keys sorted
        self.apps: dict[str | None, list[str]] = {}  # the tables of each app (filled as the environment asks)
        self.kept: dict[str, Any] = {}  # what else the episodes derive once (the verifier's plan)


class StateDigest:
    """The state hash of one live world that starts at ``baseline``, updated per changed table and row.

    The set of tables is fixed once the world is built (apps are installed before an episode).
    """

    def __init__(self, tables: dict[str, Table], baseline: Baseline):
        self.tables, self.baseline = tables, baseline
        self.digests = dict(baseline.digests)
        self._pairs = dict(baseline.pairs)
        self._hash: str | None = baseline.hash
        self.texts: RowTexts = {}  # this episode's own row texts of the tables it changed
        self.order: dict[str, list[str]] = {}  # their keys, sorted (a list never changed in place)

    def rows_changed(self, name: str, keys: Any) -> None:
        """Rows ``keys`` of table ``name`` may have changed since the last call: re-encode only them.

        Every change of a table's rows must be reported here (or the hash goes stale); reporting a row
        that did not change costs a re-encoding and nothing else."""
        texts = self.texts.get(name)
        table = self.tables[name]
        if texts is None:  # the table's first change: start from the initial world's texts
            shared = self.baseline.texts.get(name)
            if shared is None:  # one assignment of both: episodes in other threads may share the baseline
                made = table_texts(table, self.baseline.initial[name])
                shared = self.baseline.texts.setdefault(name, (made, sorted(made)))
            texts = self.texts[name] = dict(shared[0])
            self.order[name] = shared[1]
        rows, reshaped = table.rows, False
        for key in keys:
            row = rows.get(key)
            if row is None:
                reshaped |= texts.pop(key, None) is not None
            else:
                reshaped |= key not in texts
                texts[key] = row_text(table, row)
        if reshaped:  # a row added or removed: the order by key is made again
            self.order[name] = sorted(texts)
        new = _hash("[" + ",".join([texts[k] for k in self.order[name]]) + "]") if texts else EMPTY_TABLE_DIGEST
        if new != self.digests[name]:
            self.digests[name] = new
            self._pairs[name] = row_json([name, new])
            self._hash = None

    def state_hash(self) -> str:
        """The canonical state hash (what :meth:`World.state_hash` recomputes from scratch)."""
        if self._hash is None:
            pairs = self._pairs
            self._hash = _hash("[" + ",".join([pairs[n] for n in self.baseline.names]) + "]")
        return self._hash
