"""The model agent's chat: the conversation sent to the model, and the action read from its reply.
Pure: no I/O, no clock.

The conversation is rebuilt from the recorded steps, so an episode resumed from its
journal of replies sends exactly what it would have sent had it never stopped. A reply
that holds no usable action (bad JSON arguments, an unknown tool, text where a call was
required, nothing at all) becomes an ``invalid`` action with the raw text and the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from generators.phone.tools import META_SCHEMAS, openai_tool_schemas
from warehouse.contract import AGENT_SYSTEM_PROMPT, Action, Step, TaskSpec

SYSTEM_PROMPT = AGENT_SYSTEM_PROMPT
EPISODE_HEADER = "X-Flywheel-Episode"
TASK_HEADER = "X-Flywheel-Task"


@dataclass(frozen=True)
class ParsedReply:
    action: Action
    reason: str = ""  # why the reply is invalid; empty when it is usable


def tool_schemas(task: TaskSpec) -> list[dict[str, Any]]:
    """The functions the model may call: the task's exposed tools, ask_user and finish."""
    return openai_tool_schemas(task.tools)


def request_headers(task: TaskSpec, episode_id: str, rollout: int) -> dict[str, str]:
    """Headers that let a gateway (or the test server) group an episode's calls."""
    return {EPISODE_HEADER: episode_id, TASK_HEADER: f"{task.family}:{task.seed}:{task.difficulty}:{rollout}"}


def _tool_content(step: Step) -> str:
    fb = step.feedback
    body: dict[str, Any] = {"ok": True, "data": fb.result} if fb.ok else {
        "ok": False, "error": fb.error.model_dump() if fb.error else {"code": "ERROR"}}
    if fb.notices:
        body["notices"] = fb.notices
    return json.dumps(body, ensure_ascii=False, default=str)


def conversation(task: TaskSpec, steps: list[Step]) -> list[dict[str, Any]]:
    """The messages to send after ``steps``: system, the instruction, then each reply and its result.

    Shaped so every common server takes them (llama.cpp's, vLLM, Ollama, hosted APIs): an
    assistant turn with a tool call carries its text as a string, "" when there is none
    (llama.cpp's server refuses a null content); a tool result carries ``tool_call_id``
    and the tool's ``name``; call ids are the short ones :func:`call_id_for` gave.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": task.instruction}]
    for step in steps:
        a = step.action
        call_id = a.call_id or f"call{step.index:05d}"
        if a.kind == "invalid" and not a.tool:  # text or nothing where a call was required
            messages.append({"role": "assistant", "content": a.raw or a.text or ""})
            error = step.feedback.error.message if step.feedback.error else "no usable tool call"
            messages.append({"role": "user", "content": f"[harness] {error}. Reply with exactly one tool call."})
            continue
        arguments = a.raw if a.kind == "invalid" else json.dumps(a.arguments, ensure_ascii=False)
        messages.append({"role": "assistant", "content": a.text or "",
                         "tool_calls": [{"id": call_id, "type": "function",
                                         "function": {"name": a.tool, "arguments": arguments}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "name": a.tool, "content": _tool_content(step)})
    return messages


MAX_CALL_ID = 40  # OpenAI's own limit on a tool call id; other servers take at least as much
_CALL_ID = re.compile(r"[A-Za-z0-9_-]+")


def call_id_for(model_id: str, index: int, used: set[str]) -> str:
    """The id recorded for step ``index``'s call: the model's own when it is short, plain and new in
    this conversation, else one of ours, ``call00003`` (small models repeat ids or leave them out;
    some servers give ids too long for others to take back). Ours are 9 letters and digits, the
    one shape Mistral's templates take besides every other server's."""
    if model_id and len(model_id) <= MAX_CALL_ID and _CALL_ID.fullmatch(model_id) and model_id not in used:
        return model_id
    candidate, n = f"call{index:05d}", 0
    while candidate in used:
        n += 1
        candidate = f"c{n:03d}{index:05d}"
    return candidate


def with_call_id(parsed: ParsedReply, index: int, used: set[str]) -> ParsedReply:
    """``parsed`` with the id :func:`call_id_for` gives (actions that name no tool keep none)."""
    if not parsed.action.tool:
        return parsed
    action = parsed.action.model_copy(update={"call_id": call_id_for(parsed.action.call_id, index, used)})
    return replace(parsed, action=action)


def parse_reply(content: str | None, tool_calls: list[Any], allowed: set[str], reasoning: str = "") -> ParsedReply:
    """The action a reply asks for. ``tool_calls`` items have ``id``, ``name`` and raw ``arguments``."""
    text = "\n".join(t for t in (reasoning, content or "") if t).strip()
    if not tool_calls:
        if not text:
            return ParsedReply(Action(kind="invalid", raw=""), "empty reply")
        return ParsedReply(Action(kind="invalid", text=text, raw=content or ""),
                           "the reply was text where a tool call was required")
    call = tool_calls[0]  # one call per step; further parallel calls are not carried out
    name, raw, call_id = call.name, call.arguments, call.id
    if name not in allowed and name not in META_SCHEMAS:
        return ParsedReply(Action(kind="invalid", tool=name, call_id=call_id, text=text, raw=raw),
                           f"unknown tool {name!r}; available: {', '.join(sorted(allowed | set(META_SCHEMAS)))}")
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        return ParsedReply(Action(kind="invalid", tool=name, call_id=call_id, text=text, raw=raw),
                           f"the arguments of {name} are not valid JSON ({exc.msg} at {exc.pos})")
    if not isinstance(arguments, dict):
        return ParsedReply(Action(kind="invalid", tool=name, call_id=call_id, text=text, raw=raw),
                           f"the arguments of {name} must be a JSON object")
    kind = name if name in META_SCHEMAS else "tool_call"
    return ParsedReply(Action(kind=kind, tool=name, arguments=arguments, call_id=call_id, text=text))
