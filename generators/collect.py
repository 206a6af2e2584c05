"""The collection engine: run one policy on one task in the phone, record everything.

One loop for every policy. A policy begins an episode and returns an *actor*; the
actor's ``act`` is a coroutine that gives the next :class:`Turn` (an action and what it
cost) or stops the episode. The scripted policy never waits inside ``act``; a model
policy awaits the endpoint. So a shard of either kind runs through
:func:`collect_episodes`, and a single scripted episode can also run without an event
loop (:func:`run_episode`).

Deterministic: the same task, policy, rollout and ids give the same record
(``created_at`` is the caller's). Writing records anywhere is the caller's job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from generators.phone.attribution import attribute_failure, classify
from generators.phone.env import ENV_VERSION, PhoneEnv, user_question
from generators.phone.families import get_family
from generators.phone.user import UserAnswer
from warehouse.contract import (
    Action,
    Cost,
    Episode,
    EpisodeRecord,
    Feedback,
    Outcome,
    Step,
    TaskSpec,
    ToolError,
    Verification,
    is_subagent,
)
from warehouse.ids import episode_id

__all__ = ["Actor", "Policy", "Turn", "User", "build_record", "collect_episode", "collect_episodes", "run_episode",
           "run_now"]

INVALID_HINT = "reply with exactly one call to one of the listed tools, with a JSON object as arguments"


@dataclass
class Turn:
    """What an actor does next: an ``action`` (with its cost, and why it is invalid if it is),
    or ``stop``: the termination reason when the episode cannot go on (the endpoint gave up or
    refused the request), with its ``detail``."""

    action: Action | None = None
    cost: Cost = field(default_factory=Cost)
    invalid_reason: str = ""
    stop: str = ""
    detail: str = ""  # why it stopped, in words (e.g. the server's message)


class Actor(Protocol):
    """One episode of a policy."""

    async def act(self, steps: list[Step]) -> Turn: ...


class User(Protocol):
    """Who answers ask_user when it is not the scripted user (a model playing the persona)."""

    async def answer(self, task: TaskSpec, episode_id: str, index: int, question: str,
                     options: list[Any] | None = None) -> UserAnswer: ...


class Policy(Protocol):
    """What the collector needs of a policy (the scripted one, or a model behind an endpoint)."""

    name: str
    version: str
    model: str
    max_invalid_replies: int
    max_steps: int | None  # replies per episode, when fewer than the task's step budget (cost control)

    def begin(self, task: TaskSpec, episode_id: str, rollout: int) -> Actor: ...


async def collect_episode(task: TaskSpec, policy: Policy, *, rollout: int, round_id: str, batch_id: str,
                          created_at: datetime, user: User | None = None) -> EpisodeRecord:
    """Run ``policy`` on ``task`` until it finishes, spends its step budget, runs out of usable
    replies, or its actor stops. ``user`` answers ask_user (default: the scripted user).

    The record holds the planner's steps and, right after a step that set a sub-agent to work,
    that sub-agent's own steps (actor ``subagent:<name>``); the policy sees its own steps only."""
    eid = episode_id(task.task_id, policy.name, rollout)
    family = get_family(task.family)
    env = PhoneEnv(task, family)
    env.reset()
    actor = policy.begin(task, eid, rollout)
    steps: list[Step] = []  # every step of the record
    own: list[Step] = []  # the planner's
    fallbacks: list[dict[str, Any]] = []
    invalid_run, done, termination, detail = 0, False, None, ""
    while not done:
        turn = await actor.act(own)
        if turn.stop:
            termination, detail = turn.stop, turn.detail
            break
        answer = None
        if user is not None and not turn.invalid_reason and (asked := user_question(turn.action)):
            said = await user.answer(task, eid, len(steps), *asked)
            answer = said.text
            if said.problem:
                fallbacks.append({"step": len(steps), "reason": said.problem, "raw": said.raw})
        feedback, verification, done = env.step(turn.action, answer)
        if turn.invalid_reason:
            invalid_run += 1
            feedback.error = ToolError(code="INVALID_ACTION", message=turn.invalid_reason, retryable=True,
                                       hint=INVALID_HINT)
            verification.label = "invalid_call"
        else:
            invalid_run = 0
        own.append(Step(episode_id=eid, index=len(steps), actor="planner", action=turn.action, feedback=feedback,
                        verification=verification, cost=turn.cost))
        steps.append(own[-1])
        steps.extend(delegated_steps(eid, len(steps), env.delegated, feedback, verification))
        if not done and invalid_run >= policy.max_invalid_replies:
            termination = "invalid_replies"
            break
        if not done and policy.max_steps and len(own) >= policy.max_steps:
            termination = "budget_exhausted"
            detail = f"stopped at openai.max_steps ({policy.max_steps}), within a step budget of {task.step_budget}"
            break
    return build_record(task, family, env, steps, policy_name=policy.name, model=policy.model,
                        policy_version=policy.version, rollout=rollout, round_id=round_id, batch_id=batch_id,
                        created_at=created_at, termination=termination, failure_detail=detail,
                        user_fallbacks=fallbacks)


