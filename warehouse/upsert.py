"""The INSERT that can say ON CONFLICT, in the state database's own dialect."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite


def insert_for(dialect: str) -> Any:
    """``insert`` of PostgreSQL (``dialect == "postgresql"``) or SQLite: both take ``on_conflict_do_*``."""
    return postgresql.insert if dialect == "postgresql" else sqlite.insert
