"""Reading an import file in each format: the thin shell around :mod:`generators.importers`.

Every reader returns the file's records in the OpenAI-chat shape the one importer reads, each
with where it is in the file, or the reason it cannot be imported (skipped and named).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from generators.importers import adp
from warehouse.errors import InputError
from warehouse.jsonfile import read_records


def _one_json(path: Path) -> Any:
    records = read_records(path)
    if len(records) != 1 or records[0].problem:
        raise InputError(f"{path}: expected one JSON document")
    return records[0].value


# format -> reader (path, scorer) -> records
READERS: dict[str, Callable[[Path, str | None], list[Any]]] = {
    "openai-chat": lambda path, scorer: read_records(path),
    "adp": lambda path, scorer: adp.records(read_records(path)),
}
