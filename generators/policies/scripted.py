"""The offline scripted policy: the reference solution, with realistic mistakes.

Per episode, with a probability that grows with the task's capability tags and
difficulty, it makes exactly one mistake of the kinds agents really make. It is
deterministic given (seed, task_id, rollout), so a round can be re-collected exactly.
"""

from __future__ import annotations

import math
import random
from typing import Any

from generators.collect import Turn
from generators.phone.families import Family, get_family
from generators.phone.families.mutants import ID_ARGS, first_write_index, set_answer, wrong_value
from generators.phone.tools import tool_kind
from warehouse.contract import Action, TaskSpec
from warehouse.ids import digest

# chance of one mistake per capability tag; a task's tags combine as independent risks
DEFAULT_ERROR_RATES: dict[str, float] = {
    "tool_use": 0.10,
    "disambiguation": 0.25,
    "aggregation": 0.30,
    "ordering": 0.15,
    "recovery": 0.20,
    "clarification": 0.28,
    "cross_app": 0.22,
    # the agent services: per-capability skill levels, memory the weakest as in MobilePA-Bench
    "memory": 0.30,
    "memory_recall": 0.12,
    "memory_write": 0.12,
    "multi_session": 0.05,
    "skills": 0.15,
    "skill_gating": 0.08,
    "skill_authoring": 0.12,
    "subagents": 0.12,
    "delegation": 0.08,
    "all": 0.10,
    "long_horizon": 0.12,
}
# mistake kind -> relative frequency; repeated_failing_call is the one an agent recovers from
MISTAKES: dict[str, float] = {
    "wrong_argument": 0.35,
    "skipped_step": 0.2,
    "repeated_failing_call": 0.2,
    "early_finish": 0.15,
    "wrong_order": 0.1,
}
DIFFICULTY_STEP = 0.4  # each difficulty level above 1 raises the mistake chance by this share


class ScriptedPolicy:
    """Follows the family's reference actions, with at most one mistake per episode.

    The collector's policy interface: ``begin`` gives an actor of its own for each episode
    (so a shard's episodes can run concurrently), whose ``act`` never waits."""

    name = "scripted"
    version = "0.1"
    model = ""
    max_invalid_replies = 3  # never reached: a script makes no unusable replies
    max_steps = None  # a script stops within the step budget on its own

    def __init__(self, error_rates: dict[str, float] | None = None, seed: int = 0):
        self.error_rates = dict(DEFAULT_ERROR_RATES if error_rates is None else error_rates)
        self.seed = seed
        self.plan: list[Action] = []
        self.mistake: str | None = None
        self._next = 0

    def mistake_rate(self, task: TaskSpec) -> float:
        """The chance of a mistake on this task: its tags' risks combined, scaled by difficulty."""
        clean = math.prod(1.0 - self.error_rates.get(c, 0.0) for c in task.capabilities)
        return min(0.95, (1.0 - clean) * (1.0 + DIFFICULTY_STEP * (task.difficulty - 1)))

    def start(self, task: TaskSpec, rollout: int, family: Family | None = None) -> None:
        """Plan the episode: the reference actions, perhaps with one mistake."""
        family = family or get_family(task.family)
        rng = random.Random(int(digest([self.seed, task.task_id, rollout], 16), 16))
        reference = family.reference_actions(task)
        self.mistake = None
        if rng.random() < self.mistake_rate(task):
            kinds = list(MISTAKES)
            self.mistake = rng.choices(kinds, weights=[MISTAKES[k] for k in kinds])[0]
        self.mistake, self.plan = _with_mistake(self.mistake, task, family, reference, rng)
        self._next = 0

    def begin(self, task: TaskSpec, episode_id: str, rollout: int) -> ScriptedPolicy:
        """An actor for one episode: a copy of this policy, started on ``task``."""
        actor = type(self)(self.error_rates, self.seed)
        actor.start(task, rollout)
        return actor

    async def act(self, steps: list[Any]) -> Turn:
        """The next planned action as the collector's turn."""
        return Turn(action=self.next_action(steps))

    def next_action(self, history: list[Any] | None = None) -> Action:
        """The next planned action (history is not needed by a script); finish once the plan is spent."""
        if self._next >= len(self.plan):
            return Action(kind="finish", tool="finish", arguments={"status": "partial", "summary": "out of plan"},
                          call_id=f"call-{self._next}")
        action = self.plan[self._next].model_copy(deep=True)
        if action.kind in ("tool_call", "ask_user", "finish"):  # all three are function calls to a model
            action.call_id = f"call-{self._next}"
        self._next += 1
        return action


def _with_mistake(kind: str | None, task: TaskSpec, family: Family, ref: list[Action],
                  rng: random.Random) -> tuple[str | None, list[Action]]:
    """(the mistake actually made, the plan); a kind that does not fit the task falls back."""
    plan = [a.model_copy(deep=True) for a in ref]
    writes = [i for i, a in enumerate(plan) if a.kind == "tool_call" and tool_kind(a.tool) == "write"]
    if kind == "wrong_order" and len(writes) < 2:
        kind = "wrong_argument"  # nothing to reorder: the likeliest slip is then a wrong value
    if kind == "skipped_step" and not writes:
        kind = "early_finish"
    if kind == "wrong_argument":
        return kind, family.mistake(task, plan, rng)
    if kind == "wrong_order":
        i = rng.randrange(len(writes) - 1)
        a, b = writes[i], writes[i + 1]
        plan[a], plan[b] = plan[b], plan[a]
        return kind, plan
    if kind == "skipped_step":
        loads = [i for i, a in enumerate(plan) if a.tool == "load_skill"]
        if loads and rng.random() < 0.5:  # the guidance skipped: its gated tool then fails SKILL_NOT_LOADED
            del plan[loads[0]]
            return kind, plan
        asks = [i for i, a in enumerate(plan) if a.kind == "ask_user"]
        # the step a hasty agent skips is the question: it acts on its own guess
        del plan[asks[0] if asks else rng.choice(writes)]
        return kind, plan
    if kind == "early_finish":
        calls = [i for i, a in enumerate(plan) if a.kind == "tool_call"]
        cut = calls[-1] if len(calls) == 1 else rng.choice(calls[1:])  # stop before some needed call
        done = plan[-1].model_copy(deep=True)
        if "answer" in done.arguments:  # finishing without looking means guessing
            set_answer(done, wrong_value("answer", done.arguments["answer"], task, rng))
        return kind, plan[:cut] + [done]
    if kind == "repeated_failing_call":
        i = first_write_index(plan)
        i = next(j for j, a in enumerate(plan) if a.kind == "tool_call") if i is None else i
        bad = _failing_variant(plan[i])
        return kind, plan[:i] + [bad, bad.model_copy(deep=True)] + plan[i:]
    return kind, plan


def _failing_variant(action: Action) -> Action:
    """The same call with the kind of argument slip that fails: a made-up id, a mistyped value."""
    bad = action.model_copy(deep=True)
    args = bad.arguments
    id_arg = next((k for k in ID_ARGS if k in args), None)
    if id_arg:
        args[id_arg] = str(args[id_arg]).rsplit("-", 1)[0] + "-9999"
    elif any(isinstance(v, bool) for v in args.values()):
        k = next(k for k, v in args.items() if isinstance(v, bool))
        args[k] = "yes" if args[k] else "no"  # a string where a boolean belongs
    elif "date" in args:
        args["date"] = "the day after"
    else:
        args["limit"] = 50  # a parameter the tool does not take
    return bad
