"""The test server's HTTP app (Starlette): chat completions, models, stats, fault control."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import defaultdict
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.modelserver.brain import (
    USER_EPISODE_PREFIX,
    estimate_tokens,
    next_action,
    parse_task_header,
    position,
    user_reply,
    writer_reply,
)
from tests.modelserver.faults import FaultConfig, pick_fault
from tests.modelserver.strict import message_errors, refusal_body

EPISODE_HEADER = "x-flywheel-episode"
TASK_HEADER = "x-flywheel-task"


class ServerState:
    """Counters and fault settings of one server."""

    def __init__(self, models: list[str], api_key: str | None, faults: FaultConfig, policy_seed: int = 0):
        self.models = models
        self.api_key = api_key
        self.faults = faults
        self.policy_seed = policy_seed
        self.requests = 0
        self.first_at: float | None = None  # wall time of the first chat request and of the latest
        self.last_at: float | None = None
        self.per_episode: dict[str, int] = defaultdict(int)
        # episode -> conversation position -> requests answered with a usable reply
        self.positions: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        self.faults_injected: dict[str, int] = defaultdict(int)
        self.working = 0  # requests being worked on now (not waiting in line), and the most at once
        self.peak_working = 0
        self._line: asyncio.Semaphore | None = None
        self._line_size: int | None = None

    async def work(self, seconds: float) -> None:
        """Spend ``seconds`` on a request, in one of ``faults.slots`` places (waiting in line for one)."""
        slots = self.faults.slots
        if slots and (self._line is None or self._line_size != slots):
            self._line, self._line_size = asyncio.Semaphore(slots), slots
        if not slots:
            await self._busy(seconds)
            return
        async with self._line:
            await self._busy(seconds)

    async def _busy(self, seconds: float) -> None:
        self.working += 1
        self.peak_working = max(self.peak_working, self.working)
        try:
            if seconds > 0:
                await asyncio.sleep(seconds)
        finally:
            self.working -= 1

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "first_at": self.first_at,
            "last_at": self.last_at,
            "episodes": {e: {"requests": n, "positions": {str(p): c for p, c in self.positions[e].items()}}
                         for e, n in self.per_episode.items()},
            "faults": dict(self.faults_injected),
            "peak_working": self.peak_working,
        }


def _error(status: int, message: str, kind: str, code: str | None = None, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": code}}, status_code=status, headers=headers)


def _completion(model: str, content: str | None, tool_calls: list | None, messages: list) -> dict[str, Any]:
    prompt_tokens = estimate_tokens(messages)
    completion_tokens = estimate_tokens(json.dumps(tool_calls) if tool_calls else content or "") + 5
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "tool_calls" if tool_calls else "stop",
                     "message": {"role": "assistant", "content": content, "tool_calls": tool_calls}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def build_app(state: ServerState) -> Starlette:
    """The Starlette app over ``state``."""

    def authorised(request: Request) -> bool:
        return state.api_key is None or request.headers.get("authorization") == f"Bearer {state.api_key}"

    async def models(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
        return JSONResponse({"object": "list", "data": [{"id": m, "object": "model", "owned_by": "flywheel-test"}
                                                        for m in state.models]})

    async def answered(completion: dict[str, Any], fault: str | None) -> Response:
        """The completion, once the server has worked on it (unless a fault already took the time)."""
        if not fault:
            cfg = state.faults
            await state.work((cfg.latency_ms + cfg.token_ms * completion["usage"]["completion_tokens"]) / 1000)
        return JSONResponse(completion)

    async def props(request: Request) -> Response:
        if not state.faults.report_slots or not state.faults.slots:
            return _error(404, "Not Found", "not_found_error")
        return JSONResponse({"total_slots": state.faults.slots})

    async def chat(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "body is not JSON", "invalid_request_error")
        model = body.get("model")
        if model not in state.models:
            return _error(404, f"The model `{model}` does not exist.", "invalid_request_error", "model_not_found")
        messages = body.get("messages") or []
        episode = request.headers.get(EPISODE_HEADER, "")
        while state.faults.hold:  # frozen by the test until it sets the faults again
            await asyncio.sleep(0.02)
        state.requests += 1
        state.last_at = time.time()
        state.first_at = state.first_at or state.last_at
        state.per_episode[episode] += 1
        cfg = state.faults
        if cfg.strict and (errors := message_errors(messages)):
            state.faults_injected["refused"] += 1
            return JSONResponse(refusal_body(errors), status_code=500)
        fault = pick_fault(cfg, episode, state.per_episode[episode])
        if fault:
            state.faults_injected[fault] += 1
            await state.work(cfg.latency_ms / 1000)
        if fault == "down":
            return _error(503, "service unavailable", "server_error")
        if fault == "429":
            return _error(429, "Rate limit reached.", "rate_limit_error", "rate_limit_exceeded",
                          headers={"retry-after": f"{cfg.retry_after_s:g}"})
        if fault == "refuse":
            return JSONResponse(refusal_body([{"type": "string_type", "loc": ("body", "messages", 0, "content"),
                                               "msg": "Input should be a valid string", "input": None}]),
                                status_code=500)
        if fault == "500":
            return _error(500, "The server had an error while processing your request.", "server_error")
        if fault == "timeout":
            await asyncio.sleep(cfg.timeout_s)
            return _error(504, "gateway timeout", "server_error")
        if episode.startswith(USER_EPISODE_PREFIX):  # the simulated user is asked
            content = user_reply(parse_task_header(request.headers.get(TASK_HEADER)), messages, fault)
            return await answered(_completion(model, content, None, messages), fault)
        if not body.get("tools"):  # no tools: the task writer is asking
            return await answered(_completion(model, writer_reply(messages), None, messages), fault)
        state.positions[episode][position(messages)] += 1
        action = next_action(parse_task_header(request.headers.get(TASK_HEADER)), messages, state.policy_seed)
        name, arguments = action.tool or action.kind, json.dumps(action.arguments)
        content: str | None = None
        tool_calls: list[dict[str, Any]] | None = None
        if fault == "malformed":
            arguments = arguments[: max(1, len(arguments) // 2)]  # cut off mid-object: not JSON
        if fault == "unknown_tool":
            name = name + "_v2"
        if fault == "text":
            content = f"I would now call {name} with {arguments}."
        elif fault == "empty":
            content = ""
        else:
            call_id = f"call_{uuid.uuid4().hex[:12]}"
            tool_calls = [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]
            content = f"Next: {name}."
        return await answered(_completion(model, content, tool_calls, messages), fault)

    async def stats(request: Request) -> Response:
        return JSONResponse(state.stats())

    async def set_faults(request: Request) -> Response:
        try:
            state.faults = FaultConfig.from_dict(json.loads(await request.body()))
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc), "invalid_request_error")
        return JSONResponse(state.faults.as_dict())

    return Starlette(routes=[
        Route("/v1/models", models, methods=["GET"]),
        Route("/props", props, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/admin/faults", set_faults, methods=["POST"]),
    ])
