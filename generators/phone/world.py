"""The world of one episode: a virtual clock, a seeded generator, app tables, a log.

Pure and cheap: no I/O, no globals, so many worlds can live in one process. Tables
are plain dicts of rows keyed by a string primary key; the state hash and the diff
ignore each table's incidental fields (read flags, timestamps) so that looking at a
row never counts as changing it.

Rows are flat: a field holds a scalar, or a list or dict that tools replace whole and
never change in place. So copying a row is a shallow dict copy; deep copies made every
step a hundred times slower.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import compress
from operator import ne
from typing import Any

from warehouse.ids import canonical_json, digest, plain_json

DEFAULT_START = datetime(2026, 3, 2, 9, 0)  # a Monday morning
DEFAULT_TICK = timedelta(seconds=30)  # virtual time one tool call takes

# functions run when the clock passes ``World.next_due`` (the automation agent registers one)
DUE_HOOKS: list[Any] = []

EMPTY_TABLE_DIGEST = digest([])

row_json = plain_json  # canonical_json's text, faster for the plain data rows hold


Row = dict[str, Any]
Snapshot = dict[str, dict[str, Row]]


@dataclass(slots=True)  # slots: a reset copies every table of a world, and fewer objects make it and the GC cheaper
class Table:
    """One app table: a primary key, incidental fields, rows keyed by the key's value."""

    name: str
    key: str
    incidental: tuple[str, ...] = ()
    rows: dict[str, Row] = field(default_factory=dict)
    app: str = ""  # the app whose tools alone may change this table
    # list fields whose order means nothing (compared as multisets); every other list is ordered
    unordered: tuple[str, ...] = ()
    # copy on write: the rows this table shares with the world it was copied from (or with its copies), while
    # ``rows`` is not set; never changed, and None once the table has rows of its own
    _shared: dict[str, Row] | None = field(default=None, init=False, repr=False, compare=False)

    def insert(self, row: Row) -> Row:
        """Add a row (a copy); its key field must be a string not yet present."""
        key = row[self.key]
        if not isinstance(key, str):
            raise TypeError(f"{self.name}.{self.key} must be a string, got {key!r}")
        if key in self.rows:
            raise KeyError(f"{self.name}: duplicate key {key!r}")
        self.rows[key] = dict(row)
        return self.rows[key]

    def __getattr__(self, name: str) -> Any:
        # only reached when ``rows`` is not set yet: a copy-on-write table makes its own rows on first use
        shared = self._shared if name == "rows" else None
        if shared is not None:
            rows = self.rows = {k: dict(r) for k, r in shared.items()}
            self._shared = None
            return rows
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def shared_copy(self) -> Table:
        """A copy that shares this table's rows until either table uses them, then makes its own.

        The rows as they are now become shared and are never changed again: this table goes
        copy-on-write as well, so changing either table never reaches the other."""
        shared = self._shared
        if shared is None:
            # in this order, a copy taken in another thread meanwhile (a family's kept world is copied by
            # every rollout) finds the rows under one name or the other and shares them either way
            shared = self._shared = self.rows
            try:
                del self.rows
            except AttributeError:  # that other copy removed them first
                pass
        other = Table.__new__(Table)
        other.name, other.key, other.incidental, other.app, other.unordered = (
            self.name, self.key, self.incidental, self.app, self.unordered)
        other._shared = shared
        return other

    def shares(self, rows: dict[str, Row]) -> bool:
        """Whether this table still shares ``rows`` (a world's rows at a copy): it was not used since, so
        its rows are exactly those."""
        return self._shared is rows

    def get(self, key: str) -> Row | None:
        """The row with this key, to change it (a table still shared copies its rows first), or None (then
        nothing is copied)."""
        shared = self._shared
        if shared is not None and key not in shared:
            return None
        return self.rows.get(key)

    def peek(self, key: str) -> Row | None:
        """The row with this key, or None, only to read it: rows still shared are not copied for it (so never
        change what this returns)."""
        shared = self._shared
        return (shared if shared is not None else self.rows).get(key)

    def readable(self) -> dict[str, Row]:
        """The rows, for reading at once: rows still shared are not copied for it (so never change what
        this returns, nor keep it)."""
        shared = self._shared
        return shared if shared is not None else self.rows

    def essential(self, row: Row) -> Row:
        """The row without its incidental fields, unordered lists sorted: what the hash and diff look at
        (the row itself when the table has neither: read it, never change it)."""
        if not self.incidental and not self.unordered:
            return row
        out = _strip(row, self.incidental)
        for k in self.unordered:
            if isinstance(out.get(k), list):
                out[k] = sorted(out[k], key=canonical_json)
        return out


