"""An OpenAI-compatible chat completions server over a model ``flywheel train`` wrote.

It renders each request with our tool-calling template (the one the model was trained on), lets
the model write one reply greedily (or sampled, when a temperature above zero is asked for), and
reads the tool calls back out of it. The keys and values of the last request are kept: an agent's
next turn repeats its whole conversation, and only what is new since is read again (on a CPU,
reading a prompt of a thousand tokens costs more than writing the reply) (:func:`generators.learner.template.parse_reply`), so
``flywheel eval --model NAME --base-url URL`` measures the tuned model in the phone exactly like any
endpoint. One request at a time: on a CPU, two generations at once only slow each other down.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.learner.base_model import load_model
from generators.learner.template import END_OF_TURN, openai_tool_calls, parse_reply

DEFAULT_MAX_TOKENS = 256


class RequestError(ValueError):
    """A request the server refuses (a 400, with this message)."""


@dataclass
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finished: bool  # the model ended its turn (not cut by max_tokens)
    cached_tokens: int = 0  # of the prompt, read from the last request's cache


class TunedModel:
    """A model folder (or a GGUF file) loaded once, on the CPU, answering chat requests."""

    def __init__(self, source: Path, *, name: str | None = None, threads: int | None = None,
                 prefix_cache: bool = True):
        import torch  # deferred: the train extra

        self._torch = torch
        self.tokenizer, self.model = load_model(source, threads=threads)
        self.model.eval()
        self.name = name or source.stem
        self.context = int(getattr(self.model.config, "max_position_embeddings", 8192))
        self.end_id = self.tokenizer.convert_tokens_to_ids(END_OF_TURN)
        self._lock = threading.Lock()
        self.prefix_cache = prefix_cache
        self._cache: Any = None  # the keys and values of the last conversation, for the next turn of it
        self._cached: list[int] = []  # the tokens that cache holds

    def _prefix_cache(self, ids: list[int]) -> tuple[Any, int]:
        """A cache holding the longest prefix of ``ids`` the last request computed (an agent's next turn
        repeats its whole conversation: only what is new is read again), and that prefix's length."""
        from transformers import DynamicCache  # deferred: the train extra

        same = 0
        for a, b in zip(ids, self._cached, strict=False):
            if a != b:
                break
            same += 1
        same = min(same, len(ids) - 1)  # the model must read at least the prompt's last token itself
        if self._cache is None or same == 0 or not self.prefix_cache:
            return DynamicCache(config=self.model.config), 0
        self._cache.crop(same - self._cache.get_seq_length())  # transformers 5: a negative count of tokens to drop
        return self._cache, same

    def generate(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *,
                 max_tokens: int, temperature: float) -> Generation:
        """The model's reply to ``messages`` (rendered with our template)."""
        try:
            ids = self.tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=True,
                                                     return_dict=True, return_tensors="pt")
        except Exception as exc:  # a message the template cannot render (e.g. no role)
            raise RequestError(f"cannot render the messages: {exc}") from None
        n_prompt = int(ids["input_ids"].shape[1])
        if n_prompt + 1 > self.context:
            raise RequestError(f"the prompt is {n_prompt} tokens; this model's context is {self.context}")
        max_tokens = max(1, min(max_tokens, self.context - n_prompt))
        sample = temperature > 0
        with self._lock, self._torch.no_grad():
            cache, reused = self._prefix_cache(ids["input_ids"][0].tolist())
            self._cache, self._cached = None, []  # until this generation has finished
            out = self.model.generate(
                **ids, cache=cache, max_new_tokens=max_tokens, do_sample=sample,
                temperature=temperature if sample else None, top_p=None, top_k=None, eos_token_id=self.end_id,
                pad_token_id=self.end_id)
            self._cache, self._cached = cache, out[0, :cache.get_seq_length()].tolist()
        new = out[0, n_prompt:].tolist()
        finished = bool(new) and new[-1] == self.end_id
        text = self.tokenizer.decode(new[:-1] if finished else new, skip_special_tokens=False)
        return Generation(text, n_prompt, len(new), finished, reused)


def completion(model: TunedModel, request: dict[str, Any]) -> dict[str, Any]:
    """The chat completion object for one request body (OpenAI's shape)."""
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise RequestError("'messages' must be a non-empty list of message objects")
    tools = request.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise RequestError("'tools' must be a list")
    max_tokens = request.get("max_completion_tokens") or request.get("max_tokens") or DEFAULT_MAX_TOKENS
    temperature = request.get("temperature")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise RequestError("'max_tokens' must be a positive integer")
    if temperature is not None and not isinstance(temperature, int | float):
        raise RequestError("'temperature' must be a number")
    gen = model.generate(messages, tools, max_tokens=max_tokens, temperature=float(temperature or 0.0))
    parsed = parse_reply(gen.text) if tools else None
    reply_id = uuid.uuid4().hex[:24]
    message: dict[str, Any] = {"role": "assistant", "content": gen.text.strip()}
    reason = "stop" if gen.finished else "length"
    if parsed is not None and parsed.calls:
        message = {"role": "assistant", "content": parsed.content,
                   "tool_calls": openai_tool_calls(parsed.calls, f"call_{reply_id[:8]}_")}
        reason = "tool_calls" if gen.finished else "length"
    return {
        "id": f"chatcmpl-{reply_id}", "object": "chat.completion", "created": int(time.time()),
        "model": request.get("model") or model.name,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                  "total_tokens": gen.prompt_tokens + gen.completion_tokens,
                  "prompt_tokens_details": {"cached_tokens": gen.cached_tokens}},
    }


def app(model: TunedModel) -> Any:
    """The ASGI app: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health``."""
    from starlette.applications import Starlette  # deferred: the train extra's server part
    from starlette.concurrency import run_in_threadpool  # deferred: the train extra's server part
    from starlette.requests import Request  # deferred: the train extra's server part
    from starlette.responses import JSONResponse  # deferred: the train extra's server part
    from starlette.routing import Route  # deferred: the train extra's server part

    def error(status: int, message: str, kind: str) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "code": None}}, status_code=status)

    async def chat(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return error(400, "the request body is not JSON", "invalid_request_error")
        if not isinstance(body, dict):
            return error(400, "the request body must be a JSON object", "invalid_request_error")
        if body.get("stream"):
            return error(400, "streaming is not supported by this server", "invalid_request_error")
        try:
            return JSONResponse(await run_in_threadpool(completion, model, body))
        except RequestError as exc:
            return error(400, str(exc), "invalid_request_error")

    async def models(_: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": model.name, "object": "model", "owned_by": "flywheel"}]})

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": model.name})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                             Route("/v1/models", models), Route("/health", health)])
