"""Hostile records in an import (issues 28 and 33): a record nested 100,000 deep (deeper than Python's
parser recurses), one nested a few hundred deep (deeper than the warehouse writes), and a record whose
own ``tools`` are no schemas are each skipped with ``warning: FILE: line N: skipped: WHY``; the good
records are imported. A whole document too deep is one line. Never an internal error."""

from __future__ import annotations

import json

import pytest

from tests.conftest import cli_env, flywheel
from warehouse.query import iter_records
from warehouse.store import Store

GOOD = {"task_id": 1, "messages": [{"role": "system", "content": "Airline agent."}, {"role": "user", "content": "Hi"},
                                   {"role": "assistant", "content": "Hello! How can I help?"}]}


def deep(n: int) -> str:
    return "[" * n + "]" * n


def chat_line(nesting: str, where: str) -> str:
    call = '{"id": "c1", "type": "function", "function": {"name": "get_user_details", "arguments": ARGS}}'
    args = '{"user_id": ' + nesting + "}" if where == "arguments" else '{"user_id": "u1"}'
    result = json.dumps(nesting) if where == "result text" else nesting if where == "result" else '"ok"'
    return ('{"task_id": 2, "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": null, '
            '"tool_calls": [' + call.replace("ARGS", args) + ']}, {"role": "tool", "tool_call_id": "c1", "content": '
            + result + '}]}')


def otel_line(nesting: str) -> str:
    """An OTLP export whose span attribute is an array nested ``nesting`` deep."""
    value = nesting.replace("[", '{"arrayValue": {"values": [').replace("]", "]}}")
    return ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "01", "spanId": "02", "name": "chat", '
            '"attributes": [{"key": "x", "value": ' + value + '}]}]}]}]}')


def otel_good() -> str:
    msgs = [{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]
    out = [{"role": "assistant", "parts": [{"type": "text", "content": "Hello!"}]}]
    attrs = [{"key": k, "value": {"stringValue": v}} for k, v in (
        ("gen_ai.operation.name", "chat"), ("gen_ai.input.messages", json.dumps(msgs)),
        ("gen_ai.output.messages", json.dumps(out)))]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "aa", "spanId": "bb", "name": "chat", "attributes": attrs, "status": {}}]}]}]})


def adp_line(nesting: str) -> str:
    return ('{"schema_version": "1.2.0", "id": "t2", "content": [{"class_": "text_observation", "content": "Hi", '
            '"source": "user"}, {"class_": "api_action", "function": "f", "tool_call_id": "c", "kwargs": {"x": '
            + nesting + '}}]}')


ADP_GOOD = json.dumps({"schema_version": "1.2.0", "id": "t1", "content": [
    {"class_": "text_observation", "content": "Hi", "source": "user"}, {"class_": "message_action", "content": "Hello!"}]})


def _import(tmp_path, fmt: str, lines: list[str]):
    src = tmp_path / "hostile.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = flywheel("import", str(src), "--format", fmt, env=cli_env(None), cwd=tmp_path)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    return proc


CASES = [
    ("openai-chat", [json.dumps(GOOD), chat_line(deep(100_000), "arguments")], "nested too deeply to read"),
    ("openai-chat", [json.dumps(GOOD), chat_line(deep(100_000), "result")], "nested too deeply to read"),
    ("openai-chat", [json.dumps(GOOD), chat_line(deep(600), "result")], "nested deeper than 100 levels"),
    ("openai-chat", [json.dumps(GOOD), chat_line(deep(300), "arguments")], "nested deeper than 100 levels"),
    ("openai-chat", [json.dumps(GOOD), chat_line(deep(300), "result text")], "the result is nested deeper than 100"),
    ("openai-chat", [json.dumps(GOOD), chat_line(deep(100_000), "result text")], "the result is nested too deeply"),
    ("otel", [otel_good(), otel_line(deep(100_000))], "nested too deeply to read"),
    ("otel", [otel_good(), otel_line(deep(2_000))], "nested too deeply to read"),
    ("adp", [ADP_GOOD, adp_line(deep(100_000))], "nested too deeply to read"),
    ("adp", [ADP_GOOD, adp_line(deep(600))], "nested deeper than 100 levels"),
]


@pytest.mark.parametrize(("fmt", "lines", "why"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_record_nested_too_deep_is_skipped_and_the_rest_imported(tmp_path, fmt, lines, why):
    proc = _import(tmp_path, fmt, lines)
    assert proc.returncode == 0, proc.stderr
    [warning] = proc.stderr.strip().splitlines()
    assert warning.startswith(f"warning: {tmp_path / 'hostile.jsonl'}: line 2") and ": skipped: " in warning, warning
    assert why in warning, warning
    assert "Imported 1 episodes" in proc.stdout


def test_a_record_whose_own_tools_are_no_schemas_is_skipped(tmp_path):
    bad = {**GOOD, "task_id": 3, "tools": [{"type": "function", "function": {"name": "f", "parameters": "oops"}}]}
    proc = _import(tmp_path, "openai-chat", [json.dumps(GOOD), json.dumps(bad)])
    assert proc.returncode == 0, proc.stderr
    [warning] = proc.stderr.strip().splitlines()
    assert ": line 2: skipped: " in warning and "parameters" in warning, warning
    [ep] = iter_records(Store(tmp_path / "flywheel-data").duck(), "episodes")
    assert ep.task_id == "hostile:1"


@pytest.mark.parametrize("fmt", ["tau2", "inspect", "openai-chat"])
def test_a_whole_document_too_deep_is_one_line(tmp_path, fmt):
    src = tmp_path / "deep.json"
    src.write_text('{"simulations": ' + deep(100_000) + "}" if fmt != "openai-chat" else deep(100_000))
    proc = flywheel("import", str(src), "--format", fmt, env=cli_env(None), cwd=tmp_path)
    assert proc.returncode != 0 and proc.stderr.strip() == f"error: {src}: nested too deeply to read (JSON deeper than " \
        "the parser's recursion limit)", proc.stderr
    assert not (tmp_path / "flywheel-data").exists()


def test_an_eval_member_that_decompresses_past_the_limit_is_refused_in_one_line(tmp_path, monkeypatch):
    import zipfile

    from flows import import_readers
    from flows.stages.importing import prepare_import
    from warehouse.errors import InputError

    path = tmp_path / "bomb.eval"
    sample = {"id": 1, "epoch": 1, "messages": [{"role": "user", "content": "x" * 5000}, {"role": "assistant", "content": "ok"}]}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps({"eval": {"task": "t"}}))
        zf.writestr("samples/1_epoch_1.json", json.dumps(sample))
    monkeypatch.setattr(import_readers, "MEMBER_LIMIT", 4000)
    with pytest.raises(InputError, match=r"bomb.eval: member samples/1_epoch_1.json decompresses to more than 0 MB; refused"):
        prepare_import(path, "inspect")
    monkeypatch.setattr(import_readers, "MEMBER_LIMIT", 10_000)
    assert prepare_import(path, "inspect").summary.records == 1