class MissingTableError(KeyError):
    """The world has no such table: the app it belongs to is not installed."""


class World:
    """Everything one episode can touch. Build it with a seed, then add tables."""

    def __init__(self, seed: int, start: datetime = DEFAULT_START, tick: timedelta = DEFAULT_TICK):
        self.seed = seed
        self.now = start
        self.tick = tick
        # the generator is made on first use: no tool draws from it, and copying its state
        # cost a rollout's reset more than copying the rows did
        self._rng: random.Random | None = None
        self._rng_state: Any = seed  # a seed, or a state of random.Random, until the generator exists
        self.tables: dict[str, Table] = {}
        self.events: list[dict[str, Any]] = []  # append-only log, never hashed
        self.counters: dict[str, int] = {}
        # the fault plan: [{"tool", "code", "times", "skip"?}]; a fault fires on the tool's
        # next ``times`` calls that pass its requirements, after ``skip`` calls went through
        self.faults: list[dict[str, Any]] = []
        self.next_due: datetime | None = None  # the earliest scheduled automation, if any
        self.wide = False  # set when something beyond one app's tables changed (a macro, an automation)

    @property
    def rng(self) -> random.Random:
        """The world's seeded generator (a copy continues its stream)."""
        if self._rng is None:
            self._rng = random.Random()
            if isinstance(self._rng_state, tuple):
                self._rng.setstate(self._rng_state)
            else:
                self._rng.seed(self._rng_state)
        return self._rng

    # -- tables -------------------------------------------------------------
    def add_table(self, name: str, key: str, incidental: tuple[str, ...] = (), app: str = "",
                  unordered: tuple[str, ...] = ()) -> Table:
        """Declare a table owned by ``app``; declaring the same table twice returns the existing one."""
        if name not in self.tables:
            self.tables[name] = Table(name=name, key=key, incidental=tuple(incidental), app=app,
                                      unordered=tuple(unordered))
        return self.tables[name]

    def app_tables(self, app: str) -> list[str]:
        """The names of the tables an app owns (only its tools change them)."""
        return [n for n, t in self.tables.items() if t.app == app]

    def table(self, name: str) -> Table:
        """The table by name (MissingTableError if the app was not installed in this world)."""
        try:
            return self.tables[name]
        except KeyError:
            raise MissingTableError(name) from None

    def next_id(self, prefix: str) -> str:
        """A fresh deterministic id such as ``c-0042`` for rows created by tools."""
        self.counters[prefix] = self.counters.get(prefix, 0) + 1
        return f"{prefix}-{self.counters[prefix]:04d}"

    # -- clock and log ------------------------------------------------------
    def advance(self, steps: int = 1) -> datetime:
        """Move the virtual clock forward by ``steps`` ticks and return the new time."""
        self.now = self.now + (self.tick if steps == 1 else self.tick * steps)
        if self.next_due is not None and self.now >= self.next_due:
            for hook in DUE_HOOKS:
                hook(self)
        return self.now

    def log(self, kind: str, **data: Any) -> None:
        """Append an event to the log, stamped with the virtual time."""
        self.events.append({"at": self.now.isoformat(), "kind": kind, **data})

    # -- state --------------------------------------------------------------
    def table_digest(self, name: str) -> str:
        """Digest of one table's essential rows, sorted by key."""
        t = self.tables[name]
        rows = t.readable()  # a table still shared is read where it is, not copied
        if not rows:  # most worlds leave most service tables empty
            return EMPTY_TABLE_DIGEST
        return digest(row_json([t.essential(rows[k]) for k in sorted(rows)]))

    def state_hash(self, table_digests: dict[str, str] | None = None) -> str:
        """Canonical digest of all tables, rows sorted by key, incidental fields out.

        ``table_digests`` lets a caller that keeps table digests up to date pass them instead
        of recomputing them all (the environment keeps the whole hash incrementally, see
        :mod:`generators.phone.digests`).
        """
        digests = table_digests if table_digests is not None else {n: self.table_digest(n) for n in self.tables}
        return digest(sorted(digests.items()))

    def snapshot(self, names: list[str] | None = None) -> Snapshot:
        """A copy of the rows of all tables (or of ``names``): ``{table: {key: row}}``.

        Rows are copied shallowly, see the module note.
        """
        tables = self.tables if names is None else {n: self.tables[n] for n in names}
        return {name: {k: dict(r) for k, r in t.rows.items()} for name, t in tables.items()}

    def view(self) -> Snapshot:
        """The live rows of every table, shaped as a snapshot but not copied: for reading at once
        (a diff to score), never for keeping while the world changes."""
        return {name: t.rows for name, t in self.tables.items()}

    def incidental_fields(self) -> dict[str, tuple[str, ...]]:
        """Per table, the fields a diff should ignore."""
        return {name: t.incidental for name, t in self.tables.items()}

    def diff(self, before: Snapshot, after: Snapshot | None = None) -> list[dict[str, Any]]:
        """Row changes from ``before`` to ``after`` (default: now), by key."""
        return diff_snapshots(before, self.snapshot() if after is None else after, self.incidental_fields(),
                              {n: t for n, t in self.tables.items() if t.unordered})

    def copy(self) -> World:
        """An independent copy (rows, clock, generator state, counters, log).

        Tables are copied on write (see :meth:`Table.shared_copy`): a row dict taken from a table's
        ``rows`` before the copy must not be changed after it."""
        other = World.__new__(World)
        other.seed, other.now, other.tick = self.seed, self.now, self.tick
        other._rng = None  # states are immutable tuples: an unused generator's is shared, not copied
        other._rng_state = self._rng.getstate() if self._rng is not None else self._rng_state
        # copy on write: a table's rows are copied when the copy (or this world) first uses them, and an
        # episode uses a few of its world's tables
        other.tables = {n: t.shared_copy() for n, t in self.tables.items()}
        other.events = list(self.events)  # entries are never mutated, a shallow copy is enough
        other.counters = dict(self.counters)
        other.faults = [dict(f) for f in self.faults]
        other.next_due, other.wide = self.next_due, self.wide
        return other

    def take_fault(self, tool: str) -> dict[str, Any] | None:
        """The planned fault for this call of ``tool`` (used up as it fires), or None."""
        for f in self.faults:
            if f["tool"] != tool or f.get("times", 1) <= 0:
                continue
            if f.get("skip", 0) > 0:  # calls that pass before the fault fires
                f["skip"] -= 1
                return None
            f["times"] = f.get("times", 1) - 1
            return f
        return None


