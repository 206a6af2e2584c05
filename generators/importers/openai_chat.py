"""Import OpenAI chat trajectories (``messages`` with ``tool_calls`` and ``tool`` results). Pure.

Each conversation becomes an Episode (source="external"), its Steps and an Outcome.
Its task spec has the instruction and the record's own tool schemas but no
requirements and no world behind it, so no replay: verification fields are
empty, success comes from an optional ``reward``. Ids come from the content, so the
same conversation imported twice is the same episode.

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
)
from warehouse.ids import canonical_json, digest

META = {"finish", "ask_user"}


class MalformedRecord(ValueError):
    """One record cannot be imported; the message says why."""


_ERROR_TEXT = re.compile(r"^\s*(error|exception|traceback)\b", re.IGNORECASE)


def _tool_error(error: Any) -> ToolError:
    if isinstance(error, dict):
        return ToolError(code=str(error.get("code") or error.get("type") or "ERROR"),
                         message=str(error.get("message") or error.get("detail") or json.dumps(error, default=str)))
    return ToolError(code="ERROR", message=str(error))


def _feedback(content: Any) -> Feedback:
    """Feedback from a tool message: our own {"ok", "data"/"error"} shape if it is one; an error when the
    result has an ``error`` key or its text starts with an error ("Error: ...", "Exception ..."); else the text."""
    try:
        body = json.loads(content) if isinstance(content, str) else content
    except ValueError:
        body = content
    if isinstance(body, dict) and isinstance(body.get("ok"), bool):
        err = None if body["ok"] else _tool_error(body.get("error"))
        return Feedback(ok=body["ok"], error=err, result=body.get("data"), notices=list(body.get("notices") or []))
    if isinstance(body, dict) and body.get("error") not in (None, False, ""):
        return Feedback(ok=False, error=_tool_error(body["error"]), result=body)
    if isinstance(body, str) and _ERROR_TEXT.match(body):
        return Feedback(ok=False, error=ToolError(code="ERROR", message=body.strip()[:500]), result=body)
    return Feedback(ok=True, result=body)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


HARNESS = "[harness] "  # how our chat exports tell the agent its reply was not an action


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


def _steps(eid: str, messages: list[Any]) -> list[Step]:
    steps: list[Step] = []
    pending: dict[str, int] = {}  # call id -> index of its step, until its result arrives
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in {"system", "user", "assistant", "tool", "developer"}:
            raise MalformedRecord(f"message {i} has no known role")
        role = msg["role"]
        if role == "assistant":
            calls = msg.get("tool_calls") or []
            if not isinstance(calls, list):
                raise MalformedRecord(f"message {i}: tool_calls is not a list")
            text = _text(msg)
            invalid = _invalid_reply(msg, messages[i + 1] if i + 1 < len(messages) else None)
            if invalid is not None:  # a reply that was no action: kept as the invalid step it was
                steps.append(Step(episode_id=eid, index=len(steps), action=Action(kind="invalid", text=text, raw=text),
                                  feedback=Feedback(ok=False, error=invalid), verification=Verification(label="invalid_call")))
                continue
            for call in calls:
                fn = call.get("function") if isinstance(call, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
                    raise MalformedRecord(f"message {i}: a tool call without a function name")
                raw = fn.get("arguments", "")
                call_id = str(call.get("id") or f"call_{len(steps)}")
                try:
                    args = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
                except ValueError:
                    args = None
                if not isinstance(args, dict):
                    action = Action(kind="invalid", tool=fn["name"], call_id=call_id, text=text, raw=str(raw))
                else:
                    kind = fn["name"] if fn["name"] in META else "tool_call"
                    action = Action(kind=kind, tool=fn["name"], arguments=args, call_id=call_id, text=text)
                pending[call_id] = len(steps)
                steps.append(Step(episode_id=eid, index=len(steps), action=action, feedback=Feedback(ok=True),
                                  verification=Verification(label="invalid_call" if action.kind == "invalid" else "ok")))
                text = ""  # the text goes with the first call of the message
            if not calls:
                later_user = next((m for m in messages[i + 1:] if isinstance(m, dict) and m.get("role") == "user"
                                   and not _text(m).startswith(HARNESS)), None)
                agent_again = any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages[i + 1:])
                if later_user is not None and agent_again:  # text to the user, answered, the agent goes on: a question
                    action = Action(kind="ask_user", tool="ask_user", arguments={"question": text})
                    feedback = Feedback(ok=True, result={"answer": _text(later_user)})
                else:  # the closing answer (what the user says after it, "thanks, bye", is kept with it)
                    action = Action(kind="finish", tool="finish", arguments={"status": "completed", "summary": text})
                    after = [_text(m) for m in messages[i + 1:] if isinstance(m, dict) and m.get("role") == "user"]
                    feedback = Feedback(ok=True, result={"status": "completed", **({"user_after": after} if after else {})})
                steps.append(Step(episode_id=eid, index=len(steps), action=action, feedback=feedback))
        elif role == "tool":
            call_id = str(msg.get("tool_call_id") or "")
            if call_id not in pending:
                raise MalformedRecord(f"message {i}: a tool result for unknown call {call_id!r}")
            step = steps[pending.pop(call_id)]
            step.feedback = _feedback(msg.get("content"))
    return steps


def episode_from_record(value: Any, *, batch_id: str, created_at: datetime) -> EpisodeRecord:
    """One conversation as an external episode. MalformedRecord says what is wrong with it."""
    if not isinstance(value, dict):
        raise MalformedRecord("a record must be a JSON object")
    messages = value.get("messages")
    if not isinstance(messages, list) or not messages:
        raise MalformedRecord("no messages")
    eid = f"x-{digest(canonical_json(value), 16)}"
    steps = _steps(eid, messages)
    if not steps:
        raise MalformedRecord("no assistant turn")
    _mark_masked(steps, value.get("masked_steps"))
    task = value.get("task") if isinstance(value.get("task"), dict) else {}
    instruction = next((_text(m) for m in messages if m.get("role") == "user"), "")
    task_key = task.get("task_id") or value.get("task_id") or f"t-ext-{digest(instruction, 12)}"
    family, template = str(task.get("family") or "external"), str(task.get("template") or "external")
    reward = value.get("reward")
    if reward is not None and not isinstance(reward, int | float):  # a bool is an int: True / False work
        raise MalformedRecord(f"reward must be a number or a boolean, got {reward!r}")
    progress = _finite(reward) if reward is not None else 0.0
    finished = steps[-1].action.kind == "finish"
    finish_args = steps[-1].action.arguments if finished else {}
    outcome = Outcome(
        # not finished here: the conversation ended in its own harness; its named reason where it gives one of ours
        episode_id=eid, termination="finished" if finished else _termination(value.get("termination")),
        finish_status=str(finish_args.get("status", "")), final_answer=finish_args.get("answer"),
        # the record's own success where it states one; else from the reward; no reward: unknown, not a failure
        success=value["success"] if isinstance(value.get("success"), bool) else (None if reward is None else progress >= 0.5),
        progress=max(0.0, min(1.0, progress)),
        steps=len(steps), tool_calls=sum(1 for s in steps if s.action.kind == "tool_call"),
        requirement_results=_breakdown(value.get("reward_breakdown")) + _checks(value.get("reward_checks")),
    )
    episode = Episode(
        episode_id=eid, task_id=str(task_key), family=family, template=template, instruction=instruction,
        split=_split(task, family, template),
        policy=str(value.get("policy") or "external"), model=str(value.get("model") or ""),
        rollout=_rollout(value.get("rollout")), round_id="external", batch_id=batch_id, source="external", created_at=created_at,
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
