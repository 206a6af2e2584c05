"""Writing an export: rows streamed into one file per split, then a manifest; all or nothing.

Files are written under temporary names. When every row is written, the swap is planned in a
journal (``.NAME.swap.json``: the temporaries to rename into place, and every file of the previous
export the new one does not have, read from its manifest before anything is touched), then
carried out: the old manifest removed, the old files removed, the new files renamed into place,
the new manifest last. A killed swap leaves no manifest and its journal; the next export of the
name finishes it first (every step can be repeated), so no file of an earlier export survives a
completed one and a manifest on disk vouches for exactly the files beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from warehouse import killpoints

PARQUET_BATCH = 2048


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
    tmp: Path
    final: Path
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


def _write_synced(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _plain_name(name: str) -> bool:
    """A file name of this directory (a manifest names nothing elsewhere, but it is read from disk)."""
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def _listed(manifest_path: Path) -> list[str]:
    """The files a manifest on disk lists (none when there is none, or it cannot be read)."""
    try:
        return list(json.loads(manifest_path.read_text(encoding="utf-8")).get("files", {}))
    except (OSError, ValueError, AttributeError):
        return []


def _swap(out_dir: Path, plan: dict[str, Any]) -> None:
    """Carry out a swap journal; every step can be repeated (a temporary already renamed is skipped)."""
    tmp, final = plan["manifest"]
    (out_dir / final).unlink(missing_ok=True)  # an old manifest must not vouch for new data
    for name in plan["remove"]:
        killpoints.reached("export.file")
        (out_dir / name).unlink(missing_ok=True)
    for src, dst in plan["moves"]:
        killpoints.reached("export.file")
        if (out_dir / src).exists():
            os.replace(out_dir / src, out_dir / dst)
    killpoints.reached("export.manifest")
    if (out_dir / tmp).exists():
        os.replace(out_dir / tmp, out_dir / final)


def finish_interrupted_swap(journal: Path) -> bool:
    """Finish the swap a killed export left (its journal), if any; True if there was one."""
    try:
        plan = json.loads(journal.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False
    except ValueError:  # a journal is renamed into place whole: unreadable means not ours
        return False
    names = [*plan["manifest"], *plan["remove"], *(n for move in plan["moves"] for n in move)]
    if not all(isinstance(n, str) and _plain_name(n) for n in names):
        return False
    _swap(journal.parent, plan)
    journal.unlink(missing_ok=True)
    return True


_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_line(row: dict[str, Any]) -> str:
    """``row`` as one JSON Lines line: the characters other readers take for line ends (``str.splitlines``
    splits at U+0085, U+2028 and U+2029) escaped, as JSON allows inside strings."""
    return json.dumps(row, ensure_ascii=False, default=str).translate(_LINE_BREAKS) + "\n"


_SPLIT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


class ExportWriter:
    """Streams rows into ``out_dir/{name}.{split}.{jsonl|parquet}``; ``finish`` commits."""

    def __init__(self, out_dir: Path, name: str, kind: str = "jsonl", schema: pa.Schema | None = None):
        if kind not in ("jsonl", "parquet"):
            raise ValueError(f"unknown export file kind {kind!r}")
        if kind == "parquet" and schema is None:
            raise ValueError("a Parquet export needs a schema")
        self.out_dir, self.name, self.kind, self.schema = Path(out_dir), name, kind, schema
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.sinks: dict[str, _Sink] = {}
        self.attached: list[_Sink] = []  # files beside the splits (configs, modules), not split rows
        self.journal = self.out_dir / f".{name}.swap.json"
        self.committed = False
        finish_interrupted_swap(self.journal)  # before the temporaries go: a journal's are still needed
        self._remove_stale_temporaries()

    def _remove_stale_temporaries(self) -> None:
        """Temporary files an earlier, killed export of this name left behind."""
        for path in self.out_dir.glob(f".{self.name}.*.tmp-*"):
            pid = path.name.rsplit(".tmp-", 1)[-1]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                path.unlink(missing_ok=True)

    def _sink(self, split: str) -> _Sink:
        sink = self.sinks.get(split)
        if sink is None:
            if not _SPLIT_NAME.match(str(split)):  # a split comes from the data; it names a file only if plain
                raise ValueError(f"split {split!r} cannot name an export file")
            final = self.out_dir / f"{self.name}.{split}.{self.kind}"
            sink = _Sink(tmp=self.out_dir / f".{final.name}.tmp-{os.getpid()}", final=final)
            if self.kind == "jsonl":
                sink.fh = sink.tmp.open("w", encoding="utf-8")
            else:
                sink.writer = pq.ParquetWriter(sink.tmp, self.schema, compression="zstd")
            self.sinks[split] = sink
        return sink

    def attach(self, name: str, text: str) -> None:
        """A file that goes with the export (written now under a temporary name, renamed by ``finish``)."""
        sink = _Sink(tmp=self.out_dir / f".{name}.tmp-{os.getpid()}", final=self.out_dir / name)
        sink.tmp.write_text(text, encoding="utf-8")
        self.attached.append(sink)

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
        for sink in self.sinks.values():
            if sink.fh is not None:
                sink.fh.flush()
                os.fsync(sink.fh.fileno())
                sink.fh.close()
                sink.fh = None
            if sink.writer is not None:
                self._flush(sink)
                sink.writer.close()
                sink.writer = None

    def abort(self) -> None:
        """Drop everything written so far; files of an earlier export stay as they were (once the swap
        is journalled, its temporaries stay for the next export to finish it)."""
        if self.committed:
            return
        for sink in self.attached:
            sink.tmp.unlink(missing_ok=True)
        for sink in self.sinks.values():
            try:
                if sink.fh is not None:
                    sink.fh.close()
                if sink.writer is not None:
                    sink.writer.close()
            finally:
                sink.tmp.unlink(missing_ok=True)

    def finish(self, manifest: dict[str, Any]) -> ExportResult:
        """Swap the new files in for the previous export's (see the module doc), the manifest last."""
        self._close()
        manifest_path = self.out_dir / f"{self.name}.manifest.json"
        files: dict[str, dict[str, Any]] = {}
        moves: list[tuple[str, str]] = []
        for split, sink in sorted(self.sinks.items()):
            files[sink.final.name] = {"split": split, "rows": sink.rows, "sha256": _sha256(sink.tmp)}
            moves.append((sink.tmp.name, sink.final.name))
        for sink in self.attached:
            files[sink.final.name] = {"split": None, "rows": None, "sha256": _sha256(sink.tmp)}
            moves.append((sink.tmp.name, sink.final.name))
        tmp = self.out_dir / f".{manifest_path.name}.tmp-{os.getpid()}"
        _write_synced(tmp, json.dumps({**manifest, "files": files}, indent=2, sort_keys=True, default=str) + "\n")
        old = [n for n in _listed(manifest_path) if n not in files and _plain_name(n)]
        plan = {"manifest": [tmp.name, manifest_path.name], "moves": moves, "remove": old}
        journal_tmp = self.journal.with_name(self.journal.name + f".tmp-{os.getpid()}")
        _write_synced(journal_tmp, json.dumps(plan))
        os.replace(journal_tmp, self.journal)  # from here on the swap is decided: a rerun finishes it
        self.committed = True
        killpoints.reached("export.journal")
        _swap(self.out_dir, plan)
        self.journal.unlink(missing_ok=True)
        return ExportResult(manifest_path, files, sum(s.rows for s in self.sinks.values()))

    def __enter__(self) -> ExportWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
