"""The verifier: deterministic requirement checks, episode scores, step labels.

Separate from the apps on purpose: it reads only snapshots, the call list and the
finish arguments, so a check can never be satisfied by a tool's own say-so.

A call record is ``{"index": int, "tool": str, "arguments": dict, "ok": bool}``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from generators.phone.checks_calls import CALL_CHECKS
from generators.phone.checks_services import SERVICE_CHECKS
from generators.phone.checks_state import STATE_CHECKS
from generators.phone.matching import args_match, normalise
from generators.phone.timeparse import parse_time
from generators.phone.tools import PhoneError, tool_kind
from generators.phone.world import Snapshot, World
from warehouse.contract import Action, Feedback, Requirement, RequirementResult, TaskSpec, Verification
from warehouse.errors import InputError
from warehouse.ids import canonical_json

Calls = list[dict[str, Any]]


class NoVerifier(InputError):
    """A task with no requirements (an imported one, say): nothing tells a good rollout from a bad one,
    so it is refused, never scored (an empty list of checks would pass every rollout)."""


def verifiable(task: TaskSpec) -> TaskSpec:
    """``task``, when it has requirements to verify; else :class:`NoVerifier`."""
    if not task.requirements:
        raise NoVerifier(f"task {task.task_id} has no requirements: no verifier can score it")
    return task


def _typed(value: Any, kind: str) -> Any:
    """``value`` as an answer of ``kind``, or None when it is not one.

    By type, not by coercion: an ``int`` answer is an integer (``3``, ``3.0`` or ``"3"``),
    so ``1.9`` is no answer for ``1``; a ``number`` compares to the cent; a ``phone``
    ignores formatting, not letters.
    """
    if kind == "int":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return int(value) if math.isfinite(value) and value.is_integer() else None
        if isinstance(value, str) and re.fullmatch(r"[+-]?\d+(\.0*)?", value.strip()):
            return int(float(value.strip()))
        return None
    if kind == "number":
        if isinstance(value, bool):
            return None
        try:
            number = float(value.strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            return None
        return round(number, 2) if math.isfinite(number) else None
    if kind == "time" and isinstance(value, str):
        try:
            return parse_time(value)
        except PhoneError:
            return None
    if kind == "phone":
        return normalise(value, "phone") if isinstance(value, str) else None
    if kind == "list" and isinstance(value, list):
        return sorted(str(normalise(v)) for v in value)
    return normalise(value)


def _check_answer(p: dict[str, Any], finish_args: dict[str, Any] | None, **_: Any) -> tuple[bool, str]:
    if finish_args is None or "answer" not in finish_args:
        return False, "no answer given"
    kind = p.get("type", "str")
    got, want = _typed(finish_args["answer"], kind), _typed(p["expected"], kind)
    if got is None:
        return False, f"answer {finish_args['answer']!r} is not a {kind}"
    return got == want, "" if got == want else f"answer {finish_args['answer']!r} != {p['expected']!r}"


def _forbidden_hits(p: dict[str, Any], calls: Calls) -> list[dict[str, Any]]:
    return [c for c in calls if c["tool"] == p["tool"] and (c["ok"] or p.get("include_failed"))
            and args_match(p.get("arguments", {}), c["arguments"])]


def _check_forbidden(p: dict[str, Any], calls: Calls, **_: Any) -> tuple[bool, str]:
    hits = _forbidden_hits(p, calls)
    return not hits, f"forbidden call at step {hits[0]['index']}" if hits else ""


def _check_order(p: dict[str, Any], calls: Calls, **_: Any) -> tuple[bool, str]:
    want, i = p["sequence"], 0
    for c in calls:
        if i < len(want) and c["ok"] and c["tool"] == want[i]["tool"] and args_match(want[i].get("arguments", {}),
                                                                                      c["arguments"]):
            i += 1
    return i == len(want), "" if i == len(want) else f"call {i + 1} of the required order never came: {want[i]}"


def _check_finish_status(p: dict[str, Any], finish_args: dict[str, Any] | None, **_: Any) -> tuple[bool, str]:
    got = (finish_args or {}).get("status")
    ok = got in p["status"] if isinstance(p["status"], list) else got == p["status"]  # a list: any of these
    return ok, "" if ok else f"finish status {got!r} is not {p['status']!r}"


CHECKS: dict[str, Callable[..., tuple[bool, str]]] = {
    **STATE_CHECKS,
    "answer": _check_answer,
    "forbidden": _check_forbidden,
    "order": _check_order,
    "finish_status": _check_finish_status,
    **CALL_CHECKS,
    **SERVICE_CHECKS,
}


def check_outcome(req: Requirement, changes: list[dict[str, Any]], calls: Calls,
                  finish_args: dict[str, Any] | None) -> tuple[bool, str]:
    """(passed, detail) of one requirement; an unknown kind fails loudly in the detail, never silently passes.

    Every check takes ``(params, changes=, calls=, finish_args=)`` and ignores keywords it does not read; one
    that words costly details may take ``brief=True`` (see :func:`check_verdict`)."""
    check = CHECKS.get(req.kind)
    if check is None:
        return False, f"unknown requirement kind {req.kind!r}"
    return check(req.params, changes=changes, calls=calls, finish_args=finish_args)


def check_verdict(req: Requirement, changes: list[dict[str, Any]], calls: Calls,
                  finish_args: dict[str, Any] | None) -> bool:
    """Whether one requirement passes: :func:`check_outcome`'s verdict, without wording what fails (``brief``:
    a check may stop at its first problem)."""
    check = CHECKS.get(req.kind)
    return check is not None and check(req.params, changes=changes, calls=calls, finish_args=finish_args,
                                       brief=True)[0]


def check_requirement(req: Requirement, changes: list[dict[str, Any]], calls: Calls,
                      finish_args: dict[str, Any] | None) -> RequirementResult:
    """One requirement's result (see :func:`check_outcome`)."""
    passed, detail = check_outcome(req, changes, calls, finish_args)
    return RequirementResult.model_construct(id=req.id, passed=passed, hard=req.hard, weight=req.weight,
                                             dimension=req.dimension, detail=detail)


