"""A Label Studio annotation as a review decision. Pure: the annotation's result in, a
checked decision out, or an InputError saying which choice is unknown."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from review_app.decisions import check_decision
from review_app.label_studio import config
from warehouse.errors import InputError

_STEP = re.compile(r"^\s*([0-9]+)\b")


@dataclass(frozen=True)
class PulledDecision:
    decision: str
    reason_code: str = ""
    reason_text: str = ""
    first_wrong_step: int | None = None
    recovered: bool = False


def _values(result: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Control name -> the chosen values (choices) or typed text (text areas)."""
    out: dict[str, list[str]] = {}
    if result is not None and not isinstance(result, list):
        raise InputError("the annotation's result is not a list")
    for item in result or []:
        if not isinstance(item, dict):
            raise InputError("a result item is not an object")
        name = item.get("from_name")
        value = item.get("value") or {}
        if not isinstance(value, dict):
            raise InputError(f"the value of a result from control {_short(name)} is not an object")
        if item.get("type") == "choices":
            got = value.get("choices") or []
        elif item.get("type") == "textarea":
            got = value.get("text") or []
        else:
            raise InputError(f"an unexpected result of type {_short(item.get('type'))} from control {_short(name)}")
        if name not in (config.DECISION, config.REASON, config.NOTES, config.FIRST_WRONG, config.RECOVERED):
            raise InputError(f"a result from an unknown control {_short(name)}")
        if not isinstance(got, list) or not all(isinstance(v, str) for v in got):
            raise InputError(f"the result from control {name!r} is not a list of strings")
        out.setdefault(str(name), []).extend(got)
    return out


def _short(value: Any) -> str:
    """A value from the payload as it is named in an error: quoted, on one line, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _one(values: dict[str, list[str]], name: str) -> str:
    got = values.get(name) or []
    if len(got) > 1:
        raise InputError(f"{len(got)} choices for {name!r} where one is expected")
    return got[0] if got else ""


def _step(choice: str, n_steps: int) -> int | None:
    if not choice or choice == config.NO_WRONG_STEP:
        return None
    match = _STEP.match(choice)
    if not match or int(match.group(1)) >= n_steps:
        raise InputError(f"unknown first wrong step {_short(choice)}")
    return int(match.group(1))


def parse_result(result: list[dict[str, Any]], n_steps: int) -> PulledDecision | None:
    """The decision an annotation's result makes; None when it chose no decision (it decides
    nothing yet); InputError for a choice the review gate does not know or a decision it refuses."""
    values = _values(result)
    decision = _one(values, config.DECISION)
    if not decision:
        return None
    reason = _one(values, config.REASON)
    notes = "\n".join(t for t in values.get(config.NOTES, []) if t).strip()
    step = _step(_one(values, config.FIRST_WRONG), n_steps)
    recovered_value = _one(values, config.RECOVERED)
    if recovered_value not in ("", "recovered", config.NOT_RECOVERED):
        raise InputError(f"unknown choice {_short(recovered_value)} for 'recovered'")
    recovered = recovered_value == "recovered"
    check_decision(decision, reason, notes, step, n_steps, recovered)
    return PulledDecision(decision, reason, notes, step, recovered)
