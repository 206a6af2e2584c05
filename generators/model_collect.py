"""Episodes over a model: the async tool-calling loop, with a journal of replies for exactly-once resume.

Each model reply is appended to the journal (keyed by episode id and step index) as
soon as it arrives and before it is acted on. A rerun after a crash replays the
journaled replies through the deterministic phone and asks the model only for the
steps after the last one journaled, so no committed reply is ever requested again;
only the calls that were in flight when the process died are redone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from warehouse.contract import Cost, EpisodeRecord, Step, TaskSpec, ToolError
from warehouse.ids import episode_id

from generators.collect import build_record
from generators.models.endpoint import ChatRequest, RequestRejected, TransientFailure
from generators.models.engine import Engine
from generators.models.journal import MemoryJournal, ReplyJournal
from generators.phone.env import PhoneEnv
from generators.phone.families import get_family
from generators.policies.model_planner import conversation, parse_reply, request_headers, tool_schemas, with_call_id

__all__ = ["MemoryJournal", "ModelPolicy", "ReplyJournal", "run_model_episode", "run_model_episodes"]
POLICY_VERSION = "0.1"


@dataclass(frozen=True)
class ModelPolicy:
    """Who is acting: the name recorded on episodes (and in their ids), the model, the limits of an episode."""

    model: str
    max_invalid_replies: int = 3
    max_tokens: int | None = None
    max_steps: int | None = None  # replies per episode, when fewer than the task's step budget (cost control)
    version: str = POLICY_VERSION

    @property
    def name(self) -> str:
        return f"openai:{self.model}"


async def run_model_episode(task: TaskSpec, policy: ModelPolicy, engine: Engine, journal: ReplyJournal, *,
                            rollout: int, round_id: str, batch_id: str, created_at: datetime) -> EpisodeRecord:
    """Run the model on ``task`` until it finishes, runs out of budget or of usable replies, or the
    endpoint gives up on it. EndpointDown / EndpointRefused propagate: the round must stop."""
    eid = episode_id(task.task_id, policy.name, rollout)
    family = get_family(task.family)
    env = PhoneEnv(task, family)
    env.reset()
    tools = tool_schemas(task)
    allowed = set(task.tools)
    headers = request_headers(task, eid, rollout)
    journaled = journal.replies(eid)
    steps: list[Step] = []
    invalid_run, done, termination, detail = 0, False, None, ""
    while not done:
        index = len(steps)
        request = ChatRequest(messages=conversation(task, steps), tools=tools, tool_choice="auto",
                              max_tokens=policy.max_tokens, headers=headers)
        try:
            reply = await engine.journaled(journal, eid, index, request, known=journaled)
        except RequestRejected as exc:  # this conversation cannot go on; the endpoint itself is fine
            termination, detail = "request_rejected", str(exc)  # the server's own message, as it said it
            break
        except TransientFailure as exc:
            termination, detail = "endpoint_error", f"gave up after retries: {exc.kind}: {exc}"
            break
        parsed = with_call_id(parse_reply(reply.content, reply.tool_calls, allowed, reply.reasoning), index,
                              {s.action.call_id for s in steps if s.action.call_id})
        feedback, verification, done = env.step(parsed.action)
        if parsed.reason:
            invalid_run += 1
            feedback.error = ToolError(code="INVALID_ACTION", message=parsed.reason, retryable=True,
                                       hint="reply with exactly one call to one of the listed tools, "
                                            "with a JSON object as arguments")
            verification.label = "invalid_call"
        else:
            invalid_run = 0
        steps.append(Step(episode_id=eid, index=index, actor="planner", action=parsed.action, feedback=feedback,
                          verification=verification,
                          cost=Cost(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                                    latency_ms=reply.latency_ms)))
        if not done and invalid_run >= policy.max_invalid_replies:
            termination = "invalid_replies"
            break
        if not done and policy.max_steps and len(steps) >= policy.max_steps:
            termination = "budget_exhausted"
            detail = f"stopped at openai.max_steps ({policy.max_steps}), within a step budget of {task.step_budget}"
            break
    return build_record(task, family, env, steps, policy_name=policy.name, model=policy.model,
                        policy_version=policy.version, rollout=rollout, round_id=round_id, batch_id=batch_id,
                        created_at=created_at, termination=termination, failure_detail=detail)


async def run_model_episodes(jobs: list[tuple[TaskSpec, int]], policy: ModelPolicy, engine: Engine,
                             journal: ReplyJournal, *, round_id: str, batch_id: str,
                             created_at: datetime) -> list[EpisodeRecord]:
    """Run ``(task, rollout)`` jobs concurrently (the engine bounds the calls); records in job order.

    If the endpoint goes down, the other episodes are cancelled and the error propagates;
    their journaled replies stay for the rerun."""
    try:
        async with asyncio.TaskGroup() as group:
            futures = [group.create_task(run_model_episode(task, policy, engine, journal, rollout=rollout,
                                                           round_id=round_id, batch_id=batch_id,
                                                           created_at=created_at))
                       for task, rollout in jobs]
    except BaseExceptionGroup as group_error:  # the first failure says it best (e.g. EndpointDown)
        raise group_error.exceptions[0] from None
    return [f.result() for f in futures]
