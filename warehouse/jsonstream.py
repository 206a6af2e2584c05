"""One JSON document read a piece at a time: the items of a top-level list, or of the named list members
of a top-level object, one item in memory at once (issue 33: import memory does not grow with the file).

The file is read in chunks into a window; each value is decoded by json's own C decoder
(``raw_decode``) where it begins, and a value the window cuts short is decoded again once the window
holds more. The window drops what is read as it goes, remembering the line and column it had reached,
so errors name the file's own position as :func:`not_json` does for a whole document. Guarantees:

* an item (or another member) longer than ``limit`` characters is refused in one line;
* a value nested deeper than the parser recurses is the file's one line (:data:`TOO_DEEP`);
* a break is ``FILE:LINE:COL: not JSON: ...`` where it is; a file cut short is named where it ends.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from warehouse.errors import InputError

TOO_DEEP = "nested too deeply to read (JSON deeper than the parser's recursion limit)"
CHUNK = 1 << 20  # characters read into the window at a time
ITEM_LIMIT = 256 * 2**20  # a list item (or another member) longer than this is refused, as an .eval member is

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_PART_OF_A_TOKEN = re.compile(r'[^\s,:\[\]{}"]*')  # what a cut leaves of a number, true/false/null or an escape


def _line_col(text: str, pos: int, line0: int = 0, col0: int = 0) -> tuple[int, int]:
    """The file's line and column of ``text[pos]``, ``text`` beginning ``line0`` lines and ``col0`` columns in."""
    newline = text.rfind("\n", 0, pos)
    return line0 + text.count("\n", 0, pos) + 1, pos - newline if newline >= 0 else col0 + pos + 1


def _token_to_the_end(text: str, pos: int) -> bool:
    """Whether ``text`` from ``pos`` is nothing, or the start of a number, a literal or an escape."""
    return len(text) - pos <= 64 and _PART_OF_A_TOKEN.fullmatch(text, pos) is not None


def _cut_short(exc: json.JSONDecodeError) -> bool:
    """Whether ``exc`` is what a text ending inside a value (a string, a number, a literal or a container) raises."""
    return exc.msg.startswith("Unterminated string") or _token_to_the_end(exc.doc, exc.pos)


def not_json(name: str, exc: json.JSONDecodeError, line0: int = 0, col0: int = 0, *, at_end: bool = True) -> InputError:
    """``FILE:LINE:COL: not JSON: ...`` for ``exc`` (its text ``line0`` lines and ``col0`` columns into the file,
    and running to the file's end unless not ``at_end``). A document cut short is named where the file ends,
    json's own position being where the cut string, number or literal began."""
    text = exc.doc
    end = len(text.rstrip())
    in_string = exc.msg.startswith("Unterminated string")
    in_value = exc.msg in ("Expecting value", "Expecting ',' delimiter") or exc.msg.startswith("Invalid \\u")
    cut_value = in_value and _PART_OF_A_TOKEN.fullmatch(text[exc.pos:end])  # not a bare word where a key belongs
    if not at_end or (not in_string and not cut_value and exc.pos < end):
        line, col = _line_col(text, exc.pos, line0, col0)
        return InputError(f"{name}:{line}:{col}: not JSON: {exc.msg}")
    line, col = _line_col(text, end, line0, col0)
    inside = ""
    if in_string:
        inside = " (inside a string begun at {}:{})".format(*_line_col(text, exc.pos, line0, col0))
    return InputError(f"{name}:{line}:{col}: not JSON: unexpected end of file{inside}")


