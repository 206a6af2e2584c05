"""The collection engine's model-call layer: bounded, rate-limited, retried, with a circuit breaker.

Every model call of a round goes through one ``Engine``. It holds at most
``concurrency`` calls in flight (by default fewer: as many as the server keeps up with, see
:mod:`generators.models.adaptive`), keeps to requests-per-minute and tokens-per-minute,
gives each attempt a timeout, retries 429 / 5xx / timeouts / dropped connections with
exponential backoff and jitter (a Retry-After from the server wins), and opens a
circuit when the endpoint keeps failing: every waiting call then raises EndpointDown
so the round stops cleanly instead of spinning. A request the endpoint refuses
(RequestRejected: a 4xx, a validation error) is no outage: it is not retried, leaves
the breaker as it was, and is counted by its message so a round reports it once.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from generators.models.adaptive import ConcurrencyLimit
from generators.models.endpoint import ChatReply, ChatRequest, Endpoint, EndpointDown, RequestRejected, TransientFailure
from generators.models.journal import ReplyJournal
from generators.models.limits import Bookings, CircuitBreaker, RateLimiter
from warehouse.errors import ConfigError

# failures an overloaded server gives (its queue outgrew our timeout, it sheds load, it fell over)
OVERLOAD = frozenset({"timeout", "connection", "429", "502", "503", "504"})


@dataclass
class EngineConfig:
    concurrency: int = 64  # the ceiling; with ``adaptive`` the engine finds how many the server keeps up with
    adaptive: bool = True
    rpm: int | None = None
    tpm: int | None = None
    timeout_s: float = 120.0
    retries: int = 4
    backoff_s: float = 0.5
    backoff_max_s: float = 30.0
    breaker_failures: int = 12


@dataclass
class EngineStats:
    calls: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: Counter = field(default_factory=Counter)  # kind -> failed attempts
    rejections: Counter = field(default_factory=Counter)  # the server's message -> requests it refused


class Engine:
    """Calls ``endpoint`` under ``config``'s limits. Create it inside the event loop that uses it."""

    def __init__(self, endpoint: Endpoint, config: EngineConfig, *, rng: random.Random | None = None,
                 bookings: Bookings | None = None, limit_key: str = "model"):
        """``bookings``: where the RPM and TPM schedules live when several engines (threads,
        processes, machines) share them; by default this engine's own."""
        self.endpoint, self.config = endpoint, config
        self.slots = ConcurrencyLimit(config.concurrency, adaptive=config.adaptive)
        self._seeded = asyncio.Event() if config.adaptive else None
        self._seeding = False
        self.rpm = RateLimiter(config.rpm, bookings=bookings, key=f"{limit_key}:rpm") if config.rpm else None
        self.tpm = RateLimiter(config.tpm, bookings=bookings, key=f"{limit_key}:tpm") if config.tpm else None
        self.breaker = CircuitBreaker(config.breaker_failures)
        self.rng = rng or random.Random()
        self.stats = EngineStats()

    @property
    def model(self) -> str:
        return self.endpoint.model

    async def _seed(self) -> None:
        """Ask the server once how many requests it runs at once (where it says: llama.cpp's /props);
        the first call asks, the others wait for its answer."""
        if self._seeded is None or self._seeded.is_set():
            return
        if self._seeding:
            await self._seeded.wait()
            return
        self._seeding = True
        try:
            slots = getattr(self.endpoint, "server_slots", None)
            self.slots.seed(await slots() if slots is not None else None)
        finally:
            self._seeded.set()

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``attempt`` (1-based): the server's Retry-After if it
        gave one, else exponential with full jitter in the upper half, capped."""
        if retry_after is not None:
            return min(self.config.backoff_max_s, retry_after) * (1.0 + 0.1 * self.rng.random())
        base = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** (attempt - 1))
        return base * (0.5 + 0.5 * self.rng.random())

    async def complete(self, request: ChatRequest, *,
                       keep: Callable[[ChatReply], Awaitable[ChatReply]] | None = None) -> ChatReply:
        """One model reply. Raises TransientFailure when retries run out, RequestRejected for a
        request the endpoint refuses, EndpointRefused / EndpointDown when the endpoint is unusable.

        ``keep`` (the journal's append) runs on the reply while its call still holds a concurrency
        slot, and what it returns is the reply: so at most ``concurrency`` replies are ever asked for
        and not yet kept, which is all a kill can lose."""
        self.stats.calls += 1
        attempt = 0
        while True:
            if self.breaker.open:
                raise EndpointDown(f"model endpoint is down ({self.breaker.failures} failed attempts in a row, last "
                                   f"{self.breaker.last_error}); round stopped, committed work kept: rerun to go on")
            attempt += 1
            estimate = request.estimated_tokens() if self.tpm else 0
            if self.tpm and estimate > self.config.tpm:  # booked, it would hold every call for minutes, unseen
                raise ConfigError(f"openai.tpm ({self.config.tpm:,}) is below one request's estimate ({estimate:,} "
                                  "tokens, tool schemas counted): no call could keep to it; raise openai.tpm")
            ticket, failure = None, None
            await self._seed()
            generation = await self.slots.acquire()
            try:
                try:
                    # booked once a slot is ours, when the request is about to go out: a request
                    # queued for a slot holds no booking that would push everyone else's back
                    if self.rpm:
                        await self.rpm.acquire(1)
                    if self.tpm:
                        await self.tpm.acquire(estimate)
                    self.stats.attempts += 1
                    ticket = self.breaker.sent()
                    sent = time.perf_counter()
                    async with asyncio.timeout(self.config.timeout_s):
                        reply = await self.endpoint.complete(request)
                    took_ms = (time.perf_counter() - sent) * 1000
                except RequestRejected as exc:  # sending it again would not help; the endpoint is fine
                    self.stats.rejections[str(exc)] += 1
                    raise
                except TransientFailure as exc:
                    failure = exc
                except TimeoutError:
                    failure = TransientFailure("timeout", f"no reply within {self.config.timeout_s:g}s")
                else:
                    self.breaker.success()
                    self.slots.record(generation, took_ms, reply.completion_tokens)
                    reply.attempts, reply.model = attempt, self.endpoint.model
                    self.stats.prompt_tokens += reply.prompt_tokens
                    self.stats.completion_tokens += reply.completion_tokens
                    if keep is not None:
                        reply = await keep(reply)
            finally:
                await self.slots.release()
            if failure is None:
                if self.tpm:
                    await self.tpm.settle(reply.prompt_tokens + reply.completion_tokens - estimate)
                return reply
            self.stats.failures[failure.kind] += 1
            if failure.kind in OVERLOAD:
                self.slots.overloaded(generation)
            self.breaker.failure(f"{failure.kind}: {failure}", ticket)
            if attempt > self.config.retries:
                raise failure
            await asyncio.sleep(self.backoff(attempt, failure.retry_after))

    async def journaled(self, journal: ReplyJournal, key: str, index: int, request: ChatRequest,
                        known: dict[int, dict] | None = None) -> ChatReply:
        """The reply at ``index`` of conversation ``key``: the journaled one when there is one (no call),
        else a new call through :meth:`complete`, returned once it is journaled (or, should another writer
        have journaled a reply at that place first, that one: first write wins). The entry point for
        every caller whose work must survive a crash (planner, task writer, simulated user); pass
        ``known`` (``journal.replies(key)``, read once) to avoid re-reading the journal per step."""
        entry = (known if known is not None else journal.replies(key)).get(index)
        if entry is not None:
            return ChatReply.from_dict(entry)

        async def keep(reply: ChatReply) -> ChatReply:
            mine = reply.to_dict()
            kept = await journal.append(key, index, mine)  # durable before anyone acts on it
            return reply if kept is mine else ChatReply.from_dict(kept)

        return await self.complete(request, keep=keep)

    async def close(self) -> None:
        await self.endpoint.close()
