"""ShareGPT-style conversations (the LLaMA-Factory layout) with a per-turn loss flag.

Roles: ``human`` (the instruction, harness messages), ``function_call`` (the agent's
call, as JSON), ``observation`` (the tool's reply), ``gpt`` (the agent's final text,
when it wrote one). Every agent turn carries ``loss``: False when the heuristics or a
reviewer marked its step wrong, so a trainer can mask it; non-agent turns never count.
"""

from __future__ import annotations

import json
from typing import Any

_ROLE = {"user": "human", "tool": "observation"}


def to_sharegpt(turns: list[tuple[dict[str, Any], int | None]], masked: set[int], meta: dict[str, Any],
                tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One record from OpenAI-style turns (see :func:`curation.formats.openai_chat.chat_turns`)."""
    system = ""
    conversations: list[dict[str, Any]] = []
    for msg, step in turns:
        role = msg["role"]
        if role == "system":
            system = msg["content"]
            continue
        if role == "assistant":
            loss = step not in masked
            if msg.get("content"):
                conversations.append({"from": "gpt", "value": msg["content"], "loss": loss})
            for call in msg.get("tool_calls", []):
                fn = call["function"]
                conversations.append({"from": "function_call", "loss": loss,
                                      "value": json.dumps({"name": fn["name"], "arguments": json.loads(fn["arguments"])},
                                                          ensure_ascii=False)})
        else:
            conversations.append({"from": _ROLE[role], "value": msg["content"], "loss": False})
    return {"id": meta["episode_id"], "system": system, "tools": json.dumps([t["function"] for t in tools], ensure_ascii=False),
            "conversations": conversations, "metadata": meta}
