"""One message schema in the chat-template formats: every export rendered through one tool-calling
chat template (jinja2, written the way Qwen-style templates write calls: ``arguments | tojson``) gives
calls whose arguments are objects, not double-encoded strings, and tool replies named by their call."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import jinja2
import pyarrow.parquet as pq
import pytest

from curation.export_run import run_export
from tests.conftest import export_dir
from tests.curation_data import build_round

TEMPLATE = """
{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.content %}{{ m.content }}{% endif %}
{%- for tc in m.tool_calls or [] %}
<tool_call>{"id": {{ tc.id | tojson }}, "name": {{ tc.function.name | tojson }}, "arguments": {{ tc.function.arguments | tojson }}}</tool_call>
{%- endfor %}
{%- if m.role == "tool" %}<tool_response call={{ m.tool_call_id | tojson }} name={{ m.name | tojson }}>{% endif %}
{% endfor -%}
"""
CALL = re.compile(r"<tool_call>(.*?)</tool_call>")
RESPONSE = re.compile(r'<tool_response call=("[^"]*") name=("[^"]*")>')


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    store, round_id = build_round(tmp_path_factory.mktemp("schema") / "data", episodes=60, rollouts=3)
    con = store.duck([round_id])
    out: dict[str, list[list[dict]]] = {}
    for fmt in ("hf", "dpo", "trl", "openai"):
        with tempfile.TemporaryDirectory() as d:
            _, manifest = run_export(con, fmt, Path(d), rounds=[round_id], decisions={}, include_verified=True,
                                     scrubber=None, pairs="both")
            rows = []
            for name in manifest["files"]:
                if name.endswith(".jsonl"):
                    rows += [json.loads(line) for line in (export_dir(d, manifest) / name).read_text(encoding="utf-8").splitlines()]
                elif name.endswith(".parquet"):
                    rows += pq.read_table(export_dir(d, manifest) / name).to_pylist()
        out[fmt] = [_conversations(fmt, r) for r in rows]
    return out


def _conversations(fmt: str, row: dict) -> list[list[dict]]:
    """The message lists a trainer renders from one row of ``fmt``."""
    if fmt == "hf":  # a message's tool_calls is JSON text in Parquet; the rest are columns
        return [[{k: (json.loads(v) if k == "tool_calls" and v else v) for k, v in m.items() if v is not None}
                 for m in row["messages"]]]
    if fmt == "dpo":
        return [row["prompt"] + row["chosen"], row["prompt"] + row["rejected"]]
    if fmt == "trl":
        return [row["prompt"] + row["completion"]]
    return [row["messages"]]


def _render(messages: list[dict]) -> str:
    return jinja2.Environment().from_string(TEMPLATE).render(messages=messages)


@pytest.mark.parametrize("fmt", ["hf", "dpo", "trl"])
def test_every_chat_template_format_renders_object_arguments_and_named_tool_replies(exports, fmt):
    rendered = calls = replies = 0
    for conversations in exports[fmt]:
        for messages in conversations:
            text = _render(messages)
            names = {}
            for block in CALL.findall(text):
                call = json.loads(block)
                assert isinstance(call["arguments"], dict), (fmt, block)  # not a JSON string rendered again
                names[call["id"]] = call["name"]
                calls += 1
            for call_id, name in RESPONSE.findall(text):
                assert json.loads(name) == names[json.loads(call_id)] != "", (fmt, call_id)
                replies += 1
            rendered += 1
    assert rendered and calls and replies


def test_the_formats_carry_the_same_messages(exports):
    """A conversation's messages are the same dicts in every chat-template format (trl's rows are
    prefixes of the episode, dpo's sides continue a shared prompt): each one is found in hf."""
    hf = {json.dumps(m, sort_keys=True) for convs in exports["hf"] for msgs in convs for m in msgs
          if m["role"] != "system"}
    for fmt in ("trl", "dpo"):
        msgs = [m for convs in exports[fmt] for ms in convs for m in ms if m["role"] == "assistant"]
        assert msgs
        shared = sum(json.dumps({**m, "loss": True}, sort_keys=True) in hf
                     or json.dumps({**m, "loss": False}, sort_keys=True) in hf for m in msgs)
        assert shared / len(msgs) > 0.5, fmt


def test_openai_keeps_openais_shape_json_text_arguments():
    from curation.formats.openai_chat import check_record

    assert check_record({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}) == ["message 1: arguments are not JSON"]
