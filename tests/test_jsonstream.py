"""The incremental JSON reader (warehouse.jsonstream) on hard inputs, at every chunk size down to one byte:
it gives what json.loads gives, and where a whole-document parse refuses a file it refuses it with the same
line (the position in the file, not in its window)."""

from __future__ import annotations

import json
import re

import pytest

from warehouse.errors import InputError
from warehouse.jsonfile import parse_document, parse_records, stream_records
from warehouse.jsonstream import TOO_DEEP, document_parts

CHUNKS = [1, 2, 3, 5, 8, 64, 1 << 20]

HARD = [
    '[]', '  [ ]  \n', '[{}]', '[[]]', '[1]', '[12345678901234567890]', '[-1.5e+10, 0, 1E3, 2.25]',
    '[true,false,null]', '[ "a]b", "c,d", "e\\"]f", "\\\\", "\\\\\\"" ]',
    '[{"k": "]", "l": ",", "m": "\\"}"}, {"k": "[{,"}]',
    '["\u00e9t\u00e9", "\u2713 ok", "\U0001F600 emoji", "\\ud83d\\ude00 escaped", "\\u00e9"]',
    '[\n  1 ,\n\t2\r\n ,  3\n]\n', '\ufeff[{"bom": true}]',
    '[{"nested": [[["deep", {"x": [1, {"y": "]]]"}]}]]]}, "after"]',
    '[' + ', '.join(json.dumps({"id": i, "text": "x" * (i * 7 % 50), "n": i * 1.5}) for i in range(40)) + ']',
]


def _items(path, chunk):
    return [v for k, n, v in document_parts(path, one_document=False, chunk=chunk) if n]


@pytest.mark.parametrize("text", HARD, ids=range(len(HARD)))
def test_every_item_as_json_loads_reads_it_at_every_chunk_size(tmp_path, text):
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    want = json.loads(text.removeprefix("\ufeff"))
    for chunk in CHUNKS:
        assert _items(path, chunk) == want, chunk
    assert [r.value for r in stream_records(path)] == want
    assert [r.where for r in stream_records(path)] == [f"record {i}" for i in range(1, len(want) + 1)]


def _whole(text, name):
    """What a whole-document parse says of ``text``."""
    with pytest.raises(InputError) as refused:
        parse_records(text, name)
    return str(refused.value)


DOCUMENT = '[\n {"a": "x]y", "b": [1, 2.5e3, true]},\n {"c": "\\"q\\" \u00e9\u2713", "d": null},\n 17,\n "end"\n]\n'


@pytest.mark.parametrize("chunk", [1, 3, 7, 1 << 20])
def test_a_file_cut_anywhere_is_refused_as_a_whole_parse_refuses_it(tmp_path, chunk):
    path = tmp_path / "cut.json"
    for size in range(1, len(DOCUMENT.rstrip())):
        text = DOCUMENT[:size]
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as refused:
            _items(path, chunk)
        assert str(refused.value) == _whole(text, str(path)), (size, text)
        assert "unexpected end of file" in str(refused.value)


@pytest.mark.parametrize("chunk", [1, 4, 1 << 20])
def test_a_break_anywhere_is_named_where_it_is(tmp_path, chunk):
    path = tmp_path / "broken.json"
    for at in range(1, len(DOCUMENT) - 2):
        for junk in ("@", ",", "]"):
            text = DOCUMENT[:at] + junk + DOCUMENT[at:]
            try:
                want = [("ok", v) for v in json.loads(text)]
            except json.JSONDecodeError:
                want = _whole(text, str(path))
            path.write_text(text, encoding="utf-8")
            try:
                got = [("ok", v) for v in _items(path, chunk)]
            except InputError as exc:
                got = str(exc)
            assert got == want, (at, junk, text)


def test_an_object_s_list_member_is_read_an_item_at_a_time_and_its_other_members_whole(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"info": {"a": [1, "]"]}, "simulations": [{"id": 1}, {"id": "2,]"}], "tail": "}"}')
    for chunk in CHUNKS:
        parts = list(document_parts(path, ("simulations",), chunk=chunk))
        assert parts == [("info", 0, {"a": [1, "]"]}), ("simulations", 0, []), ("simulations", 1, {"id": 1}),
                         ("simulations", 2, {"id": "2,]"}), ("tail", 0, "}")]


@pytest.mark.parametrize(("text", "said"), [
    ('{"simulations": [{"a": 1} {"b": 2}]}', "1:27: not JSON: Expecting ',' delimiter"),
    ('{"simulations": [], "x" 1}', "1:25: not JSON: Expecting ':' delimiter"),
    ('{"simulations": [], 3}', "1:21: not JSON: Expecting property name enclosed in double quotes"),
    ('{"simulations": [1,\n 2,,]}', "2:4: not JSON: Expecting value"),
    ('{"simulations": []}\n{"simulations": []}', "2:1: expected one JSON document; another begins here"),
    ('{"simulations": [1, 2', "1:22: not JSON: unexpected end of file"),
    ('', "the file is empty"),
])
def test_a_document_s_breaks_are_said_as_a_whole_parse_says_them(tmp_path, text, said):
    path = tmp_path / "d.json"
    path.write_text(text)
    for chunk in (1, 5, 1 << 20):
        with pytest.raises(InputError) as refused:
            list(document_parts(path, ("simulations",), chunk=chunk))
        assert str(refused.value) == f"{path}:{said}".replace(f"{path}:the", f"{path}: the")
    with pytest.raises(InputError) as whole:
        parse_document(text, str(path))
    assert str(whole.value) == str(refused.value)


def test_an_item_nested_deeper_than_the_parser_recurses_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('[{"ok": 1}, ' + "[" * 100_000 + "]" * 100_000 + "]")
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}: {re.escape(TOO_DEEP)}$"):
        _items(path, 1 << 16)


def test_an_item_longer_than_the_limit_is_refused_and_shorter_ones_read(tmp_path):
    path = tmp_path / "long.json"
    path.write_text(json.dumps([{"t": "x" * 100}, {"t": "y" * 5000}]))
    with pytest.raises(InputError, match=rf"^{path}: record 2 is longer than 0 MB of text; refused"):
        list(document_parts(path, chunk=64, limit=4000))
    assert len(_items(path, 64)) == 2


def test_bytes_that_are_not_utf8_are_named_by_their_offset(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'["caf\xc3\xa9", "caf\xe9"]')
    for chunk in (1, 3, 1 << 20):
        with pytest.raises(InputError, match=rf"^{path}: not UTF-8 text \(byte 14\)$"):
            _items(path, chunk)
