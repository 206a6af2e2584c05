"""The engine for synchronous callers: one event loop on a thread of its own.

Curation's model judges are plain synchronous functions (``reply(messages) -> str``);
they call the model through the same :class:`Engine` as the planner and the task writer,
so limits, retries, the circuit breaker and the token counts are kept in one place.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from generators.models.endpoint import ChatReply, ChatRequest
from generators.models.engine import Engine

T = TypeVar("T")


class BlockingEngine:
    """An :class:`Engine` (built by ``make`` inside its own loop) called from synchronous code, from
    any thread; calls from several threads share its limits. ``close`` stops the loop."""

    def __init__(self, make: Callable[[], Engine]):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="model-engine", daemon=True)
        self.thread.start()

        async def build() -> Engine:
            return make()

        self.engine = self._run(build())

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def complete(self, request: ChatRequest) -> ChatReply:
        """One reply, under the engine's limits and retries (its exceptions propagate)."""
        return self._run(self.engine.complete(request))

    def close(self) -> None:
        if self.loop.is_closed():
            return
        try:
            self._run(self.engine.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            self.loop.close()


@dataclass
class EngineJudge:
    """A model judge (curation's ``Judge``: ``name`` and ``reply(messages) -> str``) whose calls go
    through a shared engine. Several judges may share one engine; closing it is its owner's job."""

    name: str
    engine: BlockingEngine
    temperature: float = 0.0
    max_tokens: int = 256  # a verdict is one JSON object and a sentence; a rambling model cannot hold curation up

    def chat(self, messages: list[dict[str, str]]) -> ChatReply:
        """The whole reply (its usage too)."""
        request = ChatRequest(messages=list(messages), temperature=self.temperature, max_tokens=self.max_tokens)
        return self.engine.complete(request)

    def reply(self, messages: list[dict[str, str]]) -> str:
        return self.chat(messages).content or ""
