"""Timestamps of the state database: always timezone-aware, in UTC, on every backend.

PostgreSQL keeps a ``timestamptz``; SQLite keeps text without an offset and hands back a naive
datetime. :class:`UtcDateTime` stores every moment in UTC and reads a naive one back as UTC, so
what a table returns compares with ``datetime.now(UTC)`` and prints with its offset
(``2026-12-03T12:00:00+00:00``) whichever database holds it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive one is taken to be UTC already."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class UtcDateTime(sa.types.TypeDecorator):
    """A timezone-aware UTC datetime column (see the module's docstring)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return None if value is None else as_utc(value)

    def process_result_value(self, value, dialect):
        return None if value is None else as_utc(value)
