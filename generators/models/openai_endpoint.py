"""The real endpoint: the ``openai`` client (AsyncOpenAI) against any OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import functools
import json
import re
import ssl
import time
from pathlib import Path
from typing import Any

import httpx
import openai

from generators.models.endpoint import (
    ChatReply,
    ChatRequest,
    EndpointRefused,
    RequestRejected,
    ToolCall,
    TransientFailure,
)


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = getattr(exc.response, "headers", None) or {}
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    try:
        return float(value) if value else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _message_of(exc: openai.APIError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(exc).splitlines()[0]


# How servers say "your request is malformed" when they answer 500 (llama-cpp-python's server
# wraps pydantic's validation errors in a 500): pydantic's own wording, or an error typed as the
# client's fault.
_VALIDATION = re.compile(r"validation error|'loc':\s*\(|\"loc\":\s*\[|Input should be|Field required|"
                         r"Extra inputs are not permitted", re.I)


def _error_type(exc: openai.APIStatusError) -> str:
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    return str(inner.get("type") or "") if isinstance(inner, dict) else ""


def is_refusal(status: int, message: str, error_type: str = "") -> bool:
    """Whether an error status means "this request will never pass" rather than "try again":
    a 4xx other than 408/409/429, or a 500 whose body is a validation error."""
    if status in (408, 409, 429):
        return False
    if 400 <= status < 500:
        return True
    return status == 500 and (error_type == "invalid_request_error" or bool(_VALIDATION.search(message)))


def focused(message: str) -> str:
    """A pydantic error list without its union-branch mismatches ("role should be 'system'", ...):
    what is left says what is wrong with the message (llama.cpp's server sends the whole list)."""
    head, *errors = re.split(r"(?=\{'type': ')", message)
    if len(errors) < 2:
        return message
    telling = [e for e in errors if not e.startswith("{'type': 'literal_error'")] or errors
    return head + " ".join(e.strip() for e in telling)


def short(message: str, limit: int = 300) -> str:
    """One line of at most ``limit`` characters (servers may answer with a whole traceback)."""
    line = " ".join(focused(message).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


# A client's connection pool (httpcore) checks each of its idle connections (a system call on
# the socket) whenever a request is added or ends, so a call's CPU grows with the pool: at 64
# calls in flight on one client that check was a third of a model round's CPU. Past this many
# calls in flight on every client, the endpoint opens one more client instead.
CALLS_PER_CLIENT = 16


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every client of this process (each client used to load the certificates
    anew, tens of milliseconds of CPU each, and a round opens clients per shard). It trusts what
    either of the client's defaults across its versions trusts: the system's store (or
    SSL_CERT_FILE / SSL_CERT_DIR) and certifi's bundle where certifi is installed."""
    context = ssl.create_default_context()
    try:
        import certifi  # deferred: optional; where it is missing the system store serves alone
    except ImportError:
        return context
    context.load_verify_locations(certifi.where())
    return context


class OpenAIEndpoint:
    """An OpenAI-compatible endpoint. Retries are the engine's job, so the client's are off.

    The request body is sent as the planner built it and the reply read as plain JSON: the
    client's typed ``chat.completions.create`` walks every message and tool schema of every
    request to transform it and builds a typed object of every reply, which cost more CPU per
    call than all the rest of a round (see README, Speed). The client still sends the request
    and raises its typed errors, mapped below."""

    def __init__(self, *, base_url: str | None, api_key: str, model: str, timeout_s: float = 60.0,
                 server_log: Path | None = None):
        """``server_log``: the log of the server at ``base_url`` where we started it (its last line is
        quoted when the server stops answering)."""
        self.model, self.base_url, self.server_log = model, base_url, server_log
        self.answered = False  # the server has answered at least once (a later refusal means it went away)
        self.new_client = lambda: openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_s,
            http_client=openai.DefaultAsyncHttpxClient(verify=tls_context()))
        self.clients = [self.new_client()]
        self.in_flight = [0]  # calls under way on each client
        # the key this endpoint was given, whatever else the client would add (an admin key from the environment)
        self.auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def least_busy_client(self) -> int:
        """The client to send the next call on: the least busy one, or a new one when every client
        has ``CALLS_PER_CLIENT`` under way."""
        i = min(range(len(self.clients)), key=self.in_flight.__getitem__)
        if self.in_flight[i] >= CALLS_PER_CLIENT:
            self.clients.append(self.new_client())
            self.in_flight.append(0)
            i = len(self.clients) - 1
        return i

    async def complete(self, request: ChatRequest) -> ChatReply:
        i = self.least_busy_client()
        self.in_flight[i] += 1
        start = time.perf_counter()
        try:
            body = await self.clients[i].post("/chat/completions", cast_to=object,
                                              body=request_body(self.model, request),
                                              options={"headers": {**self.auth, **request.headers}})
        except openai.APITimeoutError as exc:
            raise TransientFailure("timeout", "the model call timed out") from exc
        except openai.APIConnectionError as exc:
            raise TransientFailure("connection", self.unreachable(exc)) from exc
        except openai.RateLimitError as exc:
            self.answered = True
            raise TransientFailure("429", _message_of(exc), _retry_after(exc)) from exc
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            # the server's message may echo part of the key: not shown
            raise EndpointRefused(f"{self.base_url} refused the API key ({exc.status_code})") from exc
        except openai.NotFoundError as exc:
            raise EndpointRefused(f"{self.base_url}: model {self.model!r} not found: {_message_of(exc)}") from exc
        except openai.APIStatusError as exc:
            self.answered = True
            message = _message_of(exc)
            if is_refusal(exc.status_code, message, _error_type(exc)):
                raise RequestRejected(f"{exc.status_code}: {short(message)}", exc.status_code) from exc
            raise TransientFailure(str(exc.status_code), short(message), _retry_after(exc)) from exc
        except ValueError as exc:  # a 200 whose body is not JSON (a proxy's error page said "json")
            self.answered = True
            raise TransientFailure("malformed_reply", f"the reply is not JSON: {exc}") from exc
        finally:
            self.in_flight[i] -= 1
        self.answered = True
        latency_ms = (time.perf_counter() - start) * 1000
        return reply_from_body(body, latency_ms)

    def unreachable(self, exc: openai.APIConnectionError) -> str:
        """What a failed connection means: never reached, or (after the server had answered) a server
        that stopped answering, perhaps crashed, with the last line of its log where we started it."""
        cause = exc.__cause__ or exc
        why = str(cause).strip() or type(cause).__name__
        if not self.answered:
            return f"cannot reach {self.base_url}: {why}"
        line = last_log_line(self.server_log)
        return (f"the model server at {self.base_url} stopped answering ({why}) after it had answered: it may have "
                "crashed" + (f"; its log ends: {line}" if line else ""))

    async def server_slots(self) -> int | None:
        """How many requests the server works on at once, where it says (llama.cpp's ``/props``
        ``total_slots``); None when it does not (most servers) or cannot be asked."""
        if not self.base_url:
            return None
        root = self.base_url.rstrip("/").removesuffix("/v1")
        try:
            async with httpx.AsyncClient(verify=tls_context(), timeout=5.0) as client:
                resp = await client.get(f"{root}/props", headers=self.auth)
            slots = resp.json().get("total_slots") if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        return slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 else None

    async def list_models(self) -> list[str]:
        page = await self.clients[0].models.list()
        return [m.id for m in page.data]

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


_TELLING = re.compile(r"fatal|segmentation|abort|killed|signal|error|exception", re.I)


def last_log_line(log: Path | None) -> str:
    """The last line of a server's log that says what went wrong (a crash's "Fatal Python error:
    Segmentation fault" comes before the stack it prints), else its last line; "" when none."""
    if log is None:
        return ""
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8192))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    telling = [line for line in lines if _TELLING.search(line) and not line.startswith("File ")]
    return short((telling or lines)[-1], 240) if lines else ""


