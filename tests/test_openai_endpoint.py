"""The real endpoint against the project's test server, one request at a time: what each answer of
the server becomes (a reply, or which typed failure with which message and Retry-After), and that the
request goes out as the planner built it (body, headers, key)."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from generators.models import ChatRequest, OpenAIEndpoint
from generators.models.endpoint import EndpointRefused, RequestRejected, TransientFailure
from generators.phone.families import FAMILIES
from generators.policies.model_chat import conversation, request_headers, tool_schemas
from tests.modelserver import FaultConfig, serve_in_thread

MODEL = "flywheel-test"
TASK = FAMILIES["F01"].make_task(1, 1)


def _request(**extra) -> ChatRequest:
    return ChatRequest(messages=conversation(TASK, []), tools=tool_schemas(TASK), tool_choice="auto",
                       headers=request_headers(TASK, "e1", 0), **extra)


def _complete(base_url: str, request: ChatRequest, *, model: str = MODEL, api_key: str = "none",
              timeout_s: float = 10.0):
    async def main():
        endpoint = OpenAIEndpoint(base_url=base_url, api_key=api_key, model=model, timeout_s=timeout_s)
        try:
            return await endpoint.complete(request)
        finally:
            await endpoint.close()

    return asyncio.run(main())


@pytest.fixture(scope="module")
def server():
    with serve_in_thread(api_key="sk-test-key") as handle:
        yield handle


def _key(kind: str) -> FaultConfig:
    return FaultConfig(rate=1.0, kinds={kind: 1.0}, retry_after_s=1.5, timeout_s=3.0)


def test_a_usable_reply_carries_the_call_usage_and_latency(server):
    server.set_faults(FaultConfig())
    reply = _complete(server.base_url, _request(max_tokens=64), api_key="sk-test-key")
    assert reply.finish_reason == "tool_calls" and reply.content
    [call] = reply.tool_calls
    assert call.id.startswith("call_") and call.name in {t["function"]["name"] for t in tool_schemas(TASK)}
    assert isinstance(json.loads(call.arguments), dict)
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0 and reply.latency_ms > 0
    assert server.stats()["episodes"]["e1"]["requests"] >= 1  # the episode header went out


@pytest.mark.parametrize("kind, failure, retry_after", [("429", "429", 1.5), ("500", "500", None)])
def test_429_and_5xx_are_transient_with_the_servers_retry_after(server, kind, failure, retry_after):
    server.set_faults(_key(kind))
    try:
        with pytest.raises(TransientFailure) as err:
            _complete(server.base_url, _request(), api_key="sk-test-key")
    finally:
        server.set_faults(FaultConfig())
    assert err.value.kind == failure and err.value.retry_after == retry_after
    assert str(err.value) in ("Rate limit reached.", "The server had an error while processing your request.")


def test_a_validation_error_in_a_500_is_a_refused_request(server):
    server.set_faults(_key("refuse"))
    try:
        with pytest.raises(RequestRejected) as err:
            _complete(server.base_url, _request(), api_key="sk-test-key")
    finally:
        server.set_faults(FaultConfig())
    assert err.value.status == 500 and str(err.value).startswith("500: ") and "valid string" in str(err.value)


def test_a_bad_key_and_an_unknown_model_refuse_every_request_without_showing_the_key(server):
    with pytest.raises(EndpointRefused) as bad_key:
        _complete(server.base_url, _request(), api_key="sk-wrong-key")
    assert "refused the API key (401)" in str(bad_key.value) and "sk-wrong" not in str(bad_key.value)
    with pytest.raises(EndpointRefused) as no_model:
        _complete(server.base_url, _request(), model="nope", api_key="sk-test-key")
    assert "model 'nope' not found" in str(no_model.value)


def test_a_hung_call_is_a_timeout_and_nobody_listening_a_connection_failure(server):
    server.set_faults(_key("timeout"))
    try:
        with pytest.raises(TransientFailure) as slow:
            _complete(server.base_url, _request(), api_key="sk-test-key", timeout_s=0.3)
    finally:
        server.set_faults(FaultConfig())
    assert slow.value.kind == "timeout"
    with pytest.raises(TransientFailure) as gone:
        _complete("http://127.0.0.1:9/v1", _request())
    assert gone.value.kind == "connection" and "cannot reach http://127.0.0.1:9/v1" in str(gone.value)


@pytest.mark.parametrize("kind", ["malformed", "text", "empty"])
def test_bad_content_comes_back_as_it_was_said(server, kind):
    server.set_faults(_key(kind))
    try:
        reply = _complete(server.base_url, _request(), api_key="sk-test-key")
    finally:
        server.set_faults(FaultConfig())
    if kind == "malformed":
        [call] = reply.tool_calls
        with pytest.raises(ValueError):
            json.loads(call.arguments)
    else:
        assert not reply.tool_calls and reply.content == ("" if kind == "empty" else reply.content)
        assert kind == "empty" or reply.content.startswith("I would now call ")


class _Canned(BaseHTTPRequestHandler):
    """Answers every POST with the class's ``body`` and records what it was sent."""

    body: bytes = b""
    content_type = "application/json"
    seen: list = []

    def do_POST(self):  # noqa: N802 - the http.server API
        length = int(self.headers.get("content-length") or 0)
        type(self).seen.append(({k.lower(): v for k, v in self.headers.items()}, json.loads(self.rfile.read(length))))
        self.send_response(200)
        self.send_header("content-type", self.content_type)
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def _canned(body: dict | str, content_type: str = "application/json"):
    handler = type("Handler", (_Canned,), {"body": (body if isinstance(body, str) else json.dumps(body)).encode(),
                                           "content_type": content_type, "seen": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, handler, f"http://127.0.0.1:{httpd.server_address[1]}/v1"


def test_reasoning_text_and_a_missing_usage_block_are_read_as_the_server_sent_them():
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": None, "reasoning_content": "thinking",
                                     "tool_calls": [{"id": "c1", "type": "function",
                                                     "function": {"name": "finish", "arguments": "{}"}}]}}]}
    httpd, handler, url = _canned(body)
    try:
        reply = _complete(url, _request(max_tokens=32, temperature=0.5), api_key="sk-canned")
    finally:
        httpd.shutdown()
    assert reply.reasoning == "thinking" and reply.content is None
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("c1", "finish", "{}")]
    assert (reply.prompt_tokens, reply.completion_tokens, reply.finish_reason) == (0, 0, "stop")
    [(headers, sent)] = handler.seen
    assert headers["authorization"] == "Bearer sk-canned" and headers["x-flywheel-episode"] == "e1"
    request = _request(max_tokens=32, temperature=0.5)
    assert sent == {"model": MODEL, "messages": request.messages, "tools": request.tools, "tool_choice": "auto",
                    "max_tokens": 32, "temperature": 0.5}


