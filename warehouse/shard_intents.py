"""Shards about to be written: what orphan removal may delete.

Before a shard object is created, its path is recorded here (committed), and the row is
cleared in the transaction that records the shard. A run killed in between leaves a row
and perhaps an object; the next writer deletes that object and clears the row. A file
under ``shards/`` that neither the shards table nor this one names is not ours, and is
never deleted (an export someone wrote there, a file a symlink points at).
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, Session, SQLModel, col, select

from warehouse.timestamps import UtcDateTime, utcnow


class ShardIntent(SQLModel, table=True):
    """A shard object a writer is about to put (path relative to the data directory)."""

    __tablename__ = "shard_intents"
    path: str = Field(primary_key=True)
    declared_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


def declare(*, session: Session, paths: list[str]) -> None:
    """Record that ``paths`` are about to be written, and commit (before any of them is created)."""
    for path in dict.fromkeys(paths):
        session.merge(ShardIntent(path=path))
    session.commit()


def clear(*, session: Session, paths: list[str]) -> None:
    """Forget ``paths`` in the caller's transaction (the one that records them, or deletes them)."""
    if paths:
        session.execute(sa.delete(ShardIntent).where(col(ShardIntent.path).in_(list(paths))))


def pending(*, session: Session) -> set[str]:
    """Paths declared and not yet recorded nor cleared."""
    return set(session.exec(select(ShardIntent.path)))