def delegated_steps(eid: str, start: int, delegated: list[tuple[str, str, dict[str, Any], bool, str]],
                    feedback: Feedback, verification: Verification) -> list[Step]:
    """The sub-agents' own steps set off by the planner's last step, as rows from index ``start``:
    each its operation and whether it worked; the world's change and the state hash stay on the
    planner's step (the state after it), the running progress is the planner step's."""
    out = []
    for i, (who, op, args, ok, code) in enumerate(delegated):
        error = None if ok else ToolError(code=code or "FAILED", message=f"{op} failed" + (f": {code}" if code else ""))
        out.append(Step(episode_id=eid, index=start + i, actor=who, action=Action(kind="tool_call", tool=op,
                                                                                   arguments=args),
                        feedback=Feedback(ok=ok, error=error, state_hash=feedback.state_hash),
                        verification=Verification(progress=verification.progress,
                                                  label="ok" if ok else "recoverable_error")))
    return out


async def collect_episodes(jobs: list[tuple[TaskSpec, int]], policy: Policy, *, round_id: str, batch_id: str,
                           created_at: datetime, user: User | None = None) -> list[EpisodeRecord]:
    """Run ``(task, rollout)`` jobs concurrently; records in job order.

    If one episode raises (the endpoint went down), the others are cancelled and the first
    error propagates; what a policy journaled stays for the rerun."""
    try:
        async with asyncio.TaskGroup() as group:
            futures = [group.create_task(collect_episode(task, policy, rollout=rollout, round_id=round_id,
                                                         batch_id=batch_id, created_at=created_at, user=user))
                       for task, rollout in jobs]
    except BaseExceptionGroup as group_error:  # the first failure says it best (e.g. EndpointDown)
        raise group_error.exceptions[0] from None
    return [f.result() for f in futures]


def run_now(coro: Coroutine[Any, Any, Any]) -> Any:
    """Drive a coroutine that never waits (a scripted policy) to its result, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("this policy waits on I/O: run it with collect_episode inside an event loop")


def run_episode(task: TaskSpec, policy: Policy, *, rollout: int, round_id: str, batch_id: str,
                created_at: datetime) -> EpisodeRecord:
    """:func:`collect_episode` for a policy that never waits (the scripted one), called synchronously."""
    return run_now(collect_episode(task, policy, rollout=rollout, round_id=round_id, batch_id=batch_id,
                                   created_at=created_at))


def build_record(task: TaskSpec, family: Any, env: PhoneEnv, steps: list[Step], *, policy_name: str, model: str,
                 policy_version: str, rollout: int, round_id: str, batch_id: str, created_at: datetime,
                 termination: str | None = None, failure_detail: str = "",
                 user_fallbacks: list[dict[str, Any]] | None = None) -> EpisodeRecord:
    """The episode, its steps and its outcome once the episode is over (``termination``
    overrides the environment's, e.g. when the model endpoint gave up; ``failure_detail``
    says why in words, e.g. the server's message)."""
    eid = episode_id(task.task_id, policy_name, rollout)
    own = [s for s in steps if not is_subagent(s.actor)]  # what the planner did: counted, judged, attributed
    results, success, progress, mines = env.evaluate()
    reference = family.reference_actions(task)
    termination = termination or env.termination or "harness_error"
    finish_args: dict[str, Any] = env.finish_args or {}
    outcome = Outcome(
        episode_id=eid, termination=termination, finish_status=finish_args.get("status", ""),
        final_answer=finish_args.get("answer"), claims=list(finish_args.get("claims") or []),
        success=success, progress=progress, requirement_results=results, minefields_hit=mines,
        final_state_hash=env.state_hash(), steps=len(steps),
        tool_calls=sum(1 for s in own if s.action.kind == "tool_call"),
        prompt_tokens=sum(s.cost.prompt_tokens for s in steps),
        completion_tokens=sum(s.cost.completion_tokens for s in steps),
        latency_ms=round(sum(s.cost.latency_ms for s in steps), 3),
        efficiency=round(min(1.0, task.optimal_steps / len(own)), 6) if own else 0.0,
        failure=classify(task, reference, own, attribute_failure(task, reference, own, results, mines, termination,
                                                                 success)),
        user_fallbacks=list(user_fallbacks or []),
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
