"""The learner's tool-calling template and its reply parser (issue 32).

The parser runs everywhere; the rendering cases need transformers (the ``train`` extra) and are
skipped without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generators.learner.template import chat_template, openai_tool_calls, parse_reply
from tests.curation_data import build_round
from tests.format_roundtrip import approve, export_rows

TOOLS = [{"type": "function", "function": {
    "name": "notes_search", "description": "Search notes.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "page": {"type": "integer"}},
                   "required": ["query"]}}}]


def test_a_reply_with_a_call_in_tags_becomes_an_openai_tool_call():
    parsed = parse_reply('Looking.\n<tool_call>{"name": "notes_search", "arguments": {"query": "Zoë\\n»x«"}}</tool_call>')
    assert parsed.content == "Looking."
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [("notes_search", {"query": "Zoë\n»x«"})]
    call = openai_tool_calls(parsed.calls, "c")[0]
    assert call["function"]["name"] == "notes_search" and json.loads(call["function"]["arguments"])["query"] == "Zoë\n»x«"


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "notes_search", "arguments": {"query": </tool_call>',  # broken JSON
    '<tool_call>{"arguments": {}}</tool_call>',  # no tool named
    '<tool_call>["notes_search"]</tool_call>',  # not an object
    'I would search the notes for it.',  # text only
])
def test_a_reply_without_a_usable_call_stays_text_and_is_never_guessed(text):
    parsed = parse_reply(text)
    assert parsed.calls == []
    assert parsed.content == text.strip()


def test_arguments_written_as_a_string_and_an_unclosed_last_tag_are_read():
    parsed = parse_reply('<tool_call>{"name": "finish", "arguments": "{\\"status\\": \\"completed\\"}"}')
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [("finish", {"status": "completed"})]


def _render(messages, tools, **kw):
    transformers = pytest.importorskip("transformers")
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, generation = render_jinja_template(conversations=[messages], tools=tools, chat_template=chat_template(),
                                                 return_assistant_tokens_mask=True, **kw)
    assert transformers
    return rendered[0], generation[0]


def test_the_template_renders_a_call_the_parser_reads_back_and_marks_only_the_assistant():
    call = {"id": "c1", "type": "function", "function": {"name": "notes_search", "arguments": {"query": "a \"b\"\nc"}}}
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Find it"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "name": "notes_search", "content": "{\"ok\": true}"}]
    text, spans = _render(messages, TOOLS)
    assert "- notes_search(query: string, page?: integer): Search notes." in text
    assistant = "".join(text[a:b] for a, b in spans)
    assert assistant.endswith("<|im_end|>") and '{"ok": true}' not in assistant and "Find it" not in assistant
    parsed = parse_reply(assistant)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [("notes_search", {"query": "a \"b\"\nc"})]
    # OpenAI requests carry the arguments as a JSON string: rendered the same
    as_string = {**call, "function": {**call["function"], "arguments": json.dumps(call["function"]["arguments"])}}
    assert _render([*messages[:2], {**messages[2], "tool_calls": [as_string]}, messages[3]], TOOLS)[0] == text


def test_an_argument_of_a_few_values_shows_them_so_the_model_can_read_them():
    """The phone's own volume tool: 'the alarm volume' must be readable as stream alarm, not guessed."""
    from generators.phone.tools import openai_tool_schemas

    tools = openai_tool_schemas(["device_set_volume", "device_grant_permission", "device_set_wifi"])
    text, _ = _render([{"role": "user", "content": "Alarm volume to 90"}], tools)
    assert "- device_set_volume(stream: ring|media|alarm, level: integer): " in text
    assert "device_grant_permission(permission: " + "|".join(tools[1]["function"]["parameters"]["properties"]
                                                           ["permission"]["enum"]) + ")" in text
    assert "- device_set_wifi(enabled: boolean): " in text


def test_the_template_renders_every_row_of_a_trl_export_and_trains_only_its_agent_turns(tmp_path: Path):
    pytest.importorskip("transformers")
    store, _ = build_round(tmp_path / "data", episodes=30, rollouts=1)
    rows, _ = export_rows(store, tmp_path, "trl", approve(store, {}))
    assert rows
    for row in rows:
        text, spans = _render(row["prompt"] + row["completion"], row["tools"])
        trained = "".join(text[a:b] for a, b in spans)
        agent = [m for m in row["completion"] if m["role"] == "assistant"]
        prompt_agent = [m for m in row["prompt"] if m["role"] == "assistant"]
        # the spans are the prompt's agent turns and the completion's: the trainer cuts the prompt's off
        assert trained.count("<|im_end|>") == len(agent) + len(prompt_agent)
        for message in agent:
            for call in message.get("tool_calls") or []:
                assert json.dumps(call["function"]["name"]) in trained
        tool_results = [m["content"] for m in row["completion"] if m["role"] == "tool"]
        assert all(r not in trained for r in tool_results if len(r) > 20)
