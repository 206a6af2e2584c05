"""The warehouse as one object: the data directory's shards plus the state database."""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import sqlalchemy as sa
from pydantic import BaseModel
from sqlmodel import Session

from warehouse import db_faults, killpoints, query, shard_intents, state
from warehouse.db_faults import retried
from warehouse.errors import ConfigError, StateError, StorageError, first_line
from warehouse.objects import LocalObjects, ObjectStore, is_object_url
from warehouse.s3 import S3Objects
from warehouse.schemas import TABLES
from warehouse.settings import S3Settings
from warehouse.shards import ArrowShardWriter, ShardFile, remove_orphans, write_arrow_shard, write_shard

if TYPE_CHECKING:
    from warehouse.settings import Settings


def default_state_url(data_dir: Path) -> str:
    return f"sqlite:///{(data_dir / 'state.db').resolve()}"


def open_objects(data_dir: Path | str, *, s3: S3Settings | None = None, local_dir: Path | None = None) -> ObjectStore:
    """The object store of a data directory: S3 for ``s3://bucket/prefix``, else the local directory.
    ``local_dir`` holds an S3 store's read cache (see Settings.local_root)."""
    if is_object_url(data_dir):
        if local_dir is None:
            raise StorageError(f"{data_dir} needs a local directory for its read cache (set local_dir)")
        return S3Objects(str(data_dir), s3 or S3Settings(), Path(local_dir) / "s3-cache")
    return LocalObjects(Path(data_dir))


