"""Why an episode failed, read off its trace alone (never off the policy's intent).

Model policies will not say which mistake they made, so the scripted policy's
mistakes are attributed the same way: by comparing the writes made with the
reference's writes, and by the verifier's signals.
"""

from __future__ import annotations

from typing import Any

from generators.phone.tools import tool_kind
from generators.phone.verifier import normalise
from warehouse.contract import Action, FailureAttribution, RequirementResult, Step, TaskSpec
from warehouse.ids import canonical_json

HARNESS_CODES = {"INTERNAL"}


def _key(tool: str, args: dict[str, Any]) -> str:
    return canonical_json([tool, {k: normalise(v, k) for k, v in args.items()}])


def attribute_failure(task: TaskSpec, reference: list[Action], steps: list[Step],
                      results: list[RequirementResult], minefields: list[str], termination: str,
                      success: bool) -> FailureAttribution | None:
    """The failure's side, type and first wrong step; None for a success."""
    if success:
        return None
    for s in steps:
        if s.feedback.error is not None and s.feedback.error.code in HARNESS_CODES:
            return FailureAttribution(side="harness", type="tool_fault", step=s.index)
    if termination in ("harness_error", "endpoint_error", "request_rejected"):
        return FailureAttribution(side="harness", type=termination, step=None)
    if minefields:
        first = next((s.index for s in steps if s.verification.minefields), None)
        return FailureAttribution(type="minefield", step=first)
    if termination != "finished":
        looped = any("Stop guessing" in n for s in steps for n in s.feedback.notices)
        return FailureAttribution(type="loop" if looped else termination, step=steps[-1].index if steps else None)

    finish_step = steps[-1].index if steps else None
    unasked = {r.id for r in task.requirements if r.kind == "asked_before"}
    if any(not r.passed and r.id in unasked for r in results):
        first = next((s.index for s in steps if s.action.kind == "tool_call" and s.feedback.ok
                      and tool_kind(s.action.tool) == "write"), finish_step)
        return FailureAttribution(type="acted_without_asking", step=first)
    ref_writes = [_key(a.tool, a.arguments) for a in reference
                  if a.kind == "tool_call" and tool_kind(a.tool) == "write"]
    made = [(s.index, _key(s.action.tool, s.action.arguments)) for s in steps
            if s.action.kind == "tool_call" and s.feedback.ok and tool_kind(s.action.tool) == "write"]
    wrong = next((i for i, k in made if k not in ref_writes), None)
    if wrong is not None:
        return FailureAttribution(type="wrong_argument", step=wrong)
    keys = [k for _, k in made]
    if sorted(keys) == sorted(ref_writes) and keys != ref_writes:
        first = next(i for (i, k), want in zip(made, ref_writes) if k != want)
        return FailureAttribution(type="wrong_order", step=first)
    if len(keys) < len(ref_writes):
        if keys == ref_writes[: len(keys)]:
            return FailureAttribution(type="early_finish", step=finish_step)
        missing = next(n for n, want in enumerate(ref_writes) if n >= len(keys) or keys[n] != want)
        return FailureAttribution(type="skipped_step", step=made[missing][0] if missing < len(made) else finish_step)
    answers = {r.id for r in task.requirements if r.kind == "answer"}
    if any(not r.passed and r.id in answers for r in results):
        reads = sum(1 for s in steps if s.action.kind == "tool_call" and s.feedback.ok)
        needed = sum(1 for a in reference if a.kind == "tool_call")
        return FailureAttribution(type="early_finish" if reads < needed else "wrong_answer", step=finish_step)
    return FailureAttribution(type="other", step=finish_step)


# the model-side category of each failure type read off the trace
MODEL_CATEGORY = {"wrong_argument": "argument_grounding", "wrong_answer": "argument_grounding",
                  "wrong_order": "decomposition", "skipped_step": "decomposition", "other": "decomposition",
                  "early_finish": "premature_finish", "loop": "recovery", "budget_exhausted": "recovery",
                  "invalid_replies": "recovery", "minefield": "routing", "acted_without_asking": "routing"}


def _results_before(steps: list[Step], index: int) -> str:
    return normalise(canonical_json([s.feedback.result for s in steps if s.index < index and s.feedback.ok]))


def _memory_hits(steps: list[Step]) -> list[list[dict[str, Any]]]:
    return [s.feedback.result.get("items", []) for s in steps if s.action.tool == "memory_search" and s.feedback.ok
            and isinstance(s.feedback.result, dict)]


def classify(task: TaskSpec, reference: list[Action], steps: list[Step],
             failure: FailureAttribution | None) -> FailureAttribution | None:
    """The failure with its category (model or harness side) filled in, from the trace and the task."""
    if failure is None:
        return None
    if failure.side == "harness":
        return failure.model_copy(update={"category": failure.type})
    needed = {a.tool for a in reference if a.kind == "tool_call"}
    if needed - set(task.tools):  # the reference needs a tool the task never offered
        return failure.model_copy(update={"side": "harness", "category": "tool_not_exposed"})
    gated = next((s for s in steps if s.feedback.error is not None and s.feedback.error.code == "SKILL_NOT_LOADED"),
                 None)
    if gated is not None:
        guided = "load_skill" in task.tools
        return failure.model_copy(update={"side": "model" if guided else "harness", "step": gated.index,
                                          "category": "routing" if guided else "missing_skill_guidance"})
    wanted = str(task.private_params.get("value", ""))
    hits = _memory_hits(steps)
    if wanted and hits and failure.type in ("wrong_argument", "wrong_answer"):
        values = [[normalise(str(h.get("value", ""))) for h in page] for page in hits]
        if not any(normalise(wanted) in page for page in values) and _asked_well(task, steps):
            return failure.model_copy(update={"side": "harness", "category": "retrieval_miss"})
        for page in hits:  # a superseded record ranked above the active one is the store's fault
            right = next((i for i, h in enumerate(page) if h.get("status") == "active"
                          and normalise(str(h.get("value", ""))) == normalise(wanted)), None)
            if right is not None and any(h.get("status") == "superseded" for h in page[:right]):
                return failure.model_copy(update={"side": "harness", "category": "stale_memory"})
    category = MODEL_CATEGORY.get(failure.type, "decomposition")
    if failure.type in ("wrong_argument", "wrong_answer") and failure.step is not None:
        step = next((s for s in steps if s.index == failure.step), None)
        if step is not None and _wrong_value_seen(step, reference, _results_before(steps, step.index)):
            category = "state_tracking"  # the value was on screen: the agent kept track of the wrong one
    return failure.model_copy(update={"category": category})


def _asked_well(task: TaskSpec, steps: list[Step]) -> bool:
    """Whether some memory search named the remembered key (then a miss is the store's, not the query's)."""
    key = set(str(task.private_params.get("key", "")).lower().split())
    return any(key & set(str(s.action.arguments.get("query", "")).lower().split())
               for s in steps if s.action.tool == "memory_search")


def _wrong_value_seen(step: Step, reference: list[Action], seen: str) -> bool:
    """Whether some argument of ``step`` that differs from the reference's values was returned by an earlier call."""
    ref_values = {normalise(canonical_json(v)) for a in reference for v in a.arguments.values()}
    for value in _leaves(step.action.arguments):
        text = normalise(str(value))
        if normalise(canonical_json(value)) not in ref_values and len(text) >= 3 and text in seen:
            return True
    return False


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]
