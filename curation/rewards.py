"""Rewards a policy cannot game: what one rollout of a task earns. Pure (the environment is in-process).

No action, no reward: a requirement counts only when the rollout changed it, i.e. it passes
after the rollout and passes neither on the untouched world nor after an immediate finish. Progress alone
would pay an empty response for the requirements the world already meets (0.6 on a typical
task). On that base:

- ``partial=False`` (the default): 1.0 on success, else 0.0. ``partial=True``: the weighted
  share of the requirements the rollout changed (success still earns 1.0).
- ``cost_weight`` (CARE's cost-aware shaping; 0 = off): a success earns
  ``1 - cost_weight * (1 - efficiency)``, efficiency = optimal steps / steps taken (and, with
  ``token_budget``, times budget / tokens when over it): the same success with fewer steps and
  tokens earns more, and never less than a failure.
- ``competence=True`` (CARE's competence-aware regime): the group's success rate on the task
  chooses the regime: below ``low`` the policy is learning it, so partial credit is paid;
  above ``high`` it has mastered it, so cost-aware shaping is on (``cost_weight`` or 0.5);
  between, success only.

:func:`baseline_table` states what empty, no-op, random and reference rollouts earn under
given options; every verl export's manifest prints it.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from typing import Any

from generators.phone import PhoneEnv, get_family
from generators.phone.tools import META_SCHEMAS
from generators.phone.verifier import NoVerifier as NoVerifier  # the verifier's refusal, raised here too
from generators.phone.verifier import verifiable
from warehouse.contract import Action, TaskSpec

Call = tuple[str, Any]


@dataclass(frozen=True)
class RewardOptions:
    partial: bool = False
    cost_weight: float = 0.0
    token_budget: int | None = None
    competence: bool = False
    low: float = 0.3
    high: float = 0.7

    def __post_init__(self) -> None:
        if not 0.0 <= self.cost_weight <= 1.0:
            raise ValueError(f"cost_weight {self.cost_weight} is not between 0 and 1")
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise ValueError(f"competence thresholds low={self.low}, high={self.high} are not 0 <= low <= high <= 1")

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> RewardOptions:
        """Options from verl's ``reward_kwargs`` (unknown names are an error, not ignored)."""
        unknown = set(kwargs) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown reward options: {', '.join(sorted(unknown))}")
        return cls(**kwargs)


@dataclass(frozen=True)
class Rollout:
    """What the environment made of a rollout: per requirement passed or not, success, steps taken."""

    passed: dict[str, bool]
    success: bool
    steps: int


def action_of(i: int, name: str, args: Any) -> Action:
    """Call ``i`` of a rollout as an environment action (not a JSON object: an invalid action)."""
    if not name or not isinstance(args, dict):
        return Action(kind="invalid", tool=name, raw=json.dumps(args) if not isinstance(args, str) else args)
    kind = name if name in META_SCHEMAS else "tool_call"
    return Action(kind=kind, tool=name, arguments=args, call_id=f"call_{i}")


def run(task: TaskSpec, calls: list[Call]) -> Rollout:
    """Run ``calls`` on a fresh world of ``task`` through the one environment step function."""
    env = PhoneEnv(verifiable(task), get_family(task.family))
    env.reset()
    steps = 0
    for i, (name, args) in enumerate(calls):
        if env.done:
            break
        env.step(action_of(i, name, args))
        steps += 1
    results, success, _, _ = env.evaluate()
    return Rollout({r.id: r.passed for r in results}, bool(success), steps)


NO_OP: list[Call] = [("finish", {"status": "completed", "summary": "Done."})]


def untouched(task: TaskSpec) -> Rollout:
    """What doing nothing passes: a requirement that the empty rollout or an immediate finish passes."""
    empty, no_op = run(task, []), run(task, NO_OP)
    return Rollout({k: v or no_op.passed.get(k, False) for k, v in empty.passed.items()}, False, 0)


def changed_credit(task: TaskSpec, rollout: Rollout, untouched: Rollout) -> float:
    """The weighted share of the requirements the untouched world fails that the rollout passes."""
    open_ = [r for r in task.requirements if not untouched.passed.get(r.id, False)]
    total = sum(r.weight for r in open_)
    if not total:
        return 0.0
    return sum(r.weight for r in open_ if rollout.passed.get(r.id, False)) / total


