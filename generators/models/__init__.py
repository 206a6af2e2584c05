"""Model endpoints behind a small interface, and the engine that calls them.

``Endpoint`` is the interface (``OpenAIEndpoint`` is the real one over ``AsyncOpenAI``,
``FakeEndpoint`` answers from a function); ``Engine`` adds the concurrency limit, rate
limits, timeouts, retries with backoff and the circuit breaker.
"""

from generators.models.endpoint import (
    ChatReply, ChatRequest, Endpoint, EndpointDown, EndpointRefused, RequestRejected, TransientFailure,
)
from generators.models.engine import Engine, EngineConfig
from generators.models.fake import FakeEndpoint
from generators.models.openai_endpoint import OpenAIEndpoint, probe_endpoint

__all__ = [
    "ChatReply", "ChatRequest", "Endpoint", "EndpointDown", "EndpointRefused", "Engine", "EngineConfig",
    "FakeEndpoint", "OpenAIEndpoint", "RequestRejected", "TransientFailure", "probe_endpoint",
]
