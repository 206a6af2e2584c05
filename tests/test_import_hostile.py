"""Hostile and odd records in every import format: each is skipped with a reason or the file is
refused in one line (InputError), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.stages.importing import FORMATS, prepare_import
from tests.conftest import cli_env, flywheel
from tests.format_roundtrip import DATA
from tests.fuzz import assert_one_clear_line
from warehouse.errors import InputError

ODD = [None, 1, "x", [], {}, [1, 2], {"a": None}, [{"role": None}], {"parts": 3}, [[]], True]


def _try(path, fmt):
    try:
        prepared = prepare_import(path, fmt)
    except InputError as exc:
        assert "\n" not in str(exc)
        return None
    return prepared


@pytest.mark.parametrize("odd", ODD, ids=[repr(o)[:20] for o in ODD])
def test_odd_values_in_every_field_never_crash(tmp_path, odd):
    good_msg = {"role": "assistant", "content": "hi", "tool_calls": [{"id": "a", "function": "f", "arguments": {}}]}
    cases = {
        "inspect": {"eval": odd, "samples": [{"id": 1, "epoch": odd, "messages": odd, "scores": odd},
                                             {"id": 2, "epoch": 1, "messages": [good_msg, {"role": "tool", "content": odd, "error": odd, "tool_call_id": odd}]}]},
        "tau2": {"info": odd, "simulations": [{"task_id": "1", "trial": odd, "messages": odd, "reward_info": odd},
                                              {"task_id": 2, "messages": [{"role": "assistant", "tool_calls": odd}, {"role": "tool", "id": odd, "content": odd}]}]},
        "otel": {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": odd, "attributes": [{"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(odd)}},
                                                                                            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(odd)}}]},
                                                              {"traceId": "t", "startTimeUnixNano": odd, "attributes": odd}]}]}, {"scopeSpans": odd}]},
        "adp": {"id": odd, "content": [{"class_": "api_action", "function": odd, "kwargs": odd},
                                       {"class_": "text_observation", "content": odd, "source": odd, "tool_call_id": odd}], "details": odd},
    }
    for fmt, value in cases.items():
        path = tmp_path / f"{fmt}.json"
        path.write_text(json.dumps(value))
        _try(path, fmt)


ONE_DOCUMENT = {"tau2": DATA / "tau2" / "airline_results.json", "inspect": DATA / "inspect" / "phone_contacts.json"}


def _end_of(text: str) -> str:
    """``LINE:COL`` just past the last character of ``text`` that is not white space."""
    end = text.rstrip()
    return f"{end.count(chr(10)) + 1}:{len(end) - end.rfind(chr(10))}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_document_cut_short_anywhere_is_named_where_the_file_ends(tmp_path, fmt):
    """A pretty-printed file cut at any character (a copy that stopped short), in a string, a number, a literal
    or between them: ``FILE:LINE:COL: not JSON: unexpected end of file`` at its last line and column. The
    formats that read JSON Lines too take one pretty-printed object as well (here, any: the file is cut)."""
    text = ONE_DOCUMENT.get(fmt, ONE_DOCUMENT["tau2"]).read_text()
    path = tmp_path / "cut.json"
    for size in range(1, len(text) - 1, 7):
        path.write_text(text[:size])
        with pytest.raises(InputError) as refused:
            prepare_import(path, fmt)
        assert str(refused.value).startswith(f"{path}:{_end_of(text[:size])}: not JSON: unexpected end of file"), \
            (size, str(refused.value))


@pytest.mark.parametrize("fmt", ONE_DOCUMENT)
def test_a_break_inside_a_pretty_printed_document_is_named_where_it_is(tmp_path, fmt):
    text = ONE_DOCUMENT[fmt].read_text()
    line_start = text.index("\n", len(text) // 2) + 1
    at = line_start + len(text[line_start:]) - len(text[line_start:].lstrip())  # the line's first token
    path = tmp_path / "broken.json"
    path.write_text(text[:at] + "@" + text[at:])
    with pytest.raises(InputError, match=rf"^{path}:{text.count(chr(10), 0, at) + 1}:{at - line_start + 1}: "
                                         "not JSON: Expecting "):
        prepare_import(path, fmt)


@pytest.mark.parametrize(("text", "said"), [
    ("{bad", "1:2: not JSON: Expecting property name enclosed in double quotes"),  # no value begins there
    ('{"a": trux}', "1:7: not JSON: Expecting value"),
    ('{"a" 1', "1:6: not JSON: Expecting ':' delimiter"),
    ('{"a":\n  tr', "2:5: not JSON: unexpected end of file"),
    ('{"a":\n  [1.5e', "2:8: not JSON: unexpected end of file"),
    ('{"a":\n  "b\\u12', "2:9: not JSON: unexpected end of file"),
])
def test_only_a_value_the_file_ends_in_is_taken_for_a_cut(tmp_path, text, said):
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(InputError, match=rf"^{path}:{said}$"):
        prepare_import(path, "tau2")


def test_two_documents_where_one_is_read_are_refused_at_the_second(tmp_path):
    path = tmp_path / "two.jsonl"
    path.write_text('{"simulations": []}\n{"simulations": []}\n')
    with pytest.raises(InputError, match=rf"^{path}:2:1: expected one JSON document; another begins here"):
        prepare_import(path, "tau2")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_directory_or_a_missing_file_is_named_as_such(tmp_path, fmt):
    with pytest.raises(InputError, match=rf"^cannot read {tmp_path}: Is a directory$"):
        prepare_import(tmp_path, fmt)
    with pytest.raises(InputError, match=rf"^cannot read {tmp_path / 'nope.json'}: No such file or directory$"):
        prepare_import(tmp_path / "nope.json", fmt)


def _cut_tau2(tmp_path: Path) -> tuple[Path, str, str]:
    """The first 3000 bytes of a pretty-printed τ²-bench results file: the file, its format, what is said."""
    head = ONE_DOCUMENT["tau2"].read_bytes()[:3000]
    path = tmp_path / "trunc_tau2.json"
    path.write_bytes(head)
    return path, "tau2", f"{path}:{_end_of(head.decode())}: not JSON: unexpected end of file"


def _cut_eval(tmp_path: Path) -> tuple[Path, str, str]:
    """The first 2000 bytes of an Inspect .eval log (a zip)."""
    path = tmp_path / "trunc.eval"
    path.write_bytes((DATA / "inspect" / "phone_contacts.eval").read_bytes()[:2000])
    return path, "inspect", f"{path}: a damaged or truncated zip archive"


def _a_directory(tmp_path: Path) -> tuple[Path, str, str]:
    path = tmp_path / "somedir"
    path.mkdir()
    return path, "openai-chat", f"cannot read {path}: Is a directory"


BROKEN_FILES = [_cut_tau2, _cut_eval, _a_directory]


@pytest.mark.parametrize("broken", BROKEN_FILES, ids=lambda f: f.__name__.strip("_"))
def test_the_command_line_refuses_a_broken_file_in_one_line_and_writes_nothing(tmp_path, broken):
    path, fmt, said = broken(tmp_path)
    data = tmp_path / "data"
    proc = flywheel("import", str(path), "--format", fmt, "--data-dir", str(data), env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 1
    assert_one_clear_line(proc.stderr)
    assert proc.stderr.startswith(f"error: {said}"), proc.stderr
    assert not data.exists()
