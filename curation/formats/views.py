"""Step rows (flat warehouse columns) as contract records, without re-validating.

The rows were validated when they were written (and by the schema check); exports read
hundreds of thousands of them, so they are assembled with ``model_construct``.
"""

from __future__ import annotations

import json
from typing import Any

from warehouse.contract import Action, Cost, Feedback, Step, ToolError, Verification

_COST = Cost()


def _json(text: str | None, default: Any) -> Any:
    if text is None:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def step_from_row(row: dict[str, Any]) -> Step:
    """A :class:`Step` from a row of the steps table (as the export stream reads it)."""
    err = _json(row.get("feedback_error"), None)
    return Step.model_construct(
        episode_id=row["episode_id"],
        index=row["index"],
        actor=row.get("actor") or "planner",
        action=Action.model_construct(
            kind=row.get("action_kind"), tool=row.get("action_tool") or "",
            arguments=_json(row.get("action_arguments"), {}), call_id=row.get("action_call_id") or "",
            text=row.get("action_text") or "", raw=row.get("action_raw") or "",
        ),
        feedback=Feedback.model_construct(
            ok=bool(row.get("feedback_ok")),
            error=ToolError.model_construct(**{"retryable": False, "hint": "", **err}) if isinstance(err, dict) else None,
            result=_json(row.get("feedback_result"), None), state_delta=[], state_hash="",
            notices=list(row.get("feedback_notices") or []),
        ),
        # every field given: pydantic computes a missing default_factory slowly in model_construct
        verification=Verification.model_construct(milestones=[], minefields=[],
                                                  progress=float(row.get("verification_progress") or 0.0),
                                                  label=row.get("verification_label") or "ok"),
        cost=_COST,
    )
