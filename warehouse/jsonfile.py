"""JSON list / JSON Lines input files, read one way everywhere. Pure parsing plus a read.

A file is a JSON list (items are "record N"), one JSON object (pretty-printed or not:
"record 1"), or JSON Lines ("line N"). A whole file that is not JSON is one InputError
``FILE:LINE:COL: not JSON: ...``; one bad JSON Lines line is a problem on that record,
so callers can skip it and go on. A UTF-8 byte-order mark is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warehouse.errors import InputError


@dataclass(frozen=True)
class JsonRecord:
    """One record of an input file: where it is, its value, or why it is not JSON."""

    where: str  # "line N" (JSON Lines) or "record N" (JSON list)
    number: int  # the N of ``where``
    value: Any = None
    problem: str = ""  # non-empty when the line is not JSON


def parse_records(text: str, name: str) -> list[JsonRecord]:
    """The records of ``text`` (see the module doc); ``name`` is the file named in errors."""
    text = text.removeprefix("\ufeff")
    stripped = text.lstrip()
    if not stripped:
        raise InputError(f"{name}: the file is empty")
    if stripped[0] in "[{":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if stripped[0] == "[":
                raise InputError(f"{name}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
        else:
            items = data if isinstance(data, list) else [data]
            return [JsonRecord(f"record {i + 1}", i + 1, v) for i, v in enumerate(items)]
    out: list[JsonRecord] = []
    first_error: tuple[int, json.JSONDecodeError] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(JsonRecord(f"line {number}", number, json.loads(line)))
        except json.JSONDecodeError as exc:
            first_error = first_error or (number, exc)
            out.append(JsonRecord(f"line {number}", number, None, f"not JSON at column {exc.colno}: {exc.msg}"))
    if first_error is not None and all(r.problem for r in out):  # no line parses: the file is not JSON at all
        number, exc = first_error
        raise InputError(f"{name}:{number}:{exc.colno}: not JSON: {exc.msg}")
    return out


def read_records(path: Path) -> list[JsonRecord]:
    """Read and parse ``path``; one-line InputError when it cannot be read or is not JSON."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return parse_records(text, str(path))
