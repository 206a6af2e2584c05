"""An episode as a Label Studio task: readable HTML of the conversation and steps, the
step choices for the first wrong step, and the verifier's and curation's view as a
prediction (a suggestion the annotator can accept or change). Pure.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from review_app.conversation import Turn, call_verdict, conversation_turns
from review_app.episode import REFERENCE_NOTE, EpisodeView, is_reference
from review_app.label_studio import config
from warehouse.ids import canonical_json, digest

MODEL_VERSION = "verifier+curation"
_CUT = 1500  # characters of a tool result shown in the task
_ROUTING = "routing"
_BOX = "margin:6px 0;padding:8px 10px;border-radius:8px;"
_STYLE = {"user": _BOX + "background:#e8f0fe;margin-right:15%;", "agent": _BOX + "background:#f3f4f6;margin-left:15%;"}
_RED = "color:#b91c1c;"


def _json(value: Any, limit: int = _CUT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(text: str) -> str:
    return escape(text).replace("\n", "<br>")


def _screen(screens_url: str | None, episode_id: str, step: int) -> str:
    if not screens_url:
        return ""
    src = f"{screens_url.rstrip('/')}/{escape(episode_id)}/{step}.svg"
    return f'<img src="{src}" alt="screen after step {step}" style="max-width:260px;display:block;margin-top:4px">'


def _turn_html(turn: Turn, episode_id: str, screens_url: str | None) -> str:
    who = "User" if turn.role == "user" else "Agent"
    steps = f" · step {turn.steps[0]}" if turn.role == "agent" and len(turn.steps) == 1 else (
        f" · steps {turn.steps[0]}–{turn.steps[-1]}" if turn.role == "agent" and turn.steps else "")
    parts = [f'<div style="{_STYLE[turn.role]}"><b>{who}</b><small>{steps}</small>']
    if turn.text:
        parts.append(f"<div>{_text(turn.text)}</div>")
    for call in turn.calls:
        mark = "✗" if call.bad else "✓"
        style = _RED if call.bad else ""
        body = (f'<div style="{_RED}">{escape(call.error)}</div>' if call.error
                else f"<pre style=\"white-space:pre-wrap\">{escape(_json(call.result))}</pre>")
        parts.append(
            f'<details><summary style="{style}">step {call.step} · <code>{escape(call.tool)}</code> {mark} '
            f"<small>{escape(call_verdict(call))}</small></summary>"
            f'<pre style="white-space:pre-wrap">{escape(_json(call.arguments, 600))}</pre>{body}'
            f"{_screen(screens_url, episode_id, call.step)}</details>"
        )
    if turn.after:
        parts.append(f"<div>{_text(turn.after)}</div>")
    if turn.error:
        parts.append(f'<div style="{_RED}"><b>error</b> {escape(turn.error)}</div>')
    parts.append("</div>")
    return "".join(parts)


def trajectory_html(view: EpisodeView, screens_url: str | None = None) -> str:
    """The conversation (or single-user steps) with tool calls folded, errors in red, and the outcome."""
    ep, out = view.episode, view.outcome
    turns = conversation_turns(ep.instruction, view.steps)
    body = "".join(_turn_html(t, ep.episode_id, screens_url) for t in turns)
    verdict = "verified" if out and out.success else "not verified"
    summary = (f"{escape(ep.family)} · {verdict} · termination {escape(out.termination)} · progress "
               f"{out.progress:.2f} · {out.steps} steps") if out else escape(ep.family)
    flagged = [m for m in view.marks if not m.passed and m.check != _ROUTING]
    marks = "".join(f"<li>{escape(m.check)}: {escape(m.mark)}{(' — ' + escape(m.reason)) if m.reason else ''}</li>"
                    for m in flagged)
    routed = [m for m in view.marks if m.check == _ROUTING and not m.passed]
    why = f"<p><small>sent to people: {escape(routed[0].reason or routed[0].mark)}</small></p>" if routed else ""
    if is_reference(ep):
        why = f'<p style="color:#1d4ed8"><b>{escape(REFERENCE_NOTE)}</b></p>' + why
    return (f'<div data-flywheel-trajectory="1" style="font-family:sans-serif;font-size:14px;max-width:900px">'
            f"<p><small>{escape(ep.episode_id)} · round {escape(ep.round_id)} · {summary}</small></p>{why}{body}"
            + (f'<p style="{_RED}">Curation flagged:</p><ul>{marks}</ul>' if marks else "") + "</div>")


def step_choice(step: int, tool: str) -> str:
    return f"{step} · {tool}"


def step_choices(view: EpisodeView) -> list[dict[str, str]]:
    return [{"value": config.NO_WRONG_STEP}] + [
        {"value": step_choice(s.index, s.action.tool or s.action.kind)} for s in view.steps
    ]


def _choices(name: str, values: list[str]) -> dict[str, Any]:
    return {"from_name": name, "to_name": config.TRAJECTORY, "type": "choices", "value": {"choices": values}}


def suggestion(view: EpisodeView) -> dict[str, Any]:
    """The verifier's and curation's view as a prediction: approve a verified, unflagged
    episode; needs fix when verified but flagged; reject with 'wrong_result' otherwise."""
    out = view.outcome
    flagged = any(not m.passed and m.check != _ROUTING for m in view.marks)
    if out is not None and out.success:
        decision, reason = ("needs_fix", None) if flagged else ("approve", None)
    else:
        decision, reason = "reject", "wrong_result"
    result = [_choices(config.DECISION, [decision])]
    if reason:
        result.append(_choices(config.REASON, [reason]))
    first = view.first_failed_step
    if first is not None and decision != "approve":
        step = next(s for s in view.steps if s.index == first)
        result.append(_choices(config.FIRST_WRONG, [step_choice(first, step.action.tool or step.action.kind)]))
    return {"model_version": MODEL_VERSION, "score": float(out.progress) if out else 0.0, "result": result}


def task_payload(view: EpisodeView, screens_url: str | None = None) -> dict[str, Any]:
    """What is sent for one episode: ``data`` (with its own digest) and one prediction."""
    ep = view.episode
    data = {
        "episode_id": ep.episode_id,
        "round_id": ep.round_id,
        "instruction": ep.instruction,
        "html": trajectory_html(view, screens_url),
        "step_choices": step_choices(view),
        "n_steps": len(view.steps),
    }
    if is_reference(ep):  # only then, so the digest of every other task stays what it was
        data["reference_demonstration"] = True
    prediction = suggestion(view)
    data["digest"] = digest(canonical_json({"data": data, "prediction": prediction}), 16)
    return {"data": data, "predictions": [prediction]}
