"""Immutable Parquet shards, written atomically into the data directory's object store.

A shard is serialised, put whole (a local directory: a temporary name, flushed and
renamed; S3: one atomic PUT), and only then recorded in the state database. A rerun
skips recorded shards and removes orphans: objects a writer declared before writing them
(:mod:`warehouse.shard_intents`) and never recorded, and its leftover temporary files.
Nothing else is ever deleted. A shard is never rewritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from warehouse import killpoints
from warehouse.objects import TMP_MARK, LocalObjects, ObjectStore, data_checksum, file_checksum
from warehouse.schemas import TABLES, to_table
from warehouse.state import Shard

SHARD_DIR = "shards"


@dataclass(frozen=True)
class ShardFile:
    table: str
    round_id: str
    key: str

    @property
    def relpath(self) -> str:
        return f"{SHARD_DIR}/{self.table}/{self.round_id}/{self.key}.parquet"


def _objects(where: ObjectStore | Path) -> ObjectStore:
    return LocalObjects(where) if isinstance(where, Path | str) else where


def write_shard(where: ObjectStore | Path, shard: ShardFile, records: list[BaseModel]) -> Shard:
    """Write records as one Parquet shard, atomically; return the row to record."""
    table = to_table(TABLES[shard.table], records)
    return write_arrow_shard(where, shard, table)


def write_arrow_shard(where: ObjectStore | Path, shard: ShardFile, table: pa.Table) -> Shard:
    """Like :func:`write_shard`, for a table already in Arrow form. ``where`` is the object store
    (or a local data directory)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    data = sink.getvalue().to_pybytes()
    _objects(where).put(shard.relpath, data)
    killpoints.reached("shard.renamed")  # in place, not yet recorded: an orphan if killed here
    return Shard(
        id=f"{shard.table}/{shard.round_id}/{shard.key}",
        round_id=shard.round_id,
        key=shard.key,
        table_name=shard.table,
        path=shard.relpath,
        rows=table.num_rows,
        checksum=data_checksum(data),
    )


class ArrowShardWriter:
    """One shard written a table at a time: each goes to a local staging file as it comes (a large
    shard is never held whole), and :meth:`finish` puts the file in place whole, as
    :func:`write_arrow_shard` puts its bytes. :meth:`discard` drops what was written."""

    def __init__(self, objects: ObjectStore, shard: ShardFile):
        self.objects, self.shard = objects, shard
        self.path = objects.staging(shard.relpath)
        self.rows = 0
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(self.path, TABLES[shard.table].schema,
                                                                 compression="zstd")

    def write(self, table: pa.Table) -> None:
        """Append ``table``'s rows (of the shard's table's schema)."""
        self._writer.write_table(table)
        self.rows += table.num_rows

    def finish(self) -> Shard:
        """Close the file and put it in place; return the row to record."""
        self._close()
        checksum = file_checksum(self.path)
        self.objects.put_file(self.shard.relpath, self.path)
        killpoints.reached("shard.renamed")  # in place, not yet recorded: an orphan if killed here
        shard = self.shard
        return Shard(id=f"{shard.table}/{shard.round_id}/{shard.key}", round_id=shard.round_id, key=shard.key,
                     table_name=shard.table, path=shard.relpath, rows=self.rows, checksum=checksum)

    def discard(self) -> None:
        self._close()
        Path(self.path).unlink(missing_ok=True)

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


_OUR_TEMPORARY = re.compile(r"\.parquet" + re.escape(TMP_MARK) + r"\d+$")  # what LocalObjects.put writes first


def is_our_temporary(relpath: str) -> bool:
    """True for the temporary name a local shard is written under before its rename."""
    return bool(_OUR_TEMPORARY.search(relpath.rsplit("/", 1)[-1]))


def remove_orphans(where: ObjectStore | Path, recorded: set[str], declared: set[str]) -> list[str]:
    """Delete the shard objects a killed writer left: those ``declared`` (about to be written, see
    :mod:`warehouse.shard_intents`) but not ``recorded``, and our temporaries. Any other file under
    ``shards/`` is not ours and stays. Returns what was removed."""
    objects = _objects(where)
    removed: list[str] = []
    for rel in objects.list(SHARD_DIR):
        if rel in recorded:
            continue
        if rel in declared or is_our_temporary(rel):
            objects.delete(rel)
            removed.append(rel)
    return removed
