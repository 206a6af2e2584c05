"""The one message schema of the chat-template formats (``hf``, ``dpo``, ``trl``): OpenAI-style
messages as transformers' tool-calling chat templates take them.

An assistant turn's ``tool_calls`` are ``{"id", "type": "function", "function": {"name",
"arguments"}}`` with ``arguments`` an object (a JSON string would be rendered double-encoded by a
template that writes ``arguments | tojson``), and a ``tool`` message carries the ``name`` of the
tool that answered beside its ``tool_call_id``. ``openai`` keeps OpenAI's own fine-tuning shape
(arguments as JSON text, as its API requires); sharegpt and adp have their own turn kinds.
"""

from __future__ import annotations

import json
from typing import Any

Turn = tuple[dict[str, Any], int | None]


def _object(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments  # kept as written: check_record names it
    return arguments


def template_messages(turns: list[Turn]) -> list[Turn]:
    """Chat turns (see :func:`curation.formats.openai_chat.chat_turns`) in the one schema: object
    arguments and named tool messages."""
    names: dict[str, str] = {}
    out: list[Turn] = []
    for msg, step in turns:
        msg = dict(msg)
        if msg.get("tool_calls"):
            calls = []
            for call in msg["tool_calls"]:
                fn = call["function"]
                names[call["id"]] = fn["name"]
                calls.append({**call, "function": {"name": fn["name"], "arguments": _object(fn["arguments"])}})
            msg["tool_calls"] = calls
        elif msg["role"] == "tool":
            msg["name"] = names.get(msg.get("tool_call_id"), "")
        out.append((msg, step))
    return out