class _Window:
    """The part of a UTF-8 file being read, as text, with the file's line and column where it begins."""

    def __init__(self, fh: BinaryIO, name: str, chunk: int, limit: int):
        self.fh, self.name, self.chunk, self.limit = fh, name, chunk, limit
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text, self.pos, self.eof = "", 0, False
        self.line0 = self.col0 = 0  # lines and columns of the text dropped before the window
        self.bytes_read = 0
        self.started = False  # some text was read (a byte-order mark before it is dropped)

    def more(self, size: int) -> None:
        """Read ``size`` more bytes into the window (at the end of the file: mark it so)."""
        data = self.fh.read(size)
        pending = len(self.decoder.getstate()[0])
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.name}: not UTF-8 text (byte {self.bytes_read - pending + exc.start})") from None
        if text and not self.started:
            text, self.started = text.removeprefix("\ufeff"), True
        self.bytes_read += len(data)
        self.eof = not data
        self.text += text

    def peek(self) -> str:
        """The next character that is not white space (the window moved to it), "" at the end of the file."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()
            if self.pos < len(self.text) or self.eof:
                return self.text[self.pos:self.pos + 1]
            self.more(self.chunk)

    def value(self, what: str) -> Any:
        """The JSON value beginning at the window's position (``what`` it is, for a refusal); read past it."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except RecursionError:
                raise InputError(f"{self.name}: {TOO_DEEP}") from None
            except json.JSONDecodeError as exc:
                if self.eof or not _cut_short(exc):
                    raise not_json(self.name, exc, self.line0, self.col0, at_end=self.eof) from None
                self._grow(what)
                continue
            if end - self.pos > self.limit:
                self._refuse(what)
            if self.eof or not _token_to_the_end(self.text, end):
                self.pos = end
                return value
            self._grow(what)  # a number may go on in the next chunk ("1" of "1E3")

    def _grow(self, what: str) -> None:
        """Read more of the value at the window's position: as much again as is held (a long value is decoded
        a few times, not once a chunk), and never more than the limit."""
        held = len(self.text) - self.pos
        if held > self.limit:
            self._refuse(what)
        self.more(min(max(self.chunk, held), self.limit + 1 - held))

    def _refuse(self, what: str) -> None:
        raise InputError(f"{self.name}: {what} is longer than {self.limit // 2**20} MB of text; refused (read it "
                         "as JSON Lines, or split the file)")

    def expect(self, char: str, msg: str) -> None:
        """Read past ``char``, the next character that is not white space; else json's ``msg`` there."""
        if self.peek() != char:
            self.fail(msg)
        self.pos += 1

    def fail(self, msg: str) -> None:
        error = json.JSONDecodeError(msg, self.text, self.pos)
        raise not_json(self.name, error, self.line0, self.col0, at_end=self.eof)

    def drop_read(self) -> None:
        """Forget the text read (once a chunk's worth), keeping the file's line and column it reached."""
        if self.pos < self.chunk:
            return
        dropped = self.text[:self.pos]
        newlines = dropped.count("\n")
        self.line0 += newlines
        self.col0 = self.pos - dropped.rfind("\n") - 1 if newlines else self.col0 + self.pos
        self.text, self.pos = self.text[self.pos:], 0

    def items(self, key: str | None) -> Iterator[tuple[str | None, int, Any]]:
        """(key, 0, []) for the list at the window's position, then (key, n, item) for each of its items."""
        self.expect("[", "Expecting value")
        yield key, 0, []
        if self.peek() == "]":
            self.pos += 1
            return
        n = 0
        while True:
            n += 1
            self.peek()
            yield key, n, self.value(f"record {n}" if key is None else f"{key} item {n}")
            self.drop_read()
            if self.peek() == "]":
                self.pos += 1
                return
            self.expect(",", "Expecting ',' delimiter")

    def members(self, lists: Collection[str]) -> Iterator[tuple[str | None, int, Any]]:
        """(key, 0, value) for each member of the object at the window's position, and (key, n, item) for the
        items of the members named in ``lists`` that are lists."""
        self.expect("{", "Expecting value")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                self.fail("Expecting property name enclosed in double quotes")
            key = self.value("a member's name")
            self.expect(":", "Expecting ':' delimiter")
            if key in lists and self.peek() == "[":
                yield from self.items(key)
            else:
                self.peek()
                yield key, 0, self.value(f"member {key!r}")
            self.drop_read()
            if self.peek() == "}":
                self.pos += 1
                return
            self.expect(",", "Expecting ',' delimiter")


def document_parts(path: Path, lists: Collection[str] = (), *, one_document: bool = True, chunk: int = CHUNK,
                   limit: int | None = None) -> Iterator[tuple[str | None, int, Any]]:
    """The JSON document ``path`` is, a part at a time, as (key, n, value): for a top-level object, (key, 0,
    value) for each member, except that a list member named in ``lists`` is (key, 0, []) followed by (key, n,
    item) for its items (n from 1); a top-level list is (None, 0, []) and its items (None, n, item); any other
    document is (None, 0, value). After the document only
    white space may follow: else ``FILE:LINE:COL: expected one JSON document; another begins here``
    (``one_document``) or json's "Extra data". One-line InputError when the file cannot be read or is not JSON."""
    limit = ITEM_LIMIT if limit is None else limit
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with fh:
        w = _Window(fh, str(path), chunk, limit)
        first = w.peek()
        if not first:
            raise InputError(f"{path}: the file is empty")
        if first == "[":
            yield from w.items(None)
        elif first == "{":
            yield from w.members(lists)
        else:
            yield None, 0, w.value("the document")
        if w.peek():
            if not one_document:
                w.fail("Extra data")
            line, col = _line_col(w.text, w.pos, w.line0, w.col0)
            raise InputError(f"{path}:{line}:{col}: expected one JSON document; another begins here")
