"""The project's labeling config, and the check that a project still has it. Pure."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from xml.sax.saxutils import quoteattr

from review_app.decisions import DECISIONS, REJECT_REASONS

TRAJECTORY = "trajectory"  # the HyperText object every control labels
DECISION, REASON, NOTES, FIRST_WRONG, RECOVERED = "decision", "reason", "notes", "first_wrong_step", "recovered"
NO_WRONG_STEP = "none"  # the first-wrong-step choice that marks nothing
NOT_RECOVERED = "not recovered"
DECISION_HINTS = {"approve": "Good to train on", "reject": "Must not be trained on", "needs_fix": "Close, but needs fixing"}


def label_config() -> str:
    """The XML of the project: the instruction, the trajectory as HTML, the decision, a reason,
    notes, the first wrong step (choices made from each task's steps) and 'recovered'."""
    decisions = "".join(f'<Choice value="{d}" hint={quoteattr(DECISION_HINTS[d])}/>' for d in DECISIONS)
    reasons = "".join(f"<Choice value=\"{c}\" hint={quoteattr(text)}/>" for c, text in REJECT_REASONS.items())
    return (
        "<View>"
        '<Header value="$instruction"/>'
        # inline: in the page, as tall as its content (an iframe was sized once, at load, and scrolled)
        f'<HyperText name="{TRAJECTORY}" value="$html" inline="true"/>'
        '<Header value="Decision"/>'
        f'<Choices name="{DECISION}" toName="{TRAJECTORY}" choice="single-radio" showInline="true" required="true">'
        f"{decisions}</Choices>"
        '<Header value="Reason (needed to reject)"/>'
        f'<Choices name="{REASON}" toName="{TRAJECTORY}" choice="single-radio">{reasons}</Choices>'
        f'<TextArea name="{NOTES}" toName="{TRAJECTORY}" placeholder="Notes" maxSubmissions="1" editable="true"/>'
        '<Header value="First wrong step"/>'
        f'<Choices name="{FIRST_WRONG}" toName="{TRAJECTORY}" choice="single-radio" value="$step_choices"/>'
        f'<Choices name="{RECOVERED}" toName="{TRAJECTORY}" choice="single-radio" showInline="true">'
        f'<Choice value="{NOT_RECOVERED}"/>'
        '<Choice value="recovered" hint="It went wrong at that step and put it right later"/></Choices>'
        "</View>"
    )


_EXPECTED = {
    DECISION: set(DECISIONS),
    REASON: set(REJECT_REASONS),
    RECOVERED: {"recovered", NOT_RECOVERED},
}


def config_problem(xml: str) -> str | None:
    """What makes ``xml`` unusable for pulling decisions (a control gone, renamed, or with
    other choices than ours), or None when it is ours."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        return f"the labeling config is not valid XML ({exc})"
    controls = {el.get("name"): el for el in root.iter() if el.get("name")}
    for name in (DECISION, REASON, NOTES, FIRST_WRONG, RECOVERED):
        if name not in controls:
            return f"the labeling config has no control named {name!r}"
    for name, want in _EXPECTED.items():
        have = {c.get("value") for c in controls[name].iter("Choice")}
        if have != want:
            extra, missing = sorted(have - want), sorted(want - have)
            what = (f"unknown choices {', '.join(map(str, extra))}" if extra else "") + (
                ("; " if extra and missing else "") + (f"missing {', '.join(missing)}" if missing else ""))
            return f"the labeling config's {name!r} control has {what}"
    if controls[FIRST_WRONG].get("value") != "$step_choices":
        return f"the labeling config's {FIRST_WRONG!r} control no longer lists each task's steps"
    return None
