"""Episodes over a model: the async tool-calling loop, with a journal of replies for exactly-once resume.

Each model reply is appended to the journal (keyed by episode id and step index) as
soon as it arrives and before it is acted on. A rerun after a crash replays the
journaled replies through the deterministic phone and asks the model only for the
steps after the last one journaled, so no committed reply is ever requested again;
only the calls that were in flight when the process died are redone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from generators.collect import Turn, collect_episode, collect_episodes
from generators.models.endpoint import ChatRequest, RequestRejected, TransientFailure
from generators.models.engine import Engine
from generators.models.journal import MemoryJournal, ReplyJournal
from generators.policies.model_chat import conversation, parse_reply, request_headers, tool_schemas, with_call_id
from warehouse.contract import Cost, EpisodeRecord, Step, TaskSpec

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


@dataclass(frozen=True)
class BoundModelPolicy:
    """A ModelPolicy bound to its engine and journal, in the collector's interface: ``policy``'s
    identity and limits, the shared ``engine`` for the calls, the ``journal`` that makes every
    committed reply exactly-once."""

    policy: ModelPolicy
    engine: Engine
    journal: ReplyJournal

    name = property(lambda self: self.policy.name)
    version = property(lambda self: self.policy.version)
    model = property(lambda self: self.policy.model)
    max_invalid_replies = property(lambda self: self.policy.max_invalid_replies)
    max_steps = property(lambda self: self.policy.max_steps)

    def begin(self, task: TaskSpec, episode_id: str, rollout: int) -> ModelActor:
        return ModelActor(self, task, episode_id, rollout)


class ModelActor:
    """One episode over the model: a journaled reply is replayed, any other is requested."""

    def __init__(self, bound: BoundModelPolicy, task: TaskSpec, eid: str, rollout: int):
        self.bound, self.task, self.eid = bound, task, eid
        self.tools = tool_schemas(task)
        self.allowed = set(task.tools)
        self.headers = request_headers(task, eid, rollout)
        self.journaled = bound.journal.replies(eid)

    async def act(self, steps: list[Step]) -> Turn:
        index = len(steps)
        request = ChatRequest(messages=conversation(self.task, steps), tools=self.tools, tool_choice="auto",
                              max_tokens=self.bound.policy.max_tokens, headers=self.headers)
        try:
            reply = await self.bound.engine.journaled(self.bound.journal, self.eid, index, request,
                                                        known=self.journaled)
        except RequestRejected as exc:  # this conversation cannot go on; the endpoint itself is fine
            return Turn(stop="request_rejected", detail=str(exc))  # the server's own message, as it said it
        except TransientFailure as exc:
            return Turn(stop="endpoint_error", detail=f"gave up after retries: {exc.kind}: {exc}")
        parsed = with_call_id(parse_reply(reply.content, reply.tool_calls, self.allowed, reply.reasoning), index,
                              {s.action.call_id for s in steps if s.action.call_id})
        return Turn(action=parsed.action, invalid_reason=parsed.reason,
                    cost=Cost(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                              latency_ms=reply.latency_ms))


async def run_model_episode(task: TaskSpec, policy: ModelPolicy, engine: Engine, journal: ReplyJournal, *,
                            rollout: int, round_id: str, batch_id: str, created_at: datetime) -> EpisodeRecord:
    """Run the model on ``task`` (see :func:`generators.collect.collect_episode`). EndpointDown /
    EndpointRefused propagate: the round must stop."""
    return await collect_episode(task, BoundModelPolicy(policy, engine, journal), rollout=rollout, round_id=round_id,
                                 batch_id=batch_id, created_at=created_at)


async def run_model_episodes(jobs: list[tuple[TaskSpec, int]], policy: ModelPolicy, engine: Engine,
                             journal: ReplyJournal, *, round_id: str, batch_id: str,
                             created_at: datetime) -> list[EpisodeRecord]:
    """Run ``(task, rollout)`` jobs concurrently (the engine bounds the calls); records in job order
    (see :func:`generators.collect.collect_episodes`)."""
    return await collect_episodes(jobs, BoundModelPolicy(policy, engine, journal), round_id=round_id,
                                  batch_id=batch_id, created_at=created_at)
