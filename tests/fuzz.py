"""Shared pieces of the property-based bad-input tests: hypothesis settings, hostile values,
and the checks every surface must pass (one clear line, nothing written).

Examples per property are few by default, so the suite stays fast; ``FLYWHEEL_LONG_TESTS=1``
runs many more, with a fresh random seed each time. Failing examples hypothesis finds are kept
as ``@example`` cases beside the property they broke.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

LONG = os.environ.get("FLYWHEEL_LONG_TESTS") == "1"

# derandomized by default: CI sees the same examples each run; the long variant explores
FUZZ = settings(
    max_examples=400 if LONG else 30,
    deadline=None,
    derandomize=not LONG,
    database=None,  # no .hypothesis folder in the working tree
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
FEW = settings(FUZZ, max_examples=120 if LONG else 8)  # for properties that run a command per example

# Values that have broken parsers elsewhere: empty, huge, negative, non-finite, control
# characters (NUL breaks PostgreSQL text), paths that climb, SQL, markup, wrong types.
HOSTILE_STRINGS = [
    "", " ", "\x00", "a\x00b", "\n", "line\nbreak", "\r\n", "\t", "\u202e", "\ufeff", "é", "🙂", "x" * 10_000,
    "../../etc/passwd", "/etc/passwd", "..", ".", "~", "C:\\Windows", "a/b", "%2e%2e%2f",
    "' OR '1'='1", "'; DROP TABLE reviews; --", '" OR ""="', "r0001' --", "$1", "?", "%s", "{0}", "${HOME}",
    "[red]x[/red]", "<script>alert(1)</script>", "nan", "NaN", "inf", "-inf", "1e309", "-1", "0", "-0",
    "99999999999999999999999", "0x10", "1_000", "true", "null", "None", "[]", "{}", "{", "[", '"',
]
HOSTILE_NUMBERS = [0, -1, -(2**31), 2**31, 2**63, 2**64, -(2**63) - 1, 10**30, float("nan"), float("inf"),
                   float("-inf"), 1e308, -0.0, 0.5, 1.5, True, False]

hostile_text = st.one_of(st.sampled_from(HOSTILE_STRINGS), st.text(max_size=40))
hostile_scalar = st.one_of(
    st.none(), st.booleans(), st.sampled_from(HOSTILE_NUMBERS), st.integers(), st.floats(), hostile_text,
)


def json_values(keys: list[str], max_leaves: int = 20):
    """JSON-like values whose objects use ``keys`` (the format's own) and a few others."""
    key = st.one_of(st.sampled_from(keys), hostile_text)
    return st.recursive(
        hostile_scalar,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(key, inner, max_size=6)),
        max_leaves=max_leaves,
    )


# Files that change without data changing: SQLite's database, journals and setup lock (compared by their
# rows instead), the writer lock (holds a pid), Prefect's home.
_NOT_DATA = ("state.db", "state.db-wal", "state.db-shm", "state.db-journal", "state.db.lock", "run.lock")
# Rows a refused command may write: a failed sign-in is counted (that is the throttle).
_COUNTERS = ("signin_failures", "gates")  # bookkeeping of sign-ins and saves, not data


def tree_digest(root: Path) -> str:
    """A digest of what ``root`` holds ("absent" if it does not exist): every file's name and
    content, and every row of a SQLite state database in it (but the sign-in failure counts)."""
    if not root.exists():
        return "absent"
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "prefect" not in p.parts):
        if path.name == "state.db":
            h.update(_rows_digest(path).encode())
        elif path.name not in _NOT_DATA:
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _rows_digest(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1")]
        rows = {t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"'))) for t in tables if t not in _COUNTERS}
    finally:
        con.close()
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def assert_one_clear_line(text: str, *, where: str = "") -> None:
    """What a user sees for bad input: one line, ``error: ...``, no traceback, no internal error."""
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, f"{where}: expected one line of error, got:\n{text[:3000]}"
    assert lines[0].startswith("error: "), f"{where}: {lines[0][:500]}"
    assert "internal error" not in lines[0], f"{where}: a user's mistake reported as a bug: {lines[0][:500]}"
    assert "Traceback" not in text


def assert_clear_error(exc: BaseException) -> None:
    """A typed error for a function: a FlywheelError whose message is one line."""
    from warehouse.errors import FlywheelError

    assert isinstance(exc, FlywheelError), f"{type(exc).__name__}: {exc}"
    message = str(exc)
    assert message and "\n" not in message, repr(message[:500])
