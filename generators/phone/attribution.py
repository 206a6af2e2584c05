"""Why an episode failed, read off its trace alone (never off the policy's intent).

Model policies will not say which mistake they made, so the scripted policy's
mistakes are attributed the same way: by comparing the writes made with the
reference's writes, and by the verifier's signals.
"""

from __future__ import annotations

from typing import Any

from warehouse.contract import Action, FailureAttribution, RequirementResult, Step, TaskSpec
from warehouse.ids import canonical_json

from generators.phone.tools import tool_kind
from generators.phone.verifier import normalise

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
