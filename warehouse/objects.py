"""Where the shards live: a small object-storage interface, and its local-directory implementation.

The warehouse needs five things of its storage: say whether it is usable, put one whole
object (atomically: a reader sees all of it or nothing), list and delete objects under a
prefix (orphan removal), and hand DuckDB readable local files for recorded objects. A
local directory does each with the file system (temporary name, fsync, rename); an
``s3://bucket/prefix`` URL with S3's own atomic PUT (see :mod:`warehouse.s3`).
Paths are relative and use ``/`` ("shards/episodes/r0001/s00000.parquet").
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Protocol

from warehouse import killpoints
from warehouse.errors import StorageError

TMP_MARK = ".tmp-"  # in the name of a local object still being written


def data_checksum(data: bytes) -> str:
    """The checksum a shard is recorded with (BLAKE2b, 128 bits, hex)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_checksum(path: Path, block: int = 1 << 20) -> str:
    """:func:`data_checksum` of a file's bytes, read a block at a time."""
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while data := fh.read(block):
            digest.update(data)
    return digest.hexdigest()


def is_object_url(data_dir: Path | str) -> bool:
    """True for an ``s3://`` data directory (settings give it as a str, a local one as a Path)."""
    return isinstance(data_dir, str) and data_dir.startswith("s3://")


class ObjectStore(Protocol):
    """The objects of one data directory (a local directory, or a bucket and prefix)."""

    location: str  # what to show a user: an absolute path, or s3://bucket/prefix
    is_local: bool

    def check(self) -> None:
        """Raise one-line StorageError if the storage cannot be used (creating nothing, writing nothing)."""

    def make(self) -> None:
        """Create what a writer needs (a local directory; nothing in a bucket); StorageError if it cannot."""

    def exists(self) -> bool:
        """True when the data directory is there (a local directory; a reachable bucket)."""

    def put(self, relpath: str, data: bytes) -> None:
        """Store ``data`` as the object ``relpath`` whole or not at all. Passes the kill point
        ``shard.written`` once the bytes are written and before the object is in place."""

    def staging(self, relpath: str) -> Path:
        """A local file to write the object ``relpath``'s bytes into before :meth:`put_file` (a large object
        written in parts); a local directory's is the object's temporary name, which orphan removal knows."""

    def put_file(self, relpath: str, path: Path) -> None:
        """Like :meth:`put`, for the bytes of the local file ``path`` (from :meth:`staging`), which is
        gone afterwards (moved into place, or uploaded and removed)."""

    def list(self, prefix: str) -> list[str]:
        """Every object under ``prefix`` (relative paths), including unfinished local temporaries; a local
        directory lists its regular files and never follows a symlink."""

    def delete(self, relpath: str) -> None:
        """Remove one object (no error if it is gone already)."""

    def local_files(self, objects: list[tuple[str, str]]) -> list[str]:
        """Local files DuckDB can read for ``(relpath, checksum)`` pairs, in the same order."""


class LocalObjects:
    """A data directory on this machine's file system."""

    is_local = True

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.location = str(self.root.resolve())

    def check(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise StorageError(f"data directory {self.root} exists and is not a directory")

    def make(self) -> None:
        root = self.root
        self.check()
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create data directory {root}: {exc.strerror or exc}") from exc
        if not os.access(root, os.W_OK):
            raise StorageError(f"data directory {root} is not writable")

    def exists(self) -> bool:
        return self.root.is_dir()

    def put(self, relpath: str, data: bytes) -> None:
        final = self.root / relpath
        tmp = final.with_name(f"{final.name}{TMP_MARK}{os.getpid()}")
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            killpoints.reached("shard.written")
            os.replace(tmp, final)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StorageError(f"cannot write shard {final}: {exc.strerror or exc}") from exc

    def staging(self, relpath: str) -> Path:
        final = self.root / relpath
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot write shard {final}: {exc.strerror or exc}") from exc
        return final.with_name(f"{final.name}{TMP_MARK}{os.getpid()}")

    def put_file(self, relpath: str, path: Path) -> None:
        final = self.root / relpath
        try:
            with open(path, "rb+") as fh:
                os.fsync(fh.fileno())
            killpoints.reached("shard.written")
            os.replace(path, final)
        except OSError as exc:
            Path(path).unlink(missing_ok=True)
            raise StorageError(f"cannot write shard {final}: {exc.strerror or exc}") from exc

    def list(self, prefix: str) -> list[str]:
        """Regular files under ``prefix``, never through a symlink (one may point out of the data directory)."""
        base = self.root / prefix
        if not self._within(prefix) or not base.is_dir():
            return []
        found = []
        for folder, _, names in os.walk(base, followlinks=False):
            for name in names:
                path = Path(folder) / name
                if path.is_file() and not path.is_symlink():
                    found.append(path.relative_to(self.root).as_posix())
        return sorted(found)

    def delete(self, relpath: str) -> None:
        """Remove a regular file of the data directory; a path that is, or passes through, a symlink is
        left alone (what it points at is not ours)."""
        if self._within(relpath):
            (self.root / relpath).unlink(missing_ok=True)

    def _within(self, relpath: str) -> bool:
        """True when no part of ``relpath`` (itself included) is a symlink or ``..``."""
        parts = Path(relpath).parts
        if not parts or ".." in parts or Path(relpath).is_absolute():
            return False
        return not any((self.root.joinpath(*parts[:i])).is_symlink() for i in range(1, len(parts) + 1))

    def local_files(self, objects: list[tuple[str, str]]) -> list[str]:
        return [str(self.root / relpath) for relpath, _ in objects]
