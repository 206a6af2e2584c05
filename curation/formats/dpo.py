"""Preference pairs: for one task, a chosen rollout and a rejected one.

Chosen: a preferred success. Rejected: a failed rollout of the same task (kinds
``success_vs_failure``) or, when none, a costlier successful alternative
(``cheaper_vs_costlier``). The prompt is the shared system and user turns; chosen and
rejected are the agent's continuations. Pure: takes a task's rollouts, returns pairs.
"""

from __future__ import annotations

from typing import Any

MAX_PAIRS_PER_TASK = 4


def preference_pairs(chosen: list[dict[str, Any]], failures: list[dict[str, Any]],
                     alternatives: list[dict[str, Any]], max_pairs: int = MAX_PAIRS_PER_TASK) -> list[tuple[dict, dict, str]]:
    """(chosen, rejected, kind) triples from one task's rollouts, chosen rotating."""
    rejected = [(r, "success_vs_failure") for r in failures] or [(r, "cheaper_vs_costlier") for r in alternatives]
    if not chosen or not rejected:
        return []
    pairs = []
    for i, (rej, kind) in enumerate(rejected[:max_pairs]):
        pairs.append((chosen[i % len(chosen)], rej, kind))
    return pairs


def to_dpo(chosen_msgs: list[dict[str, Any]], rejected_msgs: list[dict[str, Any]], tools: list[dict[str, Any]],
           meta: dict[str, Any]) -> dict[str, Any]:
    """A pair record: ``prompt`` (system + user), ``chosen`` and ``rejected`` continuations."""
    prompt = chosen_msgs[:2]
    return {"prompt": prompt, "chosen": chosen_msgs[2:], "rejected": rejected_msgs[2:], "tools": tools, "metadata": meta}
