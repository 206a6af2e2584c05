"""Model endpoints behind a small interface, and the engine that calls them.

``Endpoint`` is the interface (``OpenAIEndpoint`` is the real one over ``AsyncOpenAI``,
``FakeEndpoint`` answers from a function); ``Engine`` adds the concurrency limit, rate
limits, timeouts, retries with backoff and the circuit breaker.
"""

from generators.models.endpoint import (
    ChatReply,
    ChatRequest,
    Endpoint,
    EndpointDown,
    EndpointRefused,
    RequestRejected,
    TransientFailure,
)
from generators.models.engine import Engine, EngineConfig
from generators.models.fake import FakeEndpoint

__all__ = [
    "ChatReply", "ChatRequest", "Endpoint", "EndpointDown", "EndpointRefused", "Engine", "EngineConfig",
    "FakeEndpoint", "OpenAIEndpoint", "RequestRejected", "TransientFailure", "probe_endpoint",
]


def __getattr__(name: str):
    # the openai client takes about a second to import: only a command that calls a model pays it
    if name in ("OpenAIEndpoint", "probe_endpoint"):
        from generators.models import openai_endpoint  # deferred: the openai client, about a second

        return getattr(openai_endpoint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
