"""The warehouse as one object: a data directory of shards plus the state database."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa
import sqlalchemy as sa
from pydantic import BaseModel
from sqlmodel import Session

from warehouse import killpoints, query, state
from warehouse.errors import StorageError
from warehouse.schemas import TABLES
from warehouse.shards import ShardFile, check_data_dir, remove_orphans, write_arrow_shard, write_shard


def default_state_url(data_dir: Path) -> str:
    return f"sqlite:///{(data_dir / 'state.db').resolve()}"


class Store:
    """Shards under ``data_dir`` and the state database at ``state_url``."""

    def __init__(self, data_dir: Path, state_url: str | None = None, *, create: bool = True) -> None:
        """``create=False`` is for commands that only read: a missing data directory (or
        its missing SQLite state database) is an error, and nothing is created."""
        data_dir = Path(data_dir)
        if data_dir.exists() and not data_dir.is_dir():
            raise StorageError(f"data directory {data_dir} exists and is not a directory")
        if not create and (not data_dir.is_dir() or (not state_url and not (data_dir / "state.db").exists())):
            raise StorageError(f"no flywheel data in {data_dir}: run 'flywheel run' first, or pass --data-dir")
        # An external state database is checked before anything is created on disk.
        self.engine: sa.Engine | None = state.make_engine(state_url) if state_url else None
        self.data_dir = check_data_dir(data_dir)
        self.state_url = state_url or default_state_url(self.data_dir)
        if self.engine is None:
            self.engine = state.make_engine(self.state_url)

    def session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    # --- writing -----------------------------------------------------------------

    @contextmanager
    def run_lock(self) -> Iterator[None]:
        """Hold the data directory's writer lock; a second writer gets a clear error.

        The lock is an OS file lock, so a killed process releases it at once.
        """
        path = self.data_dir / "run.lock"
        fh = path.open("a+")
        try:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise StorageError(f"another flywheel run is writing to {self.data_dir}") from exc
            fh.seek(0)
            fh.truncate()
            fh.write(str(os.getpid()))
            fh.flush()
            yield
        finally:
            fh.close()

    def clean_orphans(self) -> list[str]:
        with self.session() as s:
            recorded = state.all_shard_paths(session=s)
        return remove_orphans(self.data_dir, recorded)

    def done_keys(self, round_id: str, table: str) -> set[str]:
        with self.session() as s:
            return state.recorded_keys(session=s, round_id=round_id, table_name=table)

    def commit_unit(self, round_id: str, key: str, records: dict[str, list[BaseModel]]) -> None:
        """Write one unit of work (several tables) and record it all at once."""
        shards = [write_shard(self.data_dir, ShardFile(t, round_id, key), recs) for t, recs in records.items()]
        with self.session() as s:
            state.record_shards(session=s, shards=shards)
        killpoints.reached("unit.committed")

    def commit_tables(self, round_id: str, key: str, tables: dict[str, pa.Table]) -> None:
        """Like :meth:`commit_unit`, for tables already in Arrow form (bulk writers)."""
        shards = [write_arrow_shard(self.data_dir, ShardFile(t, round_id, key), tbl) for t, tbl in tables.items()]
        with self.session() as s:
            state.record_shards(session=s, shards=shards)
        killpoints.reached("unit.committed")

    # --- reading -----------------------------------------------------------------

    def duck(self, round_ids: list[str] | None = None) -> duckdb.DuckDBPyConnection:
        """A fresh in-memory DuckDB connection with views over recorded shards."""
        with self.session() as s:
            paths = {t: state.shard_paths(session=s, table_name=t, round_ids=round_ids) for t in TABLES}
        return query.connect(self.data_dir, paths)
