"""Rate limits and the circuit breaker for model calls. No I/O; asyncio only to wait."""

from __future__ import annotations

import asyncio
import time


class RateLimiter:
    """A per-minute limit as a reservation schedule (GCRA): each acquire books ``n`` units
    and waits until its booking falls within ``burst_s`` of now. Unused capacity is not
    saved up beyond one burst, so a quiet minute cannot turn into a spike."""

    def __init__(self, per_minute: float, burst_s: float = 1.0, clock=time.monotonic):
        self.per_s = per_minute / 60.0
        self.burst_s = burst_s
        self.clock = clock
        self.tat = 0.0  # theoretical arrival time: when the booked units are all spent

    def reserve(self, n: float) -> float:
        """Book ``n`` units now; the seconds to wait before using them."""
        now = self.clock()
        start = max(self.tat, now)
        self.tat = start + n / self.per_s
        return max(0.0, start - self.burst_s - now)

    def adjust(self, n: float) -> None:
        """Book ``n`` more (or fewer) units after the fact, e.g. actual tokens minus the estimate."""
        self.tat = max(self.clock(), self.tat + n / self.per_s) if n < 0 else self.tat + n / self.per_s

    async def acquire(self, n: float = 1.0) -> None:
        wait = self.reserve(n)
        if wait > 0:
            await asyncio.sleep(wait)


class CircuitBreaker:
    """Opens after ``threshold`` failed attempts in a row across all calls; any success closes the count."""

    def __init__(self, threshold: int):
        self.threshold = threshold
        self.failures = 0
        self.last_error = ""
        self.open = False

    def success(self) -> None:
        self.failures = 0

    def failure(self, message: str) -> None:
        self.failures += 1
        self.last_error = message
        if self.failures >= self.threshold:
            self.open = True
