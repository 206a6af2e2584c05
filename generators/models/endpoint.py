"""The model endpoint interface: one chat completion in, one reply out, typed failures."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from warehouse.errors import EndpointError


@dataclass
class ChatRequest:
    """One chat completion request (streaming off)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | None = None  # "auto", "required", or None for the endpoint's default
    max_tokens: int | None = None
    temperature: float | None = None
    headers: dict[str, str] = field(default_factory=dict)  # e.g. episode ids for server-side tracing

    def estimated_tokens(self) -> int:
        """A rough request size (4 characters a token) for the token-rate limiter: the messages,
        the tool schemas (sent with every request, often the larger part) and the reply's allowance."""
        chars = sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in self.messages)
        if self.tools:
            chars += len(json.dumps(self.tools, separators=(",", ":")))
        return chars // 4 + (self.max_tokens or 256)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw text, as the model wrote it (it may not be JSON)


@dataclass
class ChatReply:
    """The first choice of a completion, with usage and latency. ``to_dict`` is what the journal keeps."""

    content: str | None
    tool_calls: list[ToolCall]
    reasoning: str = ""  # reasoning text where the endpoint gives it (reasoning_content)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    finish_reason: str = ""
    attempts: int = 1
    model: str = ""  # the model asked, as configured (what prices are keyed by); set by the engine

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatReply:
        calls = [ToolCall(**c) for c in data.get("tool_calls") or []]
        return cls(**{**data, "tool_calls": calls})


class TransientFailure(Exception):
    """A failure worth retrying: 429, 5xx, a timeout, a dropped connection."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind, self.retry_after = kind, retry_after


class RequestRejected(Exception):
    """The endpoint refused this one request (a 4xx, or a 500 whose body is a validation error: too
    long, a message shape it does not take); other requests may pass, and sending it again will not."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class EndpointRefused(EndpointError):
    """The endpoint refuses every request: a refused key, an unknown model, a wrong URL."""


class EndpointDown(EndpointError):
    """The circuit breaker opened: the endpoint failed too often in a row."""


class Endpoint(Protocol):
    """What the engine needs of an endpoint."""

    model: str

    async def complete(self, request: ChatRequest) -> ChatReply: ...

    async def list_models(self) -> list[str]: ...

    async def close(self) -> None: ...
