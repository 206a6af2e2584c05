"""Writing an export: rows streamed into one file per split, then a manifest; all or nothing.

An export of NAME is the directory ``OUT/NAME``: a symbolic link to a hidden version directory
``OUT/.NAME.export-PID-TOKEN`` that holds its files and, written last, its manifest. A new export
writes a fresh version directory whole (every file synced), then points the link at it with one
atomic rename (a new link renamed over the old: POSIX renames one path at a time, so the export
is one path), then removes the version the link pointed at before. A reader that goes through
``OUT/NAME`` sees the old export or the new one, never a mix, whenever the writer is killed; a
manifest vouches for exactly the files beside it. The next export of the name removes the
versions no link points at (only ours: hidden names of this name with our mark, of a process
that is gone; never through a symlink), and the files an export of the name wrote straight
into ``OUT`` before exports were directories.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from warehouse import killpoints
from warehouse.errors import InputError, one_line

PARQUET_BATCH = 2048
_writing: set[Path] = set()  # version directories this process is writing now (not stale, though ours)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class ExportResult:
    manifest_path: Path
    files: dict[str, dict[str, Any]]
    rows: int

    @property
    def paths(self) -> list[Path]:
        return [self.manifest_path.parent / name for name in sorted(self.files)]


@dataclass
class _Sink:
    path: Path
    rows: int = 0
    fh: Any = None
    writer: pq.ParquetWriter | None = None
    buffer: list[dict[str, Any]] = field(default_factory=list)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sync(path: Path) -> None:
    """Flush ``path`` (a file, or a directory's entries) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _plain_name(name: str) -> bool:
    """A file name of this directory (a manifest names nothing elsewhere, but it is read from disk)."""
    return isinstance(name, str) and bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def _marks(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Our marks: the hidden names of export ``name``'s version directories, and of its link being made."""
    escaped = re.escape(name)
    return re.compile(rf"\.{escaped}\.export-(\d+)-[0-9a-f]{{8}}"), re.compile(rf"\.{escaped}\.link-(\d+)")


def linked_version(out_dir: Path, name: str) -> str | None:
    """The version directory ``out_dir/name`` points at (None when there is no export of ``name``);
    InputError when something else is in the way there."""
    link = out_dir / name
    if not link.is_symlink():
        if link.exists():
            raise InputError(f"{one_line(str(link))} is in the way: an export of {name} is a link there to its "
                             "files; move it away")
        return None
    target = os.readlink(link)
    if not _marks(name)[0].fullmatch(target):
        raise InputError(f"{one_line(str(link))} links to {one_line(target)}, not to an export of {name}; move it away")
    return target


def _remove_version(path: Path) -> None:
    """Remove a version directory file by file (a kill midway leaves it for the next export)."""
    if path.is_symlink() or not path.is_dir():
        return
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        killpoints.reached("export.remove")
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)  # never follows a symlink inside
        else:
            os.unlink(entry.path)
    path.rmdir()


def remove_stale_versions(out_dir: Path, name: str) -> None:
    """The version directories (and half-made links) of ``name`` that no link points at, left by an
    export that was killed or failed: those of a process that is gone, or of this one but not
    being written."""
    current, marks = linked_version(out_dir, name), _marks(name)
    for entry in sorted(os.scandir(out_dir), key=lambda e: e.name):
        found = marks[0].fullmatch(entry.name) or marks[1].fullmatch(entry.name)
        if found is None or entry.name == current:
            continue
        pid, path = int(found[1]), Path(entry.path)
        if _alive(pid) and (pid != os.getpid() or path in _writing):
            continue
        if entry.is_dir(follow_symlinks=False):
            _remove_version(path)
        else:
            path.unlink(missing_ok=True)


def _listed(manifest_path: Path) -> list[str]:
    """The files a manifest on disk lists (none when there is none, or it cannot be read)."""
    try:
        return list(json.loads(manifest_path.read_text(encoding="utf-8")).get("files", {}))
    except (OSError, ValueError, AttributeError):
        return []


def _journalled(journal: Path) -> list[str]:
    """Every file a swap journal of the flat layout names (its temporaries, their places, the files to go)."""
    try:
        plan = json.loads(journal.read_text(encoding="utf-8"))
        return [*plan["manifest"], *plan["remove"], *(n for move in plan["moves"] for n in move)]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def remove_flat_export(out_dir: Path, name: str) -> None:
    """What an export of ``name`` wrote straight into ``out_dir`` before exports were directories:
    the files its manifest lists and a killed swap's journal names, then the journal and the
    manifest last (a kill midway leaves the list for the next export)."""
    manifest, journal = out_dir / f"{name}.manifest.json", out_dir / f".{name}.swap.json"
    for file in sorted({n for n in [*_listed(manifest), *_journalled(journal)] if _plain_name(n) and n != name}):
        path = out_dir / file
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)
    for path in (journal, manifest):
        if path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)


_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_line(row: dict[str, Any]) -> str:
    """``row`` as one JSON Lines line: the characters other readers take for line ends (``str.splitlines``
    splits at U+0085, U+2028 and U+2029) escaped, as JSON allows inside strings."""
    return json.dumps(row, ensure_ascii=False, default=str).translate(_LINE_BREAKS) + "\n"


_SPLIT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