def request_body(model: str, request: ChatRequest) -> dict[str, Any]:
    """The JSON body of a chat completion request: only what the request sets."""
    body: dict[str, Any] = {"model": model, "messages": request.messages}
    if request.tools:
        body["tools"] = request.tools
        if request.tool_choice:
            body["tool_choice"] = request.tool_choice
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def reply_from_body(body: Any, latency_ms: float) -> ChatReply:
    """Our reply from a chat completion's JSON (first choice only). TransientFailure when the body is
    not a chat completion at all (a server that answers 200 with an error page)."""
    if not isinstance(body, dict) or not isinstance(body.get("choices", []), list):
        raise TransientFailure("malformed_reply", f"the reply is not a chat completion: {short(str(body), 120)}")
    if not body.get("choices"):
        return ChatReply(content=None, tool_calls=[], latency_ms=latency_ms, finish_reason="no_choices")
    choice = _object(body["choices"][0])
    msg = _object(choice.get("message"))
    calls = []
    for call in msg.get("tool_calls") or []:
        function = _object(call).get("function")
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments") or ""
        calls.append(ToolCall(id=str(call.get("id") or ""), name=str(function.get("name") or ""),
                              arguments=arguments if isinstance(arguments, str) else json.dumps(arguments)))
    reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
    usage = _object(body.get("usage"))
    return ChatReply(
        content=msg.get("content"), tool_calls=calls, reasoning=str(reasoning),
        prompt_tokens=usage.get("prompt_tokens") or 0, completion_tokens=usage.get("completion_tokens") or 0,
        latency_ms=round(latency_ms, 3), finish_reason=choice.get("finish_reason") or "",
    )


async def _probe(endpoint: OpenAIEndpoint, setting: str) -> None:
    where = endpoint.base_url or "the OpenAI API"
    try:
        models = await endpoint.list_models()
    except openai.APITimeoutError as exc:
        raise EndpointRefused(f"model endpoint {where} did not answer in time") from exc
    except openai.APIConnectionError as exc:
        raise EndpointRefused(f"cannot reach the model endpoint {where} (check {setting})") from exc
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        raise EndpointRefused(f"model endpoint {where} refused the API key ({exc.status_code})") from exc
    except openai.NotFoundError as exc:
        raise EndpointRefused(f"{where} has no /models: is the base URL right (it usually ends in /v1)?") from exc
    except openai.APIStatusError as exc:
        raise EndpointRefused(f"model endpoint {where} answered {exc.status_code}: {_message_of(exc)}") from exc
    except Exception as exc:  # a reply that is not an OpenAI API at all (HTML, garbage)
        raise EndpointRefused(f"{where} does not answer like an OpenAI-compatible API: {type(exc).__name__}") from exc
    finally:
        await endpoint.close()
    if endpoint.model not in models:
        shown = ", ".join(models[:8]) + (" ..." if len(models) > 8 else "")
        raise EndpointRefused(f"model {endpoint.model!r} is not served by {where} (it serves: {shown or 'nothing'})")


def probe_endpoint(*, base_url: str | None, api_key: str, model: str, timeout_s: float = 15.0,
                   setting: str = "--base-url") -> None:
    """Check before any work starts that the endpoint answers, takes the key and serves the model.

    Raises EndpointRefused with one line saying which of the three is wrong (``setting``: where the URL
    is set, named when it cannot be reached).
    """
    asyncio.run(_probe(OpenAIEndpoint(base_url=base_url, api_key=api_key, model=model, timeout_s=timeout_s),
                       setting))
