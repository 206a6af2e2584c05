"""Immutable Parquet shards, written atomically.

A shard is written to a temporary name, flushed, renamed into place, and only then
recorded in the state database. A rerun skips recorded shards and removes orphans
(files that were written but never recorded, and leftover temporary files).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from warehouse import killpoints
from warehouse.errors import StorageError
from warehouse.schemas import TABLES, to_table
from warehouse.state import Shard

SHARD_DIR = "shards"
_TMP_MARK = ".tmp-"


@dataclass(frozen=True)
class ShardFile:
    table: str
    round_id: str
    key: str

    @property
    def relpath(self) -> str:
        return f"{SHARD_DIR}/{self.table}/{self.round_id}/{self.key}.parquet"


def file_checksum(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_shard(data_dir: Path, shard: ShardFile, records: list[BaseModel]) -> Shard:
    """Write records as one Parquet file, atomically; return the row to record."""
    table = to_table(TABLES[shard.table], records)
    return write_arrow_shard(data_dir, shard, table)


def write_arrow_shard(data_dir: Path, shard: ShardFile, table: pa.Table) -> Shard:
    final = data_dir / shard.relpath
    tmp = final.with_name(f"{final.name}{_TMP_MARK}{os.getpid()}")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, tmp, compression="zstd")
        with tmp.open("rb") as fh:
            os.fsync(fh.fileno())
        killpoints.reached("shard.written")
        os.replace(tmp, final)
        killpoints.reached("shard.renamed")
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"cannot write shard {final}: {exc.strerror or exc}") from exc
    return Shard(
        id=f"{shard.table}/{shard.round_id}/{shard.key}",
        round_id=shard.round_id,
        key=shard.key,
        table_name=shard.table,
        path=shard.relpath,
        rows=table.num_rows,
        checksum=file_checksum(final),
    )


def remove_orphans(data_dir: Path, recorded: set[str]) -> list[str]:
    """Delete shard files the state database does not know; return what was removed."""
    root = data_dir / SHARD_DIR
    removed: list[str] = []
    if not root.exists():
        return removed
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        rel = path.relative_to(data_dir).as_posix()
        if rel in recorded:
            continue
        if path.suffix == ".parquet" or _TMP_MARK in path.name:
            path.unlink(missing_ok=True)
            removed.append(rel)
    return removed


def check_data_dir(data_dir: Path) -> Path:
    """Make sure the data directory is a usable directory; one clear error if not."""
    if data_dir.exists() and not data_dir.is_dir():
        raise StorageError(f"data directory {data_dir} exists and is not a directory")
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create data directory {data_dir}: {exc.strerror or exc}") from exc
    if not os.access(data_dir, os.W_OK):
        raise StorageError(f"data directory {data_dir} is not writable")
    return data_dir
