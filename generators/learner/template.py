"""The tool-calling chat template used in training and serving alike, and the parser of its replies.

SmolLM2's own template knows no tools. Ours (``tool_chat.jinja``) is ChatML with the tools listed
in the system turn, one line each, and each tool call written as JSON in ``<tool_call>`` tags. A
model trained on what it renders writes replies :func:`parse_reply` reads back into OpenAI tool
calls. Pure: no model, no I/O beyond reading the template file once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

TEMPLATE_FILE = Path(__file__).with_name("tool_chat.jinja")
END_OF_TURN = "<|im_end|>"
_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)


@cache
def chat_template() -> str:
    """The template's text, as a tokenizer's ``chat_template`` takes it."""
    return TEMPLATE_FILE.read_text()


@dataclass
class ParsedCall:
    name: str
    arguments: str  # JSON text (an object), or the raw text when it was not JSON


@dataclass
class ParsedReply:
    content: str  # the text outside the tool calls
    calls: list[ParsedCall] = field(default_factory=list)


def parse_reply(text: str) -> ParsedReply:
    """The text and tool calls of a reply the template taught a model to write.

    A call whose JSON is broken, or that names no tool, is kept as text: the harness then
    records the reply as invalid with its raw text, never a guessed call."""
    text = text.split(END_OF_TURN, 1)[0]
    calls: list[ParsedCall] = []
    spans: list[tuple[int, int]] = []
    for match in _CALL.finditer(text):
        try:
            body = json.loads(match.group(1).strip())
        except ValueError:
            continue
        if not isinstance(body, dict) or not isinstance(body.get("name"), str) or not body["name"]:
            continue
        arguments = body.get("arguments", {})
        if isinstance(arguments, str):  # a model may write the arguments as a JSON string
            raw = arguments
        else:
            raw = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
        calls.append(ParsedCall(body["name"], raw))
        spans.append(match.span())
    content = text
    for start, end in reversed(spans):
        content = content[:start] + content[end:]
    return ParsedReply(content.strip(), calls)


def openai_tool_calls(calls: list[ParsedCall], prefix: str) -> list[dict[str, Any]]:
    """``calls`` as an OpenAI chat completion message's ``tool_calls``."""
    return [{"id": f"{prefix}{i}", "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for i, c in enumerate(calls)]
