"""Writing an export: rows streamed to a file, then a manifest; all or nothing.

Files are written under a temporary name and renamed into place, the manifest last,
so a manifest on disk means its data file is complete.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class ExportResult:
    data_path: Path
    manifest_path: Path
    rows: int
    sha256: str


def write_jsonl_export(
    out_dir: Path, name: str, rows: Iterable[dict[str, Any]], manifest: Callable[[], dict[str, Any]]
) -> ExportResult:
    """Stream ``rows`` to ``out_dir/name.jsonl`` and write ``name.manifest.json`` beside it.

    ``manifest`` is called once every row is written, so it can report counts
    gathered while the rows streamed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data_path = out_dir / f"{name}.jsonl"
    manifest_path = out_dir / f"{name}.manifest.json"
    tmp = out_dir / f".{name}.jsonl.tmp-{os.getpid()}"
    sha = hashlib.sha256()
    count = 0
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for row in rows:
                line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
                fh.write(line)
                sha.update(line.encode("utf-8"))
                count += 1
            fh.flush()
            os.fsync(fh.fileno())
        manifest_path.unlink(missing_ok=True)  # an old manifest must not vouch for new data
        os.replace(tmp, data_path)
    finally:
        tmp.unlink(missing_ok=True)
    full = {**manifest(), "files": {data_path.name: {"rows": count, "sha256": sha.hexdigest()}}}
    tmp_manifest = out_dir / f".{name}.manifest.json.tmp-{os.getpid()}"
    tmp_manifest.write_text(json.dumps(full, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp_manifest, manifest_path)
    return ExportResult(data_path, manifest_path, count, sha.hexdigest())
