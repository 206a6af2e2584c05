"""Building blocks the format importers share: they turn each source record into the
OpenAI-chat shape :mod:`generators.importers.openai_chat` reads, so every format gets the
same guarantees (malformed records named and skipped, ids from content, one round per file).

Pure: values in, values out. A tool error keeps the tool's content as recorded and adds an ``error``
({code, message}) to the tool message, which the chat importer reads as a failed step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Parsed:
    """One source record as a chat record (``value``), or why it cannot be one (``problem``)."""

    where: str  # where it is in the file, as the user reads it ("line 3", "simulation 2 (task 7, trial 0)")
    number: int
    value: Any = None
    problem: str = ""


# what an odd value in a record raises here (a value nested deeper than Python recurses: RecursionError)
BAD_SHAPE = (ValueError, TypeError, AttributeError, KeyError, OverflowError, RecursionError)


def problem_of(exc: Exception) -> str:
    """The reason a record cannot be imported: our own message, or the odd value's."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return str(exc) if type(exc) is ValueError else f"unexpected shape ({type(exc).__name__}: {exc})"


def tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """An OpenAI tool call; ``arguments`` an object (kept as is) or JSON text."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_result(call_id: str, content: Any, *, error: tuple[str, str] | None = None, name: str = "") -> dict[str, Any]:
    """A tool message answering ``call_id``, its content as recorded (text, or JSON text of a value);
    ``error`` is (code, message) when the call failed (the content is then the message when it has none)."""
    body = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    msg: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": body}
    if error is not None:
        msg["content"] = body or error[1]
        msg["error"] = {"code": error[0] or "ERROR", "message": error[1]}
    if name:
        msg["name"] = name
    return msg


def text_of(content: Any, key: str = "text") -> str:
    """Text of a message content: a string, or the ``key`` fields of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get(key, "")) for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return ""


def drop_closing_user_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without the user turns after the agent's last message (a simulated user's stop signal), so the
    agent's last text reads as its closing answer rather than a question."""
    end = len(messages)
    while end and messages[end - 1].get("role") == "user":
        end -= 1
    return messages[:end] if end else messages