class ExportWriter:
    """Streams rows into ``out_dir/{name}/{name}.{split}.{jsonl|parquet}``; ``finish`` commits."""

    def __init__(self, out_dir: Path, name: str, kind: str = "jsonl", schema: pa.Schema | None = None):
        if kind not in ("jsonl", "parquet"):
            raise ValueError(f"unknown export file kind {kind!r}")
        if kind == "parquet" and schema is None:
            raise ValueError("a Parquet export needs a schema")
        self.out_dir, self.name, self.kind, self.schema = Path(out_dir), name, kind, schema
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.link = self.out_dir / name
        remove_stale_versions(self.out_dir, name)  # refuses first what is in the way of the link
        self.version = self.out_dir / f".{name}.export-{os.getpid()}-{secrets.token_hex(4)}"
        self.version.mkdir()
        _writing.add(self.version)
        self.sinks: dict[str, _Sink] = {}
        self.attached: list[_Sink] = []  # files beside the splits (configs, modules), not split rows
        self.committed = False

    def published(self, file: str) -> Path:
        """Where ``file`` of this export is read from once it is finished: through the link, absolute."""
        return self.out_dir.resolve() / self.name / file

    def _sink(self, split: str) -> _Sink:
        sink = self.sinks.get(split)
        if sink is None:
            if not _SPLIT_NAME.match(str(split)):  # a split comes from the data; it names a file only if plain
                raise ValueError(f"split {split!r} cannot name an export file")
            sink = _Sink(path=self.version / f"{self.name}.{split}.{self.kind}")
            if self.kind == "jsonl":
                sink.fh = sink.path.open("w", encoding="utf-8")
            else:
                sink.writer = pq.ParquetWriter(sink.path, self.schema, compression="zstd")
            self.sinks[split] = sink
        return sink

    def attach(self, name: str, text: str) -> None:
        """A file that goes with the export, beside its splits."""
        self.attach_lines(name, [text])

    def attach_lines(self, name: str, lines: Iterable[str]) -> Path:
        """A file that goes with the export, beside its splits, written as ``lines`` come (a stream,
        never held whole); returns where it is written (read it there until the export is finished)."""
        if not _plain_name(name):
            raise ValueError(f"{name!r} cannot name an export file")
        sink = _Sink(path=self.version / name)
        with sink.path.open("w", encoding="utf-8") as fh:
            fh.writelines(lines)
        _sync(sink.path)
        self.attached.append(sink)
        killpoints.reached("export.file")
        return sink.path

    def split_files(self) -> dict[str, tuple[str, int, int]]:
        """Each split's file name, rows and bytes so far (the JSONL files flushed to the OS first)."""
        out = {}
        for split, sink in sorted(self.sinks.items()):
            if sink.fh is not None:
                sink.fh.flush()
            out[split] = (sink.path.name, sink.rows, sink.path.stat().st_size)
        return out

    def write(self, split: str, row: dict[str, Any]) -> None:
        sink = self._sink(split)
        if self.kind == "jsonl":
            sink.fh.write(json_line(row))
        else:
            sink.buffer.append(row)
            if len(sink.buffer) >= PARQUET_BATCH:
                self._flush(sink)
        sink.rows += 1

    def _flush(self, sink: _Sink) -> None:
        if sink.buffer:
            sink.writer.write_table(pa.Table.from_pylist(sink.buffer, schema=self.schema))
            sink.buffer.clear()

    def _close(self) -> None:
        for _, sink in sorted(self.sinks.items()):
            if sink.fh is not None:
                sink.fh.close()
                sink.fh = None
            if sink.writer is not None:
                self._flush(sink)
                sink.writer.close()
                sink.writer = None
            _sync(sink.path)
            killpoints.reached("export.file")

    def abort(self) -> None:
        """Drop everything written so far; the export that was there stays as it was."""
        if self.committed:
            return
        for sink in self.sinks.values():
            for handle in (sink.fh, sink.writer):
                try:
                    if handle is not None:
                        handle.close()
                except OSError:  # a full disk fails the close too: the files go all the same
                    pass
        shutil.rmtree(self.version, ignore_errors=True)
        _writing.discard(self.version)

    def finish(self, manifest: dict[str, Any]) -> ExportResult:
        """Write the manifest into the new version, point the link at it, remove the old version."""
        self._close()
        files: dict[str, dict[str, Any]] = {}
        for split, sink in sorted(self.sinks.items()):
            files[sink.path.name] = {"split": split, "rows": sink.rows, "sha256": _sha256(sink.path)}
        for sink in self.attached:
            files[sink.path.name] = {"split": None, "rows": None, "sha256": _sha256(sink.path)}
        manifest_name = f"{self.name}.manifest.json"
        with (self.version / manifest_name).open("w", encoding="utf-8") as fh:
            fh.write(json.dumps({**manifest, "files": files}, indent=2, sort_keys=True, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        _sync(self.version)
        killpoints.reached("export.manifest")
        old = linked_version(self.out_dir, self.name)
        new_link = self.out_dir / f".{self.name}.link-{os.getpid()}"
        new_link.unlink(missing_ok=True)
        os.symlink(self.version.name, new_link)  # relative: the export moves with its directory
        os.replace(new_link, self.link)  # the one atomic step: from here on the new export is the export
        self.committed = True
        _writing.discard(self.version)
        _sync(self.out_dir)
        killpoints.reached("export.swap")
        if old is not None:
            _remove_version(self.out_dir / old)
        remove_flat_export(self.out_dir, self.name)
        return ExportResult(self.link / manifest_name, files, sum(s.rows for s in self.sinks.values()))

    def __enter__(self) -> ExportWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
