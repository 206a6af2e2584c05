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
from typing import Any, Protocol

from warehouse.contract import Cost, EpisodeRecord, Step, TaskSpec

from generators.collect import Turn, collect_episode
from generators.models.endpoint import ChatReply, ChatRequest, RequestRejected, TransientFailure
from generators.models.engine import Engine
from generators.policies.model_planner import conversation, parse_reply, request_headers, tool_schemas

POLICY_VERSION = "0.1"


class ReplyJournal(Protocol):
    """Append-only store of model replies, keyed by (episode id, step index)."""

    def replies(self, episode_id: str) -> dict[int, dict[str, Any]]: ...

    def append(self, episode_id: str, index: int, reply: dict[str, Any]) -> None: ...


class MemoryJournal:
    """A journal in memory (tests, benchmarks)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[int, dict[str, Any]]] = {}

    def replies(self, episode_id: str) -> dict[int, dict[str, Any]]:
        return dict(self.entries.get(episode_id, {}))

    def append(self, episode_id: str, index: int, reply: dict[str, Any]) -> None:
        self.entries.setdefault(episode_id, {})[index] = reply


@dataclass(frozen=True)
class ModelPolicy:
    """Who is acting: the name recorded on episodes (and in their ids), the model, the limits of an episode."""

    model: str
    max_invalid_replies: int = 3
    max_tokens: int | None = None
    version: str = POLICY_VERSION

    @property
    def name(self) -> str:
        return f"openai:{self.model}"


@dataclass(frozen=True)
class ModelPlanner:
    """The model policy in the collector's interface: ``policy``'s identity and limits, the shared
    ``engine`` for the calls, the ``journal`` that makes every committed reply exactly-once."""

    policy: ModelPolicy
    engine: Engine
    journal: ReplyJournal

    name = property(lambda self: self.policy.name)
    version = property(lambda self: self.policy.version)
    model = property(lambda self: self.policy.model)
    max_invalid_replies = property(lambda self: self.policy.max_invalid_replies)

    def begin(self, task: TaskSpec, episode_id: str, rollout: int) -> ModelActor:
        return ModelActor(self, task, episode_id, rollout)


class ModelActor:
    """One episode over the model: a journaled reply is replayed, any other is requested."""

    def __init__(self, planner: ModelPlanner, task: TaskSpec, eid: str, rollout: int):
        self.planner, self.task, self.eid = planner, task, eid
        self.tools = tool_schemas(task)
        self.allowed = set(task.tools)
        self.headers = request_headers(task, eid, rollout)
        self.journaled = planner.journal.replies(eid)

    async def act(self, steps: list[Step]) -> Turn:
        index = len(steps)
        if index in self.journaled:
            reply = ChatReply.from_dict(self.journaled[index])
        else:
            request = ChatRequest(messages=conversation(self.task, steps), tools=self.tools, tool_choice="auto",
                                  max_tokens=self.planner.policy.max_tokens, headers=self.headers)
            try:
                reply = await self.planner.engine.complete(request)
            except (TransientFailure, RequestRejected):
                return Turn(stop="endpoint_error")
            self.planner.journal.append(self.eid, index, reply.to_dict())
        parsed = parse_reply(reply.content, reply.tool_calls, self.allowed, reply.reasoning)
        return Turn(action=parsed.action, invalid_reason=parsed.reason,
                    cost=Cost(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                              latency_ms=reply.latency_ms))


async def run_model_episode(task: TaskSpec, policy: ModelPolicy, engine: Engine, journal: ReplyJournal, *,
                            rollout: int, round_id: str, batch_id: str, created_at: datetime) -> EpisodeRecord:
    """Run the model on ``task`` (see :func:`generators.collect.collect_episode`). EndpointDown /
    EndpointRefused propagate: the round must stop."""
    return await collect_episode(task, ModelPlanner(policy, engine, journal), rollout=rollout, round_id=round_id,
                                 batch_id=batch_id, created_at=created_at)
