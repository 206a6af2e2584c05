"""Import OpenAI chat trajectories (``messages`` with ``tool_calls`` and ``tool`` results). Pure.

Each conversation becomes an Episode (source="external") that keeps the conversation as recorded
(``Episode.messages``: its system prompt, text turns and tool results verbatim; exports write it),
its Steps (see :func:`warehouse.contract.step_counts`: tool calls, the agent's and the user's text
turns as ``message`` steps, nothing invented; a call without a result carries ``missing_result``)
and an Outcome. Its task spec has the instruction and the record's own tool schemas but no
requirements and no world behind it, so no replay: verification fields are empty, success comes
from an optional ``reward``. Ids come from the content and the source (task ids are scoped by it),
so the same conversation imported twice from one source is the same episode.

Optional keys the other formats' importers fill (and a user may too): ``rollout`` (an epoch or
trial), ``success`` (the source's own verdict), ``reward_breakdown`` ({name: value}, kept as
per-requirement results), ``reward_checks`` ([{id, passed, detail}]: the source's own checks, each kept
whole as a per-requirement result with its detail as JSON), ``masked_steps`` (step indices left out of training: labelled wrong,
so curation masks them again) and ``termination`` (why an unfinished conversation stopped).
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from typing import Any

from generators.importers.tool_schemas import normalised_schemas
from generators.phone.families import split_for_template
from generators.phone.tools import TOOLS, openai_tool_schemas
from warehouse.contract import (
    HARNESS,
    MISSING_RESULT,
    Action,
    Episode,
    EpisodeRecord,
    Feedback,
    Outcome,
    RequirementResult,
    Step,
    TaskSpec,
    ToolError,
    Verification,
    message_text,
    step_counts,
)
from warehouse.ids import canonical_json, digest

META = {"finish", "ask_user"}


class MalformedRecord(ValueError):
    """One record cannot be imported; the message says why."""


MAX_DEPTH = 100  # a record (or a result or arguments it holds as JSON text) nested deeper is skipped


def nested_deeper(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels deep (read without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False


def _loads(text: str, what: str) -> Any:
    """JSON text held in a record (a result, arguments); MalformedRecord when nested too deeply."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise MalformedRecord(f"{what} is nested too deeply to read") from None
    if nested_deeper(value):
        raise MalformedRecord(f"{what} is nested deeper than {MAX_DEPTH} levels")
    return value


_ERROR_TEXT = re.compile(r"^\s*(error|exception|traceback)\b", re.IGNORECASE)


def _tool_error(error: Any) -> ToolError:
    if isinstance(error, dict):
        return ToolError(code=str(error.get("code") or error.get("type") or "ERROR"),
                         message=str(error.get("message") or error.get("detail") or json.dumps(error, default=str)))
    return ToolError(code="ERROR", message=str(error))


OURS = {"ok", "data", "error", "notices"}  # the keys of our own tool envelope


def _feedback(content: Any, error: Any = None, where: str = "a tool result") -> Feedback:
    """Feedback from a tool message (for review and curation; exports write the content as recorded): our own
    {"ok", "data"/"error"} envelope only when the whole object is ours; an error when the message says so
    (``error``), the result has an ``error`` key or its text starts with one ("Error: ..."); else the result."""
    try:
        body = _loads(content, where) if isinstance(content, str) else content
    except MalformedRecord:
        raise
    except ValueError:
        body = content
    if error not in (None, False, ""):
        return Feedback(ok=False, error=_tool_error(error), result=body)
    if isinstance(body, dict) and isinstance(body.get("ok"), bool) and set(body) <= OURS:
        err = None if body["ok"] else _tool_error(body.get("error"))
        return Feedback(ok=body["ok"], error=err, result=body.get("data"), notices=[str(n) for n in body.get("notices") or []])
    if isinstance(body, dict) and body.get("error") not in (None, False, ""):
        return Feedback(ok=False, error=_tool_error(body["error"]), result=body)
    if isinstance(body, str) and _ERROR_TEXT.match(body):
        return Feedback(ok=False, error=ToolError(code="ERROR", message=body.strip()[:500]), result=body)
    return Feedback(ok=True, result=body)


def _text(message: dict[str, Any]) -> str:
    return message_text(message)


