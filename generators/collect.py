"""The collection engine: run one policy on one task in the phone, record everything.

Pure and deterministic: the same task, policy, rollout and ids give the same record
(``created_at`` is the caller's). Writing records anywhere is the caller's job.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from warehouse.contract import Action, Cost, Episode, EpisodeRecord, Outcome, Step, TaskSpec
from warehouse.ids import episode_id

from generators.phone.attribution import attribute_failure, classify
from generators.phone.env import ENV_VERSION, PhoneEnv
from generators.phone.families import get_family


class Policy(Protocol):
    """What the collector needs of a policy (the scripted one, or a model behind an endpoint)."""

    name: str
    version: str
    model: str

    def start(self, task: TaskSpec, rollout: int) -> None: ...

    def next_action(self, history: list[Step]) -> Action: ...


def run_episode(task: TaskSpec, policy: Policy, *, rollout: int, round_id: str, batch_id: str,
                created_at: datetime) -> EpisodeRecord:
    """Run ``policy`` on ``task`` until it finishes or the step budget is spent."""
    eid = episode_id(task.task_id, policy.name, rollout)
    family = get_family(task.family)
    env = PhoneEnv(task, family)
    env.reset()
    policy.start(task, rollout)
    steps: list[Step] = []
    done = False
    while not done:
        action = policy.next_action(steps)
        feedback, verification, done = env.step(action)
        steps.append(Step(episode_id=eid, index=len(steps), actor="planner", action=action, feedback=feedback,
                          verification=verification, cost=Cost()))
    return build_record(task, family, env, steps, policy_name=policy.name, model=getattr(policy, "model", ""),
                        policy_version=policy.version, rollout=rollout, round_id=round_id, batch_id=batch_id,
                        created_at=created_at)


def build_record(task: TaskSpec, family: Any, env: PhoneEnv, steps: list[Step], *, policy_name: str, model: str,
                 policy_version: str, rollout: int, round_id: str, batch_id: str, created_at: datetime,
                 termination: str | None = None, failure_detail: str = "") -> EpisodeRecord:
    """The episode, its steps and its outcome once the episode is over (``termination``
    overrides the environment's, e.g. when the model endpoint gave up; ``failure_detail``
    says why in words, e.g. the server's message)."""
    eid = episode_id(task.task_id, policy_name, rollout)
    results, success, progress, mines = env.evaluate()
    reference = family.reference_actions(task)
    termination = termination or env.termination or "harness_error"
    finish_args: dict[str, Any] = env.finish_args or {}
    outcome = Outcome(
        episode_id=eid, termination=termination, finish_status=finish_args.get("status", ""),
        final_answer=finish_args.get("answer"), claims=list(finish_args.get("claims") or []),
        success=success, progress=progress, requirement_results=results, minefields_hit=mines,
        final_state_hash=env.state_hash(), steps=len(steps),
        tool_calls=sum(1 for s in steps if s.action.kind == "tool_call"),
        prompt_tokens=sum(s.cost.prompt_tokens for s in steps),
        completion_tokens=sum(s.cost.completion_tokens for s in steps),
        latency_ms=round(sum(s.cost.latency_ms for s in steps), 3),
        efficiency=round(min(1.0, task.optimal_steps / len(steps)), 6) if steps else 0.0,
        failure=classify(task, reference, steps, attribute_failure(task, reference, steps, results, mines, termination,
                                                                   success)),
    )
    if failure_detail and outcome.failure is not None:
        outcome.failure.detail = failure_detail
    episode = Episode(
        episode_id=eid, task_id=task.task_id, family=task.family, template=task.template, split=task.split,
        instruction=task.instruction, policy=policy_name, model=model, rollout=rollout,
        scenario_id=task.scenario_id, session=task.session,
        round_id=round_id, batch_id=batch_id, generator_version=task.generator_version, env_version=ENV_VERSION,
        policy_version=policy_version, created_at=created_at,
    )
    return EpisodeRecord(episode=episode, steps=steps, outcome=outcome)


def later_sessions(tasks: list[TaskSpec]) -> dict[str, list[TaskSpec]]:
    """Per scenario id, its sessions after the first, in order (from a round's task list)."""
    out: dict[str, list[TaskSpec]] = {}
    for t in sorted((t for t in tasks if t.scenario_id and t.session > 1), key=lambda t: t.session):
        out.setdefault(t.scenario_id, []).append(t)
    return out


def run_scenario(first: TaskSpec, later: list[TaskSpec], policy: Policy, *, rollout: int, round_id: str,
                 batch_id: str, created_at: datetime) -> list[EpisodeRecord]:
    """Every session of a scenario, in order, by the same policy and rollout (one record per session)."""
    return [run_episode(t, policy, rollout=rollout, round_id=round_id, batch_id=batch_id, created_at=created_at)
            for t in [first, *later]]


def replay_final_hash(task: TaskSpec, actions: list[Action]) -> str:
    """Re-execute recorded actions in a fresh world; the final state hash (for the replay check)."""
    env = PhoneEnv(task)
    env.reset()
    for action in actions:
        _, _, done = env.step(action)
        if done:
            break
    return env.world.state_hash()
