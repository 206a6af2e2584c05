"""JSON list / JSON Lines input files, read one way everywhere. Pure parsing plus a read.

A file is a JSON list (items are "record N"), one JSON object (pretty-printed or not:
"record 1"), or JSON Lines ("line N"). A whole file that is not JSON (a list or an object
that breaks, or no line that parses) is one InputError ``FILE:LINE:COL: not JSON: ...`` (a
document cut short: at the end of the file, "unexpected end of file"); one bad JSON Lines
line is a problem on that record, so callers can skip it and go on. A reader that wants
exactly one document (pretty-printed or not) uses :func:`read_document`, or
:func:`document_and_items` to read the items of its big list one at a time (:mod:`warehouse.jsonstream`).
A UTF-8 byte-order mark is ignored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warehouse.errors import InputError
from warehouse.jsonstream import TOO_DEEP, document_parts, not_json


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
    as_document: json.JSONDecodeError | None = None  # why the file is not one object, when it begins as one
    deep = False  # the file begins as a document too deep to read (or JSON Lines whose first line is)
    if stripped[0] in "[{":
        try:
            data = json.loads(text)
        except RecursionError:
            if stripped[0] == "[":
                raise InputError(f"{name}: {TOO_DEEP}") from None
            deep = True  # perhaps JSON Lines whose first line is too deep: read line by line
        except json.JSONDecodeError as exc:
            if stripped[0] == "[":
                raise not_json(name, exc) from None
            as_document = exc
        else:
            items = data if isinstance(data, list) else [data]
            return [JsonRecord(f"record {i + 1}", i + 1, v) for i, v in enumerate(items)]
    return _lines(text, name, as_document, deep_document=deep)


def _lines(text: str, name: str, as_document: json.JSONDecodeError | None = None, *,
           deep_document: bool = False) -> list[JsonRecord]:
    """The records of ``text`` read as JSON Lines (see :func:`parse_records`)."""
    out: list[JsonRecord] = []
    first_error: tuple[int, json.JSONDecodeError] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(JsonRecord(f"line {number}", number, json.loads(line)))
        except RecursionError:
            out.append(JsonRecord(f"line {number}", number, None, TOO_DEEP))
        except json.JSONDecodeError as exc:
            first_error = first_error or (number, exc)
            out.append(JsonRecord(f"line {number}", number, None, f"not JSON at column {exc.colno}: {exc.msg}"))
    if as_document is not None and not any(isinstance(r.value, dict | list) for r in out):
        raise not_json(name, as_document)  # no line is a record: one pretty-printed object, broken (or cut short)
    if deep_document and all(r.problem for r in out):  # one document, too deep: no JSON Lines
        raise InputError(f"{name}: {TOO_DEEP}")
    if first_error is not None and all(r.problem for r in out):  # no line parses: the file is not JSON at all
        number, exc = first_error
        raise InputError(f"{name}:{number}:{exc.colno}: not JSON: {exc.msg}")
    return out


def parse_document(text: str, name: str) -> Any:
    """The one JSON document ``text`` is (pretty-printed or not); ``name`` is the file named in errors."""
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError(f"{name}: the file is empty")
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(f"{name}: {TOO_DEEP}") from None
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # JSON Lines, or two documents one after the other
            raise InputError(f"{name}:{exc.lineno}:{exc.colno}: expected one JSON document; "
                             "another begins here") from None
        raise not_json(name, exc) from None


def read_input(path: Path) -> bytes:
    """The bytes of the input file ``path``; one-line InputError when it cannot be read (a directory,
    missing, no permission)."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _read_text(path: Path) -> str:
    try:
        return read_input(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def read_records(path: Path) -> list[JsonRecord]:
    """Read and parse ``path``; one-line InputError when it cannot be read or is not JSON."""
    return parse_records(_read_text(path), str(path))


def read_document(path: Path) -> Any:
    """Read ``path`` as one JSON document; one-line InputError when it cannot be read or is not one."""
    return parse_document(_read_text(path), str(path))


def document_and_items(path: Path, key: str) -> tuple[Any, Iterator[Any]]:
    """The JSON document ``path`` is, with its member ``key`` (when a list) as an empty list, and that list's
    items, read again from the file one at a time: memory for one item, not the file. One-line InputError when
    the file cannot be read or is not one JSON document (said before this returns)."""
    document: Any = {}
    for name, number, value in document_parts(path, (key,)):
        if number == 0 and name is not None:
            document[name] = value
        elif number == 0:
            document = value  # a list (its items not kept) or another value: no object with the key

    def items() -> Iterator[Any]:
        for name, number, value in document_parts(path, (key,)):
            if name == key and number:
                yield value

    return document, items()


def file_sha256(path: Path) -> str:
    """The SHA-256 of ``path``, read in blocks; one-line InputError when it cannot be read."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return digest.hexdigest()


def _first_of_two_lines(path: Path) -> bytes | None:
    """The first non-blank line of ``path`` when another non-blank line follows it, else None. Read a block at a
    time: a document on one line (a whole file) is scanned, never held."""
    line_start = offset = 0
    start = end = None
    with path.open("rb") as fh:
        while piece := fh.readline(1 << 16):  # a line, or 64 kB of one
            if start is None and piece.strip():
                start = line_start
            elif end is not None and piece.strip():
                fh.seek(start)
                return fh.read(end - start)
            offset += len(piece)
            if piece.endswith(b"\n"):
                line_start = offset
                if start is not None and end is None:
                    end = offset
    return None


def _is_json_lines(path: Path) -> bool:
    """Whether ``path`` is JSON Lines: a first line that is a JSON object on its own, and more lines."""
    try:
        first = _first_of_two_lines(path)
        if first is None:
            return False
        head = first.decode("utf-8").removeprefix("\ufeff").strip()
        return head.startswith("{") and isinstance(json.loads(head), dict)
    except (OSError, ValueError, RecursionError):
        return False


def _is_a_list(path: Path) -> bool:
    """Whether ``path`` begins as a JSON list does."""
    try:
        with path.open("rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False  # the reader says why it cannot be read
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] == b"["


def stream_records(path: Path) -> Iterator[JsonRecord]:
    """The records of ``path`` as :func:`read_records` gives them, one line at a time for JSON Lines (a
    line in memory at once) and one item at a time for a JSON list; a file that is one JSON object is read
    whole. Errors as read_records: a file none of whose lines is JSON is an InputError (raised once every line
    is read)."""
    if _is_a_list(path):
        for _, number, value in document_parts(path, one_document=False):
            if number:
                yield JsonRecord(f"record {number}", number, value)
        return
    if not _is_json_lines(path):
        yield from read_records(path)
        return
    first_error: tuple[int, json.JSONDecodeError] | None = None
    parsed = 0
    offset = 0
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}: not UTF-8 text (byte {offset + exc.start})") from None
            offset += len(raw)
            line = line.removeprefix("\ufeff") if number == 1 else line
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except RecursionError:
                yield JsonRecord(f"line {number}", number, None, TOO_DEEP)
                continue
            except json.JSONDecodeError as exc:
                first_error = first_error or (number, exc)
                yield JsonRecord(f"line {number}", number, None, f"not JSON at column {exc.colno}: {exc.msg}")
                continue
            parsed += 1
            yield JsonRecord(f"line {number}", number, value)
    if first_error is not None and not parsed:
        number, exc = first_error
        raise InputError(f"{path}:{number}:{exc.colno}: not JSON: {exc.msg}")