def _invalid_reply(msg: dict[str, Any], after: Any) -> ToolError | None:
    """Why an assistant turn was not an action, or None: the turn names it (``invalid``: {code, message}, as
    the ADP importer writes it), or, as our chat exports write it, the next turn is the harness's notice."""
    if msg.get("tool_calls"):
        return None
    if isinstance(msg.get("invalid"), dict):
        return _tool_error(msg["invalid"])
    if isinstance(after, dict) and after.get("role") == "user" and _text(after).startswith(HARNESS):
        return ToolError(code="INVALID_ACTION", message=_text(after).removeprefix(HARNESS))
    return None


def recorded_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """The conversation as it is kept (:attr:`Episode.messages`): OpenAI chat messages with text content,
    call arguments as JSON text (as recorded when they were text), tool results verbatim. MalformedRecord
    for a message that is none of these."""
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in {"system", "user", "assistant", "tool", "developer"}:
            raise MalformedRecord(f"message {i} has no known role")
        role = "system" if msg["role"] == "developer" else msg["role"]
        kept: dict[str, Any] = {"role": role, "content": _text(msg)}
        if role == "assistant" and msg.get("tool_calls"):
            calls = msg["tool_calls"]
            if not isinstance(calls, list):
                raise MalformedRecord(f"message {i}: tool_calls is not a list")
            kept["tool_calls"] = []
            for j, call in enumerate(calls):
                fn = call.get("function") if isinstance(call, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
                    raise MalformedRecord(f"message {i}: a tool call without a function name")
                raw = fn.get("arguments")
                args = raw if isinstance(raw, str) else json.dumps({} if raw is None else raw, ensure_ascii=False)
                kept["tool_calls"].append({"id": str(call.get("id") or f"call_{i}_{j}"), "type": "function",
                                           "function": {"name": fn["name"], "arguments": args}})
        elif role == "tool":
            content = msg.get("content")
            kept["content"] = content if isinstance(content, str) else _text(msg) if isinstance(content, list) else (
                "" if content is None else json.dumps(content, ensure_ascii=False))
            kept["tool_call_id"] = str(msg.get("tool_call_id") or "")
            if isinstance(msg.get("name"), str) and msg["name"]:
                kept["name"] = msg["name"]
        out.append(kept)
    return out


def _call_step(eid: str, index: int, call: dict[str, Any], text: str) -> Step:
    fn = call["function"]
    raw = fn["arguments"]
    try:
        args = _loads(raw, f"the arguments of call {call['id']!r}") if raw.strip() else {}
    except MalformedRecord:
        raise
    except ValueError:
        args = None
    if not isinstance(args, dict):
        action = Action(kind="invalid", tool=fn["name"], call_id=call["id"], text=text, raw=raw)
    else:
        kind = fn["name"] if fn["name"] in META else "tool_call"
        action = Action(kind=kind, tool=fn["name"], arguments=args, call_id=call["id"], text=text)
    return Step(episode_id=eid, index=index, action=action, feedback=Feedback(ok=True, notices=[MISSING_RESULT]),
                verification=Verification(label="invalid_call" if action.kind == "invalid" else "ok"))


def _steps(eid: str, source: list[Any], kept: list[dict[str, Any]]) -> list[Step]:
    """The steps of a conversation (see :mod:`warehouse.conversation`): ``source`` the record's messages,
    ``kept`` the same as :func:`recorded_messages` keeps them."""
    steps: list[Step] = []
    pending: dict[str, int] = {}  # call id -> index of its step, until its result arrives
    counts = step_counts(kept)
    for i, msg in enumerate(kept):
        role = msg["role"]
        if role == "assistant":
            invalid = _invalid_reply(source[i], kept[i + 1] if i + 1 < len(kept) else None)
            if invalid is not None:  # a reply that was no action: kept as the invalid step it was
                steps.append(Step(episode_id=eid, index=len(steps), action=Action(kind="invalid", text=msg["content"],
                                                                                  raw=msg["content"]),
                                  feedback=Feedback(ok=False, error=invalid), verification=Verification(label="invalid_call")))
                continue
            text = msg["content"]
            for call in msg.get("tool_calls") or []:
                pending[call["id"]] = len(steps)
                steps.append(_call_step(eid, len(steps), call, text))
                text = ""  # the text goes with the first call of the message
            if not msg.get("tool_calls"):  # a text turn, as it was: no question, no finish invented
                steps.append(Step(episode_id=eid, index=len(steps), action=Action(kind="message", text=text),
                                  feedback=Feedback(ok=True)))
        elif role == "user" and counts[i]:
            steps.append(Step(episode_id=eid, index=len(steps), actor="user",
                              action=Action(kind="message", text=msg["content"]), feedback=Feedback(ok=True)))
        elif role == "tool":
            call_id = msg["tool_call_id"]
            if call_id not in pending:
                raise MalformedRecord(f"message {i}: a tool result for unknown call {call_id!r}")
            step = steps[pending.pop(call_id)]
            step.feedback = _feedback(msg["content"], source[i].get("error"), f"message {i}: the result")
    return steps


def scoped_task_id(source: str, key: Any) -> str:
    """A task id scoped by its source (``airline:0``): two files that both number their tasks 0, 1, 2 are
    different tasks."""
    return f"{source}:{key}" if source else str(key)


def episode_from_record(value: Any, *, batch_id: str, created_at: datetime, source: str = "") -> EpisodeRecord:
    """One conversation as an external episode of ``source`` (task ids are scoped by it).
    MalformedRecord says what is wrong with it."""
    if not isinstance(value, dict):
        raise MalformedRecord("a record must be a JSON object")
    messages = value.get("messages")
    if not isinstance(messages, list) or not messages:
        raise MalformedRecord("no messages")
    if nested_deeper(value):
        raise MalformedRecord(f"nested deeper than {MAX_DEPTH} levels")
    eid = f"x-{digest(canonical_json({'source': source, 'record': value}) if source else canonical_json(value), 16)}"
    kept = recorded_messages(messages)
    steps = _steps(eid, messages, kept)
    if not any(s.actor == "planner" for s in steps):
        raise MalformedRecord("no assistant turn")
    _mark_masked(steps, value.get("masked_steps"))
    task = value.get("task") if isinstance(value.get("task"), dict) else {}
    instruction = next((m["content"] for m in kept if m["role"] == "user"), "")
    key = next((k for k in (task.get("task_id"), value.get("task_id")) if k is not None and k != ""), None)
    if isinstance(key, dict | list):
        raise MalformedRecord("task_id must be a string or a number")
    task_key = scoped_task_id(source, key if key is not None else f"t-ext-{digest(instruction, 12)}")
    family, template = str(task.get("family") or "external"), str(task.get("template") or "external")
    reward = value.get("reward")
    if reward is not None and not isinstance(reward, int | float):  # a bool is an int: True / False work
        raise MalformedRecord(f"reward must be a number or a boolean, got {reward!r}")
    progress = _finite(reward) if reward is not None else 0.0
    planner = [s for s in steps if s.actor == "planner"]
    finished = planner[-1].action.kind == "finish"  # the agent's own finish call (our exports have one)
    finish_args = planner[-1].action.arguments if finished else {}
    last_agent = next((m for m in reversed(kept) if m["role"] == "assistant"), None)
    closing = last_agent["content"] if last_agent and not last_agent.get("tool_calls") and last_agent["content"] else None
    outcome = Outcome(
        # not finished here: the conversation ended in its own harness; its named reason where it gives one of ours
        episode_id=eid, termination="finished" if finished else _termination(value.get("termination")),
        finish_status=str(finish_args.get("status", "")),
        final_answer=finish_args.get("answer") if finished else closing,
        # the record's own success where it states one; else from the reward; no reward: unknown, not a failure
        success=value["success"] if isinstance(value.get("success"), bool) else (None if reward is None else progress >= 0.5),
        progress=max(0.0, min(1.0, progress)),
        steps=len(steps), tool_calls=sum(1 for s in steps if s.action.kind == "tool_call"),
        requirement_results=_breakdown(value.get("reward_breakdown")) + _checks(value.get("reward_checks")),
    )
    episode = Episode(
        episode_id=eid, task_id=task_key, family=family, template=template, instruction=instruction,
        split=_split(task, family, template),
        policy=str(value.get("policy") or "external"), model=str(value.get("model") or ""),
        rollout=_rollout(value.get("rollout")), round_id="external", batch_id=batch_id, source="external",
        created_at=created_at, messages=kept,
    )
    return EpisodeRecord(episode=episode, steps=steps, outcome=outcome)


def _termination(value: Any) -> str:
    """Why an unfinished conversation stopped: the record's own reason when it names one of ours."""
    return value if value in ("budget_exhausted", "invalid_replies", "endpoint_error", "harness_error") else "external"


def _rollout(value: Any) -> int:
    """The record's rollout number (an eval's epoch, a benchmark's trial), 0 when it has none."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedRecord(f"rollout must be a non-negative integer, got {value!r}")
    return value


def _breakdown(value: Any) -> list[RequirementResult]:
    """A reward's named parts ({name: value}) as per-requirement results (passed at 1.0, value kept in detail)."""
    if value is None:
        return []
    if not isinstance(value, dict) or not all(isinstance(v, int | float) for v in value.values()):
        raise MalformedRecord("reward_breakdown must map names to numbers")
    return [RequirementResult(id=str(k), passed=float(v) >= 1.0, detail=json.dumps({"reward": v}))
            for k, v in value.items()]


def _checks(value: Any) -> list[RequirementResult]:
    """The source's own checks ([{id, passed, detail}]) as per-requirement results, each detail kept whole."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(c, dict) and isinstance(c.get("id"), str)
                                              and isinstance(c.get("passed"), bool) for c in value):
        raise MalformedRecord("reward_checks must be a list of {id, passed, detail}")
    return [RequirementResult(id=c["id"], passed=c["passed"], detail=json.dumps(c.get("detail"), ensure_ascii=False))
            for c in value]


def _mark_masked(steps: list[Step], masked: Any) -> None:
    """Steps the source left out of training come in labelled as wrong, so curation masks them again."""
    if masked is None:
        return
    if not isinstance(masked, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in masked):
        raise MalformedRecord("masked_steps must be a list of step indices")
    for i in masked:
        if not 0 <= i < len(steps):
            raise MalformedRecord(f"masked step {i} is not a step of the conversation")
        if steps[i].verification.label == "ok":
            steps[i].verification.label = "harmful"


SPLITS = ("train", "dev", "test", "challenge")


def _finite(reward: int | float) -> float:
    """The reward as a float; MalformedRecord for NaN, infinities and integers too big for a float
    (NaN compares false with everything, so it would pass for a failure)."""
    try:
        value = float(reward)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise MalformedRecord(f"reward must be a finite number, got {str(reward)[:20]}")
    return value


def _split(task: dict[str, Any], family: str, template: str) -> str:
    """The record's own split when it names one, else the variant's split, as for collected tasks."""
    split = task.get("split")
    return split if split in SPLITS else split_for_template(family, template)


def record_schemas(value: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The record's own function schemas (OpenAI ``tools``) by name, or None when it has none usable."""
    tools = value.get("tools")
    if not isinstance(tools, list):
        return None
    usable = [t for t in tools if isinstance(t, dict) and isinstance(t.get("function"), dict)
              and isinstance(t["function"].get("name"), str) and t["function"]["name"]]
    return normalised_schemas(usable) if usable else None


def called_tools(record: EpisodeRecord) -> list[str]:
    """The tools a conversation called, in first-call order (finish and ask_user aside)."""
    return list(dict.fromkeys(s.action.tool for s in record.steps
                              if s.action.kind in ("tool_call", "invalid") and s.action.tool not in META))


def task_from_record(value: dict[str, Any], record: EpisodeRecord, given: dict[str, dict[str, Any]] | None = None,
                     inferred: dict[str, dict[str, Any]] | None = None, called: list[str] | None = None) -> TaskSpec:
    """The task of an imported conversation: its instruction and tools, no requirements (it cannot be checked).

    Schemas: the record's own ``tools``, else ``given`` (a ``--tools`` file) for the tools called (``called``:
    by every conversation of the task; default this one's); a called tool neither describes gets its
    ``inferred`` schema (named in ``tool_schemas_inferred``)."""
    ep = record.episode
    own = record_schemas(value)
    called = called if called is not None else called_tools(record)
    schemas = dict(own) if own is not None else {n: given[n] for n in called if given and n in given}
    guessed = [n for n in called if n not in schemas and n not in TOOLS and inferred and n in inferred]
    if schemas or guessed:  # the phone's own tools keep their real schemas beside the others
        schemas.update({n: openai_tool_schemas([n])[0] for n in called if n not in schemas and n in TOOLS})
    schemas.update({n: inferred[n] for n in guessed})
    names = list(schemas) + [n for n in called if n not in schemas]
    return TaskSpec(
        task_id=ep.task_id, family=ep.family, template=ep.template, seed=0, instruction=ep.instruction,
        writer="external", tools=[n for n in names if n not in META],
        tool_schemas=list(schemas.values()) or None, tool_schemas_inferred=guessed or None,
        optimal_steps=max(1, record.outcome.steps), step_budget=max(1, record.outcome.steps),
        split=ep.split, generator_version="external",
    )
