"""OpenAI chat fine-tuning records: ``messages`` with ``tool_calls`` and ``tool`` results,
plus ``tools`` with the task's exposed function schemas."""

from __future__ import annotations

import json
from typing import Any

from warehouse.contract import AGENT_SYSTEM_PROMPT, Step

SYSTEM_PROMPT = AGENT_SYSTEM_PROMPT  # what the model is run with, so what it trains on


def _call_id(step: Step) -> str:
    return step.action.call_id or f"call_{step.index}"


def _tool_call(step: Step) -> dict[str, Any]:
    return {
        "id": _call_id(step),
        "type": "function",
        "function": {"name": step.action.tool, "arguments": json.dumps(step.action.arguments, ensure_ascii=False)},
    }


def tool_content(step: Step) -> str:
    """A step's feedback as tool message text: ``{"ok": true, "data": ...}`` or ``{"ok": false, "error": ...}``."""
    fb = step.feedback
    if fb.ok:
        body: dict[str, Any] = {"ok": True, "data": fb.result}
    else:
        body = {"ok": False, "error": fb.error.model_dump() if fb.error else {"code": "ERROR"}}
    if fb.notices:
        body["notices"] = fb.notices
    return json.dumps(body, ensure_ascii=False, default=str)


def _assistant(step: Step) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "tool_calls": [_tool_call(step)]}
    if step.action.text:
        msg["content"] = step.action.text
    return msg


def chat_turns(instruction: str, steps: list[Step]) -> list[tuple[dict[str, Any], int | None]]:
    """(message, index of the step that produced it or None) for an episode's chat."""
    turns: list[tuple[dict[str, Any], int | None]] = [
        ({"role": "system", "content": SYSTEM_PROMPT}, None),
        ({"role": "user", "content": instruction}, None),
    ]
    for step in sorted(steps, key=lambda s: s.index):
        if step.actor != "planner":
            continue
        if step.action.kind == "invalid":
            turns.append(({"role": "assistant", "content": step.action.raw or step.action.text or ""}, step.index))
            error = step.feedback.error.message if step.feedback.error else "invalid call"
            turns.append(({"role": "user", "content": f"[harness] {error}"}, None))
            continue
        turns.append((_assistant(step), step.index))
        if step.action.kind == "finish":
            break
        turns.append(({"role": "tool", "tool_call_id": _call_id(step), "content": tool_content(step)}, None))
    # an episode that ended on a tool's answer (an import handed over elsewhere, a budget run out): the
    # last assistant turn closes the chat; the answer after it teaches nothing
    while len(turns) > 2 and turns[-1][0]["role"] == "tool":
        turns.pop()
    return turns


def check_record(record: dict[str, Any]) -> list[str]:
    """Problems that would make ``record`` an invalid chat fine-tuning line (empty: valid)."""
    problems: list[str] = []
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages missing or empty"]
    tools = record.get("tools")
    if "tools" not in record and not any(m.get("tool_calls") for m in messages if isinstance(m, dict)):
        pass  # a conversation that never had tools (an import) needs no tools list
    elif not isinstance(tools, list) or not tools:
        problems.append("tools missing or empty")
    else:
        for t in tools:
            fn = t.get("function", {}) if isinstance(t, dict) else {}
            if t.get("type") != "function" or not fn.get("name") or not isinstance(fn.get("parameters"), dict):
                problems.append(f"malformed tool schema: {t!r:.80}")
    names = {t["function"]["name"] for t in tools or [] if isinstance(t, dict) and "function" in t}
    open_calls: set[str] = set()
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role not in {"system", "user", "assistant", "tool"}:
            problems.append(f"message {i}: unknown role {role!r}")
        if role == "assistant":
            if not msg.get("tool_calls") and not isinstance(msg.get("content"), str):
                problems.append(f"message {i}: assistant message without content or tool_calls")
            for call in msg.get("tool_calls", []):
                fn = call.get("function", {})
                if fn.get("name") not in names:
                    problems.append(f"message {i}: call to {fn.get('name')!r} not in tools")
                try:
                    json.loads(fn.get("arguments", ""))
                except (TypeError, ValueError):
                    problems.append(f"message {i}: arguments are not JSON")
                open_calls.add(call.get("id"))
        elif role == "tool":
            if msg.get("tool_call_id") not in open_calls:
                problems.append(f"message {i}: tool result for unknown call {msg.get('tool_call_id')!r}")
            open_calls.discard(msg.get("tool_call_id"))
            if not isinstance(msg.get("content"), str):
                problems.append(f"message {i}: tool content is not a string")
        elif not isinstance(msg.get("content"), str):
            problems.append(f"message {i}: content is not a string")
    if messages[-1].get("role") != "assistant":
        problems.append("last message is not from the assistant")
    return problems
