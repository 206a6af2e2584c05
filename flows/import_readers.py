"""Reading an import file in each format: the thin shell around :mod:`generators.importers`.

Every reader returns the file's records in the OpenAI-chat shape the one importer reads, each
with where it is in the file, or the reason it cannot be imported (skipped and named).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from generators.importers import adp, inspect_log, otel, tau2
from warehouse.errors import InputError
from warehouse.jsonfile import read_document, read_records


def read_inspect(path: Path, scorer: str | None = None) -> list[Any]:
    """An Inspect log: a ``.eval`` zip (``header.json``, ``samples/*.json``) or a ``.json`` log."""
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
                header = json.loads(zf.read("header.json")) if "header.json" in names else {}
                samples: list[tuple[str, Any]] = []
                for name in sorted(n for n in names if n.startswith("samples/") and n.endswith(".json")):
                    try:
                        samples.append((name, json.loads(zf.read(name))))
                    except ValueError as exc:
                        samples.append((name, ValueError(f"not JSON: {exc}")))
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise InputError(f"{path}: not a readable Inspect .eval log ({exc})") from None
        if not samples:
            raise InputError(f"{path}: an Inspect .eval log without samples/*.json")
        return inspect_log.records(header if isinstance(header, dict) else {}, samples, scorer=scorer)
    log = read_document(path)
    if not isinstance(log, dict) or not isinstance(log.get("samples"), list):
        raise InputError(f"{path}: not an Inspect eval log (a .eval zip, or JSON with a 'samples' list)")
    return inspect_log.records(log, [(f"sample {i + 1}", s) for i, s in enumerate(log["samples"])], scorer=scorer)


# format -> reader (path, scorer) -> records
READERS: dict[str, Callable[[Path, str | None], list[Any]]] = {
    "openai-chat": lambda path, scorer: read_records(path),
    "inspect": read_inspect,
    "tau2": lambda path, scorer: tau2.records(read_document(path), str(path)),
    "otel": lambda path, scorer: otel.records(read_records(path), str(path), scorer),
    "adp": lambda path, scorer: adp.records(read_records(path)),
}
