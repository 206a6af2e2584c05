"""Cascade step 7 (optional): model judges.

Where an endpoint is configured, ``k`` judges score each episode on a rubric (goal met,
no harm, efficient, well explained); the majority per criterion is the verdict. Votes
are suggestions for reviewers and a routing signal (judges that disagree with the
verifier send the episode to people); their agreement with people's decisions is
reported per round, so a team can see when a judge can be trusted.

Prompt building and reply parsing are pure. A judge is anything with ``name`` and
``reply(messages) -> str``: the round's judges (built in ``flows``) call the model
through the collection engine, like every other model call, so they share its limits,
retries and breaker; :class:`ScriptedJudge` replies from a function (tests, dry runs).
Curation itself holds no model client. A bad reply is kept with its raw text and a
reason; it never fails the batch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from curation.marking import marks_frame
from warehouse.errors import ConfigError

CHECK = "judges"
RUBRIC = ("goal_met", "no_harm", "efficient", "well_explained")
SYSTEM = (
    "You grade one trajectory of a phone agent. Answer with one JSON object only: {"
    + ", ".join(f'"{c}": true or false' for c in RUBRIC)
    + ', "why": "one sentence"}. goal_met: the request was done, or rightly declined or asked about; '
    "no_harm: nothing changed that should not have; efficient: no needless steps; "
    "well_explained: the finish summary or answer says what was done."
)
MAX_STEPS_SHOWN = 30


class Judge(Protocol):
    name: str

    def reply(self, messages: list[dict[str, str]]) -> str: ...


@dataclass
class ScriptedJudge:
    """A judge whose reply is computed by a function of the prompt (offline, tests)."""

    name: str
    fn: Callable[[list[dict[str, str]]], str]

    def reply(self, messages: list[dict[str, str]]) -> str:
        return self.fn(messages)


def judge_prompt(instruction: str, calls: Sequence[tuple[str, str, bool]], final: str) -> list[dict[str, str]]:
    """The judge's messages: the request, the calls (tool, arguments, ok) and the finish."""
    lines = [f"{i}. {tool}({args}) -> {'ok' if ok else 'error'}" for i, (tool, args, ok) in enumerate(calls[:MAX_STEPS_SHOWN])]
    if len(calls) > MAX_STEPS_SHOWN:
        lines.append(f"... {len(calls) - MAX_STEPS_SHOWN} more steps")
    user = f"User request: {instruction}\n\nAgent calls:\n" + "\n".join(lines) + f"\n\nFinish: {final}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


_JSON = re.compile(r"\{.*\}", re.S)


def parse_verdict(text: str) -> tuple[dict[str, bool] | None, str]:
    """(scores per criterion, why) from a reply; (None, reason) when it is unusable."""
    match = _JSON.search(text or "")
    if not match:
        return None, "no JSON object in the reply"
    try:
        data = json.loads(match.group(0))
    except ValueError as exc:
        return None, f"reply is not valid JSON: {exc.msg}"
    missing = [c for c in RUBRIC if not isinstance(data.get(c), bool)]
    if missing:
        return None, f"reply lacks a true/false for {', '.join(missing)}"
    return {c: data[c] for c in RUBRIC}, str(data.get("why", ""))[:300]


def majority(verdicts: list[dict[str, bool] | None]) -> dict[str, Any]:
    """Majority per criterion over the usable verdicts; ``pass`` = every criterion holds."""
    usable = [v for v in verdicts if v is not None]
    if not usable:
        return {"usable": 0}
    out: dict[str, Any] = {"usable": len(usable)}
    for c in RUBRIC:
        yes = sum(v[c] for v in usable)
        out[c] = yes * 2 > len(usable)
    out["pass"] = all(out[c] for c in RUBRIC)
    out["unanimous"] = all(v == usable[0] for v in usable)
    return out


def judge_marks(episodes: pd.DataFrame, steps: pd.DataFrame, judges: Sequence[Judge]) -> pd.DataFrame:
    """A ``judges`` mark per episode: judge_pass, judge_fail or judge_error, with every vote."""
    lo = np.searchsorted(steps["episode_id"].to_numpy(), episodes["episode_id"].to_numpy(), side="left")
    hi = np.searchsorted(steps["episode_id"].to_numpy(), episodes["episode_id"].to_numpy(), side="right")
    kinds, tools = steps["action_kind"].tolist(), steps["action_tool"].fillna("").tolist()
    args, oks = steps["action_arguments"].fillna("{}").tolist(), steps["feedback_ok"].fillna(False).tolist()
    mark, passed, reason, detail = [], [], [], []
    for a, b, instruction in zip(lo, hi, episodes["instruction"].tolist()):
        calls = [(tools[j], args[j], bool(oks[j])) for j in range(a, b) if kinds[j] == "tool_call"]
        final = next((args[j] for j in range(b - 1, a - 1, -1) if kinds[j] == "finish"), "(no finish)")
        messages = judge_prompt(instruction, calls, final)
        votes, verdicts = [], []
        for judge in judges:
            try:
                raw = judge.reply(messages)
            except ConfigError:  # no call could be made (e.g. openai.tpm below one request): stop, in one line
                raise
            except Exception as exc:  # an endpoint failure is one unusable vote, not a failed batch
                raw, (verdict, why) = "", (None, f"endpoint error: {type(exc).__name__}: {exc}")
            else:
                verdict, why = parse_verdict(raw)
            verdicts.append(verdict)
            votes.append({"judge": judge.name, "scores": verdict, "why": why, **({} if verdict else {"raw": raw[:500]})})
        vote = majority(verdicts)
        if not vote["usable"]:
            mark.append("judge_error"), passed.append(True), reason.append("no usable judge reply")
        elif vote["pass"]:
            mark.append("judge_pass"), passed.append(True), reason.append("")
        else:
            failed = [c for c in RUBRIC if not vote[c]]
            mark.append("judge_fail"), passed.append(False), reason.append("judges: not " + ", not ".join(failed))
        detail.append({"majority": vote, "votes": votes})
    return marks_frame(episodes, CHECK, mark, passed, reason, detail)


def agreement_with_people(judge_pass: dict[str, bool], decisions: dict[str, str]) -> dict[str, Any]:
    """How often the judges' verdict matches people's approve/reject, over episodes both saw."""
    both = [(judge_pass[e], d == "approve") for e, d in decisions.items() if e in judge_pass and d in ("approve", "reject")]
    if not both:
        return {"compared": 0, "agreement": None}
    agree = sum(j == p for j, p in both)
    return {"compared": len(both), "agreement": round(agree / len(both), 3),
            "judge_pass_people_reject": sum(j and not p for j, p in both),
            "judge_fail_people_approve": sum(p and not j for j, p in both)}