def minefields_hit(task: TaskSpec, calls: Calls) -> list[str]:
    """Ids of the forbidden requirements some call has hit."""
    return [r.id for r in task.requirements if r.kind == "forbidden" and _forbidden_hits(r.params, calls)]


def score(task: TaskSpec, results: list[RequirementResult], calls: Calls) -> tuple[bool, float, list[str]]:
    """(success, progress, minefields) from requirement results.

    success = every hard requirement passes and no minefield is hit; progress = the
    weighted fraction of requirements passed. :class:`NoVerifier` for a task without requirements.
    """
    mines = minefields_hit(verifiable(task), calls)
    success = all(r.passed for r in results if r.hard) and not mines
    total = sum(r.weight for r in results)
    progress = sum(r.weight for r in results if r.passed) / total if total else float(success)
    return success, round(progress, 6), mines


def evaluate(task: TaskSpec, initial_snapshot: Snapshot, final_world: World, calls: Calls,
             finish_args: dict[str, Any] | None,
             after: Snapshot | None = None) -> tuple[list[RequirementResult], bool, float, list[str]]:
    """Score an episode: (results, success, progress, minefields); see ``score`` (which refuses a task
    without requirements)."""
    # ``after``: a snapshot of final_world already taken; else its live rows, only read here
    verifiable(task)
    changes = final_world.diff(initial_snapshot, final_world.view() if after is None else after)
    results = [check_requirement(r, changes, calls, finish_args) for r in task.requirements]
    return results, *score(task, results, calls)


INVALID_CODES = {"UNKNOWN_TOOL", "INVALID_ARGUMENT", "INVALID_ACTION"}
# checks that read only the state diff, and the one table each service check among them reads (the
# others name theirs in params["table"]; allowed_changes reads every table)
STATE_TABLES = {"memory_diff": "memories", "skill_reruns": "skills"}
STATE_KINDS = {"state_diff", "allowed_changes", "untouched", *STATE_TABLES}


class StepVerifier:
    """Per-step verification: milestones reached, minefields hit, running progress, label.

    The definition, recomputing every check from the whole state diff: the environment runs
    :class:`generators.phone.stepverify.IncrementalVerifier`, which gives the same results
    re-evaluating only what a step could change (tests compare the two after every step)."""

    def __init__(self, task: TaskSpec, initial_snapshot: Snapshot, initial_world: World):
        self.task, self.initial = verifiable(task), initial_snapshot
        results, _, self.progress, _ = evaluate(task, initial_snapshot, initial_world, [], None)
        self.passing = {r.id for r in results if r.passed}
        self.mines: set[str] = set()
        self.seen_calls = SeenCalls()
        self.state_results: dict[str, RequirementResult] | None = None

    def observe(self, world: World, calls: Calls, action: Action, feedback: Feedback,
                finish_args: dict[str, Any] | None = None, after: Snapshot | None = None) -> Verification:
        """Verify the step just taken; ``calls`` already includes it (``after``: the world's snapshot now)."""
        if self.state_results is None or feedback.state_delta:  # state checks rerun only when state moved
            changes = world.diff(self.initial, after)
            self.state_results = {r.id: check_requirement(r, changes, calls, finish_args)
                                  for r in self.task.requirements if r.kind in STATE_KINDS}
        results = [self.state_results[r.id] if r.kind in STATE_KINDS else check_requirement(r, [], calls, finish_args)
                   for r in self.task.requirements]
        _, progress, mines = score(self.task, results, calls)
        passing = {r.id for r in results if r.passed}
        noop = {r.id for r in self.task.requirements if r.noop_passes}
        new_milestones = sorted(passing - self.passing - noop)
        new_mines = sorted(set(mines) - self.mines)
        lost = {r.id for r in self.task.requirements if r.hard} & (self.passing - passing)
        label = step_label(self.seen_calls, action, feedback, new_milestones, bool(new_mines or lost))
        self.passing, self.progress, self.mines = passing, progress, self.mines | set(mines)
        return Verification.model_construct(milestones=new_milestones, minefields=new_mines, progress=progress,
                                            label=label)


class SeenCalls:
    """The calls made so far: a call is repeated when its tool and its arguments' canonical JSON were seen."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def repeated(self, tool: str | None, arguments: Any) -> bool:
        """Whether this call was made before; it counts as made from now on."""
        key = canonical_json([tool, arguments])
        hit = key in self.keys
        self.keys.add(key)
        return hit


def step_label(seen: SeenCalls, action: Action, feedback: Feedback, milestones: list[str], harmful: bool) -> str:
    """A step's label (``seen``: the calls made so far, to which this one is added here)."""
    if action.kind == "invalid" or (feedback.error is not None and feedback.error.code in INVALID_CODES):
        return "invalid_call"
    if harmful:
        return "harmful"
    if not feedback.ok:
        return "recoverable_error"
    if action.kind != "tool_call":
        return "ok"
    repeated = seen.repeated(action.tool, action.arguments)
    if not milestones and not feedback.state_delta and (repeated or tool_kind(action.tool) == "write"):
        return "redundant"  # a repeated call or a write that changed nothing
    return "ok"