def efficiency(task: TaskSpec, steps: int, tokens: int | None, token_budget: int | None) -> float:
    """1.0 at the optimal step count (and within the token budget), less the more it takes."""
    eff = min(1.0, task.optimal_steps / steps) if steps and task.optimal_steps else 1.0
    if token_budget and tokens and tokens > token_budget:
        eff *= token_budget / tokens
    return eff


def regime(options: RewardOptions, success_rate: float | None) -> RewardOptions:
    """The options in force for a task whose group succeeds at ``success_rate`` (competence-aware)."""
    if not options.competence or success_rate is None:
        return options
    if success_rate < options.low:
        return RewardOptions(partial=True, token_budget=options.token_budget)
    if success_rate > options.high:
        return RewardOptions(partial=False, cost_weight=options.cost_weight or 0.5, token_budget=options.token_budget)
    return RewardOptions(partial=False, token_budget=options.token_budget)


def reward(task: TaskSpec, calls: list[Call], options: RewardOptions = RewardOptions(), *,
           tokens: int | None = None, success_rate: float | None = None) -> float:
    """What one rollout (its tool calls in order) earns; see the module doc. NoVerifier for a task
    without requirements."""
    opts = regime(options, success_rate)
    rollout = run(task, calls)
    credit = changed_credit(task, rollout, untouched(task))
    if rollout.success and credit > 0.0:
        eff = efficiency(task, rollout.steps, tokens, opts.token_budget)
        return round(1.0 - opts.cost_weight * (1.0 - eff), 6)
    return round(credit, 6) if opts.partial else 0.0


# --- what each kind of rollout earns -------------------------------------------------------------

def random_calls(task: TaskSpec, reference: list[Call], rng: random.Random, n: int) -> list[Call]:
    """``n`` calls of random tools of the task, each with the arguments of a random reference call
    (plausible values, wrong places), then finish."""
    args = [a for _, a in reference if isinstance(a, dict)] or [{}]
    tools = sorted(task.tools) or ["finish"]
    return [(rng.choice(tools), rng.choice(args)) for _ in range(n)] + [("finish", {"status": "completed", "summary": ""})]


def kinds_of_rollout(task: TaskSpec, reference: list[Call], seed: int = 0) -> dict[str, list[Call]]:
    """The four rollouts of the table: empty, no-op (finish at once), random calls, the reference."""
    rng = random.Random(f"{task.task_id}:{seed}")
    return {"empty": [], "no_op": NO_OP,
            "random": random_calls(task, reference, rng, max(1, task.optimal_steps)), "reference": reference}


PRESETS: dict[str, RewardOptions] = {
    "default": RewardOptions(),
    "partial": RewardOptions(partial=True),
    "cost_weight=0.5": RewardOptions(cost_weight=0.5),
}
OLD = "verifier_progress"  # what the reward was before: the verifier's progress, which pays doing nothing


def baseline_table(tasks: list[tuple[TaskSpec, list[Call]]]) -> dict[str, Any]:
    """Mean reward of empty, no-op, random and reference rollouts over ``tasks`` (each with its
    reference calls), under each preset, beside the verifier's raw progress."""
    sums: dict[str, dict[str, float]] = {p: {} for p in [*PRESETS, OLD]}
    for task, reference in tasks:
        for kind, calls in kinds_of_rollout(task, reference).items():
            for name in sums:
                value = progress(task, calls) if name == OLD else reward(task, calls, PRESETS[name])
                sums[name][kind] = sums[name].get(kind, 0.0) + value
    n = len(tasks)
    means = {p: {k: round(v / n, 3) for k, v in kinds.items()} for p, kinds in sums.items()} if n else {}
    return {"tasks": n, "mean_reward": means, "options": {p: asdict(o) for p, o in PRESETS.items()}}


def progress(task: TaskSpec, calls: list[Call]) -> float:
    """The verifier's raw progress (what the old reward paid): kept only to show why it is not the reward."""
    env = PhoneEnv(task, get_family(task.family))
    env.reset()
    for i, (name, args) in enumerate(calls):
        if env.done:
            break
        env.step(action_of(i, name, args))
    return float(env.evaluate()[2])
