"""How many model calls may be in flight at once: a fixed number, or one adapted to the server.

A server answers only so many requests at once (llama.cpp's server one per slot, vLLM as
many as fit its batch); the rest wait in its queue, and a request that waits there is timed
from when we sent it. Sent faster than the server works, calls time out behind each other
although the server is healthy. So the limit starts small and follows the server:

- it grows by one for each reply as fast as the uncongested one, so it doubles every round
  trip (slow start), and by one a window of such replies once it has met congestion;
- when replies come back markedly slower than the uncongested latency (calls now wait in
  the server's queue), it shrinks in proportion to the slowdown;
- a timeout, a 429 or a 5xx, or a dropped connection (signs of overload) halves it,
  once per wave of such failures;
- it never passes the ceiling (``openai.concurrency``) nor falls below one.

Latency is compared per completion token (a reply of 200 tokens takes longer than one of
10 without any queue), as the median of a window, against the lowest window median seen.
When fewer calls in flight do not bring latency down, the slowdown was not our queue (the
server is shared, prompts grew): that latency becomes the uncongested one.
A server that says how many requests it runs at once (llama.cpp's ``/props`` reports
``total_slots``) seeds the limit. Pure: no I/O; asyncio only to wait.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from statistics import median

GROW_BELOW = 1.4  # a window this close to the uncongested latency means room for more
SHRINK_ABOVE = 1.8  # a window this much slower means calls are queueing at the server
TARGET = 1.35  # after a shrink, aim at about this slowdown (a short queue keeps every slot busy)
MIN_WINDOW = 6  # replies a decision waits for (or the limit's worth, whichever is more)
SLOW_START_WINDOW = 3  # the same while the limit doubles (or half the limit's worth)


@dataclass
class LimitStats:
    """What a limit did, for the run summary and the benchmark."""

    peak: int = 0  # the highest limit reached
    grown: int = 0
    shrunk_slow: int = 0  # shrinks for replies slowed by queueing
    shrunk_overload: int = 0  # halvings for timeouts, 429s, 5xx, dropped connections


class ConcurrencyLimit:
    """At most ``limit`` calls in flight; ``async with limit:`` around each call.

    ``adaptive=False``: the limit is ``ceiling`` and never moves (a semaphore)."""

    def __init__(self, ceiling: int, *, adaptive: bool = True, start: int = 1):
        self.ceiling = max(1, ceiling)
        self.adaptive = adaptive
        self.limit = min(self.ceiling, max(1, start)) if adaptive else self.ceiling
        self.in_flight = 0
        self.slow_start = True
        self.generation = 0  # bumps on every change: replies sent under an older limit are not evidence
        self.window: list[float] = []
        self.baseline: float | None = None  # the uncongested latency per token: the lowest window median
        self.shrunk_at: float | None = None  # the slowdown the last shrink answered, until the next window
        self.stats = LimitStats(peak=self.limit)
        self._changed: asyncio.Condition | None = None

    # --- admission -------------------------------------------------------------------------------

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:  # made on first use, inside the loop that uses it
            self._changed = asyncio.Condition()
        return self._changed

    async def acquire(self) -> int:
        """Wait for room; the generation the call is sent under (pass it to :meth:`record`)."""
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            return self.generation

    async def release(self) -> None:
        changed = self._condition()
        async with changed:
            self.in_flight -= 1
            changed.notify_all()

    # --- adaptation (pure arithmetic; call from the loop) ----------------------------------------

    def seed(self, slots: int | None) -> None:
        """Start from what the server says it runs at once (and probe upward slowly from there)."""
        if self.adaptive and slots and slots > 0:
            self._set(min(self.ceiling, slots))
            self.slow_start = False

    def record(self, generation: int, latency_ms: float, completion_tokens: int) -> None:
        """A reply came back after ``latency_ms``; may move the limit."""
        if not self.adaptive:
            return
        sample = latency_ms / (max(0, completion_tokens) + 1)
        if self.slow_start:
            self._ramp(sample)
            return
        if generation != self.generation:
            return
        self.window.append(sample)
        if len(self.window) < max(MIN_WINDOW, self.limit):  # a limit's worth of replies: a step a round trip
            return
        current = median(self.window)
        self.window = []
        if self.baseline is None or current < self.baseline:
            self.baseline = current
        ratio = current / self.baseline if self.baseline > 0 else 1.0
        if self.shrunk_at is not None and ratio >= 0.85 * self.shrunk_at:
            # fewer in flight and no faster: the slowdown is not our queue (longer prompts, another
            # client on the server), so this is the server's uncongested latency now
            self.baseline, ratio = current, 1.0
        self.shrunk_at = None
        if ratio <= GROW_BELOW and self.limit < self.ceiling:
            self._set(self.limit + 1)
            self.stats.grown += 1
        elif ratio >= SHRINK_ABOVE and self.limit > 1:
            self._shrink(ratio)
        elif ratio >= SHRINK_ABOVE:  # one in flight and still slow: the server is slow, not queueing us
            self.baseline = current
            self.generation += 1
        else:
            self.generation += 1  # a fresh window at this limit; no change

    def _ramp(self, sample: float) -> None:
        """Slow start: one more in flight for each reply as fast as the uncongested one (the limit
        doubles every round trip, as TCP's window does), until a window of replies shows a queue."""
        self.window.append(sample)
        if len(self.window) >= max(SLOW_START_WINDOW, self.limit // 2):
            current = median(self.window)
            self.window = []
            if self.baseline is None or current < self.baseline:
                self.baseline = current
            ratio = current / self.baseline if self.baseline > 0 else 1.0
            if ratio >= SHRINK_ABOVE and self.limit > 1:
                self._shrink(ratio)
                return
            if ratio > GROW_BELOW:  # replies slow down: the server's queue starts; step by one from here
                self.slow_start = False
                self.generation += 1
                return
        if self.baseline is not None and sample <= GROW_BELOW * self.baseline and self.limit < self.ceiling:
            self.limit += 1  # not a new generation: replies already on their way stay evidence
            self.stats.peak = max(self.stats.peak, self.limit)
            self.stats.grown += 1

    def _shrink(self, ratio: float) -> None:
        self.slow_start = False
        self._set(max(1, int(self.limit * TARGET / ratio)))
        self.stats.shrunk_slow += 1
        self.shrunk_at = ratio

    def overloaded(self, generation: int) -> None:
        """A call sent under ``generation`` failed as an overloaded server fails: halve, once a wave."""
        self.slow_start = False
        if not self.adaptive or generation != self.generation:
            return  # the limit already moved since that call went out
        if self.limit > 1:
            self._set(self.limit // 2)
            self.stats.shrunk_overload += 1
        else:
            self.generation += 1

    def _set(self, limit: int) -> None:
        self.limit = max(1, min(self.ceiling, limit))
        self.stats.peak = max(self.stats.peak, self.limit)
        self.generation += 1
        self.window = []
        # no wake-up needed: the limit moves only on a reply of a call that still holds its place,
        # and its release right after wakes every waiter to look again
