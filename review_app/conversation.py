"""An episode as a conversation: user and agent turns, each agent turn with the tool calls
it made folded under it. Pure: steps in, turns out. The review app's chat view and the
Label Studio task HTML both read these turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from warehouse.contract import MISSING_RESULT, Episode, Step, is_subagent


@dataclass
class ToolCall:
    """One tool call of an agent turn and what came back."""

    step: int
    tool: str
    arguments: Any
    ok: bool
    result: Any = None
    error: str = ""
    label: str = "ok"
    minefields: list[str] = field(default_factory=list)
    actor: str = "planner"  # ``subagent:<name>``: a step of a sub-agent the agent delegated to, not the agent's
    missing: bool = False  # an imported call whose result was never recorded (none is made up)

    @property
    def bad(self) -> bool:
        """Shown in red: an error, a minefield, or a step the verifier did not pass."""
        return (not self.ok) or bool(self.minefields) or self.label in ("harmful", "invalid_call", "recoverable_error")


def call_verdict(call: ToolCall) -> str:
    """What went wrong with a call, in a few words (its error's code, a bad label, the minefields
    it hit), or its label when nothing did: a failed step is never labelled just "ok"."""
    parts = []
    if call.error:
        parts.append(call.error.split(":", 1)[0] if ":" in call.error else call.error)
    if call.label != "ok" or not parts and not call.minefields:
        parts.append(call.label)
    if call.minefields:
        parts.append("minefields: " + ", ".join(call.minefields))
    return " · ".join(parts)


@dataclass
class Turn:
    """A message of the user or the agent; ``steps`` are the steps it covers (its own and its calls')."""

    role: str  # "user" or "agent"
    text: str
    steps: list[int] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    error: str = ""  # a failed question or finish, shown in red
    after: str = ""  # what the agent said after its calls (a question or the closing message)

    @property
    def bad(self) -> bool:
        return bool(self.error) or any(c.bad for c in self.calls)


def _error_text(step: Step) -> str:
    err = step.feedback.error
    return f"{err.code}: {err.message}" if err else ("failed" if not step.feedback.ok else "")


def _user_text(step: Step) -> str:
    args = step.action.arguments if isinstance(step.action.arguments, dict) else {}
    for value in (step.action.text, args.get("message"), args.get("text"), args.get("answer")):
        if isinstance(value, str) and value.strip():
            return value
    result = step.feedback.result
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)


def _answer(step: Step) -> str | None:
    """The user's reply to an ask_user step, if one came back."""
    result = step.feedback.result
    if isinstance(result, dict) and result.get("answer") is not None:
        return str(result["answer"])
    return result if isinstance(result, str) and result else None


def _agent_turn(turns: list[Turn], text: str, new: bool) -> Turn:
    """The agent turn a step belongs to: the open one, unless the step starts a new message."""
    last = turns[-1] if turns else None
    if last is not None and last.role == "agent" and not new:
        return last
    turn = Turn("agent", text)
    turns.append(turn)
    return turn


def conversation_turns(instruction: str, steps: list[Step]) -> list[Turn]:
    """The episode as turns: the instruction, then agent messages with their tool calls, the
    agent's questions and the user's answers, and the closing message."""
    turns = [Turn("user", instruction)]
    for step in sorted(steps, key=lambda s: s.index):
        act = step.action
        args = act.arguments if isinstance(act.arguments, dict) else {}
        if step.actor == "user":
            turns.append(Turn("user", _user_text(step), [step.index]))
            continue
        if act.kind in ("tool_call", "invalid"):
            # a sub-agent's steps fold under the agent turn that delegated to them
            turn = _agent_turn(turns, act.text, new=bool(act.text) and not is_subagent(step.actor))
            turn.steps.append(step.index)
            turn.calls.append(ToolCall(
                step.index, act.tool or act.kind, act.arguments if act.kind != "invalid" else (act.raw or act.arguments),
                step.feedback.ok, step.feedback.result, _error_text(step), step.verification.label,
                list(step.verification.minefields), step.actor, MISSING_RESULT in step.feedback.notices,
            ))
            continue
        if act.kind == "ask_user":
            text = str(args.get("question") or act.text or "")
            options = args.get("options")
            if isinstance(options, list) and options:
                text += "\n\n" + " · ".join(str(o) for o in options)
        else:  # finish
            parts = [act.text, str(args.get("summary") or "")]
            if args.get("answer") not in (None, ""):
                parts.append(f"Answer: {json.dumps(args['answer'], ensure_ascii=False, default=str)}")
            text = "\n\n".join(dict.fromkeys(p for p in parts if p))
        last = turns[-1]
        if last.role == "agent" and last.calls and not last.after:  # said after this turn's calls
            turn, turn.after = last, text
        else:
            turn = _agent_turn(turns, text, new=True)
        turn.steps.append(step.index)
        if not step.feedback.ok:
            turn.error = _error_text(step)
        elif act.kind == "ask_user" and (answer := _answer(step)) is not None:
            turns.append(Turn("user", answer, [step.index]))
    return turns


def is_conversation(episode: Episode, steps: list[Step]) -> bool:
    """Shown as a chat: the user speaks again after the instruction, in a simulated-user task
    (a step by the user) or in imported multi-turn data. A single-user task, even with one
    clarifying question, keeps the step table."""
    if any(s.actor == "user" for s in steps):
        return True
    asked = sum(1 for s in steps if s.action.kind == "ask_user" and _answer(s) is not None)
    return asked >= 1 and episode.source == "external"