def test_a_reply_without_choices_is_an_empty_reply():
    httpd, _, url = _canned({"id": "x", "object": "chat.completion", "created": 0, "model": MODEL, "choices": []})
    try:
        reply = _complete(url, _request())
    finally:
        httpd.shutdown()
    assert reply.finish_reason == "no_choices" and not reply.tool_calls and reply.content is None


@pytest.mark.parametrize("body, content_type", [("<html>bad gateway</html>", "text/html"),
                                                ("not json", "application/json"),
                                                ('{"choices": "none"}', "application/json")])
def test_a_200_that_is_no_chat_completion_is_a_transient_failure_not_a_crash(body, content_type):
    httpd, _, url = _canned(body, content_type)
    try:
        with pytest.raises(TransientFailure) as err:
            _complete(url, _request())
    finally:
        httpd.shutdown()
    assert err.value.kind == "malformed_reply" and "\n" not in str(err.value)


def test_calls_in_flight_spread_over_small_client_pools_and_all_are_closed(server):
    """One HTTP client's pool checks every idle connection per request, so many calls at once go
    over several clients, each with at most CALLS_PER_CLIENT under way."""
    from generators.models.openai_endpoint import CALLS_PER_CLIENT

    server.set_faults(FaultConfig(latency_ms=50))
    most: list[int] = []

    async def main():
        endpoint = OpenAIEndpoint(base_url=server.base_url, api_key="sk-test-key", model=MODEL)

        async def one():
            await endpoint.complete(_request())
            most.append(max(endpoint.in_flight))

        try:
            await asyncio.gather(*(one() for _ in range(2 * CALLS_PER_CLIENT + 5)))
        finally:
            await endpoint.close()
        return endpoint

    try:
        endpoint = asyncio.run(main())
    finally:
        server.set_faults(FaultConfig())
    assert len(endpoint.clients) == 3 and max(most) <= CALLS_PER_CLIENT
    assert all(client.is_closed() for client in endpoint.clients) and endpoint.in_flight == [0, 0, 0]