class Store:
    """Shards in ``data_dir`` (a local directory or ``s3://bucket/prefix``) and the state
    database at ``state_url``.

    An ``s3://`` data directory needs ``s3`` (endpoint and keys), ``state_url`` (a SQLite
    file cannot live in a bucket) and ``local_dir`` (its read cache, and the writer lock
    with SQLite state); :meth:`from_settings` passes them all."""

    def __init__(self, data_dir: Path | str, state_url: str | None = None, *, create: bool = True,
                 s3: S3Settings | None = None, local_dir: Path | None = None,
                 reconnect_s: float = db_faults.RECONNECT_S) -> None:
        """``create=False`` is for commands that only read: a missing data directory (or
        its missing SQLite state database) is an error, and nothing is created. ``reconnect_s``:
        how long a state database over the network that went away is waited for (see
        :mod:`warehouse.db_faults`)."""
        self.reconnect_s = reconnect_s
        remote = is_object_url(data_dir)
        if remote and not state_url:
            raise ConfigError(f"the data directory {data_dir} is in object storage, where a SQLite file cannot live: "
                              "set state_url (FLYWHEEL_STATE_URL or --state-url), e.g. postgresql+psycopg://HOST/DB")
        data_dir = data_dir if remote else Path(data_dir)
        self.local_dir = Path(local_dir) if local_dir is not None else (None if remote else data_dir)
        self.objects: ObjectStore = open_objects(data_dir, s3=s3, local_dir=self.local_dir)
        self.objects.check()  # a file where the directory should be; no bucket, bad keys: before anything is made
        if not create and not remote and (not self.objects.exists()
                                          or (not state_url and not (data_dir / "state.db").exists())):
            raise StorageError(f"no flywheel data in {data_dir}: run 'flywheel run' first, or pass --data-dir")
        # An external state database is checked before anything is created on disk.
        self.engine: sa.Engine | None = state.make_sql_engine(state_url, reconnect_s) if state_url else None
        if create:
            self.objects.make()
        self.data_dir = data_dir
        self.state_url = state_url or default_state_url(data_dir)
        if self.engine is None:
            self.engine = state.make_sql_engine(self.state_url, reconnect_s)

    @classmethod
    def from_settings(cls, settings: Settings, *, create: bool = True) -> Store:
        """The store ``settings`` describe (data directory, state database, S3 and local directory)."""
        return cls(settings.data_dir, settings.state_url, create=create, s3=settings.s3,
                   local_dir=settings.local_root(), reconnect_s=settings.state_reconnect_s)

    @property
    def location(self) -> str:
        """The data directory as a user should see it: an absolute path, or s3://bucket/prefix."""
        return self.objects.location

    def holds(self, path: Path) -> bool:
        """True when ``path`` (followed through symlinks) is the data directory, its local directory,
        or inside either: the warehouse's own files, where nothing else may be written."""
        roots = [Path(d) for d in (self.data_dir if self.objects.is_local else None, self.local_dir) if d is not None]
        where = Path(os.path.realpath(path))
        return any(where == r or r in where.parents for r in (Path(os.path.realpath(d)) for d in roots))

    def session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """A session for one read that needs no transaction: each statement commits by itself, so a read
        is its statements and nothing more (no BEGIN and ROLLBACK, each a round trip to a database server)."""
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn, Session(conn) as s:
            yield s

    # --- writing -----------------------------------------------------------------

    @contextmanager
    def run_lock(self) -> Iterator[None]:
        """Hold the data directory's writer lock; a second writer gets a clear error.

        A local data directory: an OS file lock in it. Object storage with PostgreSQL state: a
        PostgreSQL advisory lock, which every machine's writer takes; with SQLite state: a file
        lock in the local directory. A killed process releases either at once."""
        if not self.objects.is_local and self.engine.dialect.name == "postgresql":
            with self._advisory_lock():
                yield
            return
        lock_dir = self.data_dir if self.objects.is_local else Path(self.local_dir)
        with self._file_lock(lock_dir / "run.lock"):
            yield

    def _busy(self) -> StorageError:
        return StorageError(f"another flywheel run is writing to {self.location}")

    @contextmanager
    def _file_lock(self, path: Path) -> Iterator[None]:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = path.open("a+")
        except OSError as exc:
            raise StorageError(f"cannot open the writer lock {path}: {exc.strerror or exc}") from exc
        try:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise self._busy() from exc
            fh.seek(0)
            fh.truncate()
            fh.write(str(os.getpid()))
            fh.flush()
            yield
        finally:
            fh.close()

    @contextmanager
    def _advisory_lock(self) -> Iterator[None]:
        # one 64-bit lock id per data directory; held by this connection until it closes
        key = int.from_bytes(hashlib.blake2b(f"flywheel-writer:{self.location}".encode(), digest_size=8).digest(),
                             "big", signed=True)
        try:
            conn = self.engine.connect()
            got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()
            conn.commit()  # no transaction left open while the round runs
        except sa.exc.SQLAlchemyError as exc:
            raise StateError(f"cannot take the writer lock in the state database: {first_line(exc)}") from exc
        try:
            if not got:
                raise self._busy()
            yield
        finally:
            try:
                if got:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                    conn.commit()
            except sa.exc.SQLAlchemyError:
                pass  # the lock goes with the connection
            finally:
                conn.close()

    @retried
    def clean_orphans(self) -> list[str]:
        """Delete what a killed writer left under ``shards/`` (see :func:`warehouse.shards.remove_orphans`)
        and forget its intents; call under the writer lock."""
        with self.session() as s:
            recorded = state.all_shard_paths(session=s)
            declared = shard_intents.pending(session=s)
        removed = remove_orphans(self.objects, recorded, declared)
        with self.session() as s:
            shard_intents.clear(session=s, paths=sorted(declared))
            s.commit()
        return removed

    @retried
    def done_keys(self, round_id: str, table: str) -> set[str]:
        with self.session() as s:
            return state.recorded_keys(session=s, round_id=round_id, table_name=table)

    def _declare(self, shards: list[ShardFile]) -> None:
        with self.session() as s:
            shard_intents.declare(session=s, paths=[shard.relpath for shard in shards])

    @retried
    def write_shard(self, shard: ShardFile, records: list[BaseModel]) -> state.Shard:
        """Write one shard (not yet recorded: the caller records it, alone or with others)."""
        self._declare([shard])
        return write_shard(self.objects, shard, records)

    @retried
    def commit_unit(self, round_id: str, key: str, records: dict[str, list[BaseModel]]) -> None:
        """Write one unit of work (several tables) and record it all at once."""
        files = {t: ShardFile(t, round_id, key) for t in records}
        self._declare(list(files.values()))
        shards = [write_shard(self.objects, files[t], recs) for t, recs in records.items()]
        with self.session() as s:
            state.record_shards(session=s, shards=shards)
        killpoints.reached("unit.committed")

    @retried
    def commit_tables(self, round_id: str, key: str, tables: dict[str, pa.Table]) -> None:
        """Like :meth:`commit_unit`, for tables already in Arrow form (bulk writers)."""
        files = {t: ShardFile(t, round_id, key) for t in tables}
        self._declare(list(files.values()))
        shards = [write_arrow_shard(self.objects, files[t], tbl) for t, tbl in tables.items()]
        with self.session() as s:
            state.record_shards(session=s, shards=shards)
        killpoints.reached("unit.committed")

    @contextmanager
    def streaming_shard(self, round_id: str, key: str, table: str) -> Iterator[ArrowShardWriter]:
        """A shard of ``table`` written a table of rows at a time (``.write``), put in place and recorded
        when the block ends without error (nothing of it is left when it raises): for a unit too
        large to hold in memory at once (a round's marks)."""
        shard = ShardFile(table, round_id, key)
        self._declare_retried([shard])
        writer = ArrowShardWriter(self.objects, shard)
        try:
            yield writer
        except BaseException:
            writer.discard()
            raise
        self._record([writer.finish()])
        killpoints.reached("unit.committed")

    @retried
    def _declare_retried(self, shards: list[ShardFile]) -> None:
        self._declare(shards)

    @retried
    def _record(self, shards: list[state.Shard]) -> None:
        with self.session() as s:
            state.record_shards(session=s, shards=shards)

    # --- reading -----------------------------------------------------------------

    @retried
    def recorded(self, round_ids: list[str] | None = None) -> dict[str, list[tuple[str, str]]]:
        """Per table, the recorded shards ``(path, checksum)`` of ``round_ids`` (None: every round)."""
        with self.reading() as s:
            return state.shard_files_by_table(session=s, table_names=list(TABLES), round_ids=round_ids)

    def readable(self, recorded: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
        """Local files for recorded shards (from the bucket's read cache, fetched if missing)."""
        everything = [item for items in recorded.values() for item in items]
        files = iter(self.objects.local_files(everything))
        return {t: [next(files) for _ in items] for t, items in recorded.items()}

    def duck(self, round_ids: list[str] | None = None) -> duckdb.DuckDBPyConnection:
        """A fresh in-memory DuckDB connection with views over recorded shards."""
        return query.connect(self.readable(self.recorded(round_ids)))

    def spill_dir(self) -> Path:
        """Where DuckDB may spill a large sort (always on this machine)."""
        return Path(self.local_dir) / ".duckdb-spill"

