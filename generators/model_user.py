"""The simulated user over a model: the same persona, facts and policy as the scripted user.

Its calls go through the project's model-call engine (limits, retries, the breaker) and
are journaled under ``user:<episode id>`` at the asking step's index before they are
used, so a rerun after a kill takes a committed reply from the journal and never asks
the model again. A reply that cannot be used (see
:func:`generators.phone.user.judge_user_reply`), or no reply when the endpoint gives up
on the call, is replaced by the scripted user's answer and recorded with its reason; an
endpoint that is down stops the round, as it does for the planner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generators.models.endpoint import ChatReply, ChatRequest, RequestRejected, TransientFailure
from generators.models.engine import Engine
from generators.models.journal import ReplyJournal
from generators.phone.user import UserAnswer, judge_user_reply, scripted_user_reply, user_prompt
from generators.policies.model_chat import EPISODE_HEADER, TASK_HEADER
from warehouse.contract import FALLBACK, USER_KEY, TaskSpec  # USER_KEY: also the test server's episode header


@dataclass(frozen=True)
class ModelUser:
    """Answers ask_user through ``engine``, journaled in ``journal``."""

    engine: Engine
    journal: ReplyJournal
    max_tokens: int = 96
    temperature: float = 0.0

    async def answer(self, task: TaskSpec, episode_id: str, index: int, question: str,
                     options: list[Any] | None = None) -> UserAnswer:
        """The user's answer to the question asked at step ``index`` of ``episode_id``."""
        key = USER_KEY + episode_id
        request = ChatRequest(messages=user_prompt(task, question, options), max_tokens=self.max_tokens,
                              temperature=self.temperature,
                              headers={EPISODE_HEADER: key, TASK_HEADER: f"{task.family}:{task.seed}:{task.difficulty}:0"})
        known = self.journal.replies(key)
        if FALLBACK in known.get(index, {}):  # the planner saw the scripted answer here: it stays
            return UserAnswer(scripted_user_reply(task, question, options), known[index][FALLBACK])
        try:
            reply = await self.engine.journaled(self.journal, key, index, request, known=known)
        except RequestRejected as exc:
            return await self.fall_back(task, key, index, question, options, f"request refused: {exc}")
        except TransientFailure as exc:
            return await self.fall_back(task, key, index, question, options, f"no reply: {exc.kind}: {exc}")
        return judge_user_reply(task, question, reply.content or "", options)

    async def fall_back(self, task: TaskSpec, key: str, index: int, question: str, options: list[Any] | None,
                        reason: str) -> UserAnswer:
        """The scripted answer in place of a reply the endpoint did not give, journaled at the reply's
        place before it is used: a rerun replays what the planner was answered, not a new reply (and
        a reply journaled there first by another writer is the one used)."""
        kept = await self.journal.append(key, index, {FALLBACK: reason})
        if FALLBACK in kept:
            return UserAnswer(scripted_user_reply(task, question, options), kept[FALLBACK])
        return judge_user_reply(task, question, ChatReply.from_dict(kept).content or "", options)
