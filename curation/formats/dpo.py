"""Preference pairs from one task's rollouts. Pure: rollouts with their roles in, pairs out.

Episode pairs: a chosen rollout (none with a step people marked wrong) against a rejected one of
the same task. People come first: approved against rejected (``approved_vs_rejected``, source ``human``); then the
verifier: a chosen rollout (approved, or a verified success) against a failed one
(``success_vs_failure``) or, when there is none, a costlier success
(``cheaper_vs_costlier``). An approved rollout is never on the rejected side and a
rejected one never on the chosen side: that is decided by the roles
(:func:`curation.selection.preference_role`), and checked again here.

Step pairs: a succeeding and a failing rollout that take the same turns and then
diverge give one pair at the divergence: the shared prompt and prefix, the succeeding
rollout's next assistant turn as chosen, the failing one's as rejected.

The prompt is the shared system and user turns (and, for a step pair, the prefix);
chosen and rejected are the agent's continuations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_PAIRS_PER_TASK = 4
LEVELS = ("episode", "step", "both")


@dataclass(frozen=True)
class Rollout:
    """One rollout of a task with its role (see :class:`curation.selection.Role`) and its
    chat turns: (message, index of the step that produced it or None)."""

    item: Any  # whatever the caller needs back (the episode row, its review, ...)
    side: str  # chosen, rejected
    source: str  # human, verifier
    kind: str = ""  # for a rejected rollout: failure, costlier
    turns: tuple = ()
    no_loss_from: int | None = None  # a chosen rollout's first wrong step people marked (no pair from it on)
    recovered: bool = False  # ... when they said it recovered, only that step
    no_loss: frozenset = frozenset()  # steps that get no loss in SFT (heuristics and review): never chosen


@dataclass(frozen=True)
class Pair:
    chosen: Rollout
    rejected: Rollout
    kind: str
    source: str  # human when people chose both sides, else verifier
    at: int = -1  # a step pair: the index in the turns where the rollouts diverge


def _check(chosen: Rollout, rejected: Rollout) -> None:
    if chosen.side != "chosen" or rejected.side != "rejected":
        raise ValueError("a pair needs a chosen and a rejected rollout")


def episode_pairs(rollouts: list[Rollout], max_pairs: int = MAX_PAIRS_PER_TASK) -> list[Pair]:
    """One task's episode pairs: people's first, then the verifier's; chosen rotating. A chosen rollout
    with a step that gets no loss in SFT (people marked it wrong, or the heuristics did) is no episode
    pair's chosen side: a preference pair has no mask, so its whole continuation would be preferred,
    the masked turns with it (step pairs may still take it, at a turn that gets loss)."""
    chosen = [r for r in rollouts if r.side == "chosen" and r.no_loss_from is None and not r.no_loss]
    human_c = [r for r in chosen if r.source == "human"]
    human_r = [r for r in rollouts if r.side == "rejected" and r.source == "human"]
    pairs = [Pair(human_c[i % len(human_c)], r, "approved_vs_rejected", "human") for i, r in enumerate(human_r)] if human_c else []
    failures = [r for r in rollouts if r.side == "rejected" and r.source == "verifier" and r.kind == "failure"]
    costlier = [r for r in rollouts if r.side == "rejected" and r.source == "verifier" and r.kind == "costlier"]
    if not human_c:
        failures = human_r + failures  # people's rejections still pair with the verifier's choice
    rest = [(r, "success_vs_failure") for r in failures] or [(r, "cheaper_vs_costlier") for r in costlier]
    if chosen:
        pairs += [Pair(chosen[i % len(chosen)], r, kind, "verifier") for i, (r, kind) in enumerate(rest)]
    for p in pairs:
        _check(p.chosen, p.rejected)
    return pairs[:max_pairs]


def _norm(msg: dict[str, Any]) -> str:
    """A message without its call ids, for comparing two rollouts' turns."""
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"] or "{}")) for c in msg.get("tool_calls") or []]
    return json.dumps([msg["role"], msg.get("content"), calls], sort_keys=True, ensure_ascii=False, default=str)


def divergence(a: tuple, b: tuple) -> int | None:
    """The index of the first assistant turn where rollouts ``a`` and ``b`` differ after
    taking the same turns and seeing the same results, or None (they differ first in what
    they saw, or one ends before they differ)."""
    i = 0
    while i < len(a) and i < len(b) and _norm(a[i][0]) == _norm(b[i][0]):
        i += 1
    if i >= len(a) or i >= len(b) or i < 2:
        return None
    if a[i][0]["role"] != "assistant" or b[i][0]["role"] != "assistant":
        return None
    return i


def _marked_wrong(r: Rollout, step: int | None) -> bool:
    """Whether people marked ``step`` of this chosen rollout wrong (no loss there)."""
    if r.no_loss_from is None or step is None:
        return False
    return step == r.no_loss_from if r.recovered else step >= r.no_loss_from


def step_pairs(rollouts: list[Rollout], max_pairs: int = MAX_PAIRS_PER_TASK) -> list[Pair]:
    """One task's step pairs: every succeeding x failing rollout that share a prefix and
    diverge, people's first; one pair per distinct divergence (same prefix and turns). A chosen turn
    is always one that gets loss in SFT."""
    chosen = sorted((r for r in rollouts if r.side == "chosen"), key=lambda r: r.source != "human")
    failed = sorted((r for r in rollouts if r.side == "rejected" and r.kind == "failure"),
                    key=lambda r: r.source != "human")
    pairs, seen = [], set()
    for c in chosen:
        for r in failed:
            at = divergence(c.turns, r.turns)
            if at is None or _marked_wrong(c, c.turns[at][1]) or c.turns[at][1] in c.no_loss:
                continue
            key = (tuple(_norm(m) for m, _ in c.turns[: at + 1]), _norm(r.turns[at][0]))
            if key in seen:
                continue
            seen.add(key)
            source = "human" if c.source == r.source == "human" else "verifier"
            pairs.append(Pair(c, r, "step_divergence", source, at))
    pairs.sort(key=lambda p: p.source != "human")
    return pairs[:max_pairs]


def to_dpo(chosen_msgs: list[dict[str, Any]], rejected_msgs: list[dict[str, Any]], tools: list[dict[str, Any]],
           meta: dict[str, Any]) -> dict[str, Any]:
    """An episode pair record: ``prompt`` (the turns before the agent's first: system and user), ``chosen`` and
    ``rejected`` continuations."""
    at = next((i for i, m in enumerate(chosen_msgs) if m.get("role") == "assistant"), 2)
    return {"prompt": chosen_msgs[:at], "chosen": chosen_msgs[at:], "rejected": rejected_msgs[at:], "tools": tools,
            "metadata": meta}


def to_step_dpo(chosen_msgs: list[dict[str, Any]], rejected_msgs: list[dict[str, Any]], at: int,
                tools: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    """A step pair record: ``prompt`` (system, user and the shared prefix up to ``at``),
    ``chosen`` and ``rejected`` each the one assistant turn at ``at``."""
    return {"prompt": chosen_msgs[:at], "chosen": [chosen_msgs[at]], "rejected": [rejected_msgs[at]], "tools": tools,
            "metadata": meta}