def diff_snapshots(
    before: Snapshot, after: Snapshot, incidental: dict[str, tuple[str, ...]] | None = None,
    with_unordered: dict[str, Table] | None = None,
) -> list[dict[str, Any]]:
    """Diff two snapshots by key: ``[{"table","key","op","before","after"}]``, sorted.

    ``op`` is added, updated or removed; a row whose only changes are in incidental
    fields (or in the order of an unordered list of a table in ``with_unordered``) is
    not reported.
    """
    incidental = incidental or {}
    changes: list[dict[str, Any]] = []
    for name in sorted(set(before) | set(after)):
        changes += diff_table(name, before.get(name, {}), after.get(name, {}), incidental.get(name, ()),
                              (with_unordered or {}).get(name))
    return changes


def diff_table(name: str, old: dict[str, Row], new: dict[str, Row], skip: tuple[str, ...] = (),
               table: Table | None = None) -> list[dict[str, Any]]:
    """One table's part of :func:`diff_snapshots`, sorted by key (``skip``: its incidental fields;
    ``table``: given when its rows must compare through :meth:`Table.essential`)."""
    if old is new or old == new:  # most tables do not change in a step: one C-level comparison decides
        return []
    keys = old.keys() if old.keys() == new.keys() else old.keys() | new.keys()
    get_old, get_new = old.get, new.get
    # the rows that differ at all, found in C (a table may hold a hundred), then each one's change if any
    moved = compress(keys, map(ne, map(get_old, keys), map(get_new, keys)))
    hits = [c for c in (row_change(name, k, get_old(k), get_new(k), skip, table) for k in moved) if c is not None]
    return sorted(hits, key=_by_key)


def row_change(name: str, key: str, a: Row | None, b: Row | None, skip: tuple[str, ...] = (),
               table: Table | None = None) -> dict[str, Any] | None:
    """Row ``key``'s change from ``a`` to ``b`` (None: no such row) as :func:`diff_table` reports it, or None:
    the same row, or only incidental fields (or the order of an unordered list) changed."""
    if a == b:
        return None
    if a is None:
        return {"table": name, "key": key, "op": "added", "before": None, "after": b}
    if b is None:
        return {"table": name, "key": key, "op": "removed", "before": a, "after": None}
    if table is not None:
        if table.essential(a) == table.essential(b):
            return None
    elif skip and _strip(a, skip) == _strip(b, skip):
        return None
    return {"table": name, "key": key, "op": "updated", "before": a, "after": b}


def _by_key(change: dict[str, Any]) -> str:
    return change["key"]


def _strip(row: Row, skip: tuple[str, ...]) -> Row:
    """The row without the fields ``skip`` (a copy; a table has one or two incidental fields, so copying
    the row and dropping them is several times faster than a comprehension over every field)."""
    out = row.copy()
    for k in skip:
        out.pop(k, None)
    return out
