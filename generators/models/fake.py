"""A fake endpoint for unit tests: replies come from a function, failures from its exceptions."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from generators.models.endpoint import ChatReply, ChatRequest

Responder = Callable[[ChatRequest], ChatReply | Awaitable[ChatReply]]


class FakeEndpoint:
    """Calls ``responder(request)`` (sync or async); whatever it raises, the engine sees."""

    def __init__(self, responder: Responder, model: str = "fake", models: list[str] | None = None):
        self.responder, self.model = responder, model
        self.models = models if models is not None else [model]
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        reply = self.responder(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return reply

    async def list_models(self) -> list[str]:
        return list(self.models)

    async def close(self) -> None:
        return None
