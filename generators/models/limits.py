"""Rate limits and the circuit breaker for model calls. No I/O here (shared bookings are\npassed in); asyncio only to wait."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Protocol


def gcra_book(tat: float, now: float, cost_s: float) -> float:
    """GCRA: the new theoretical arrival time after booking ``cost_s`` seconds of capacity now."""
    return max(tat, now) + cost_s


def gcra_adjust(tat: float, now: float, cost_s: float) -> float:
    """Book ``cost_s`` more (or, negative, fewer) seconds after the fact; never back before now."""
    return max(now, tat + cost_s) if cost_s < 0 else tat + cost_s


class Bookings(Protocol):
    """Where a limit's theoretical arrival time lives, so every worker books against the same one.

    ``book`` moves ``key``'s arrival time by ``cost_s`` (GCRA) atomically and returns the new one;
    ``adjust`` does the same for a correction after the fact. Times are wall-clock seconds."""

    def book(self, key: str, cost_s: float, now: float) -> float: ...

    def adjust(self, key: str, cost_s: float, now: float) -> None: ...


class LocalBookings:
    """Bookings in this process (threads included)."""

    def __init__(self) -> None:
        self._tat: dict[str, float] = {}
        self._lock = threading.Lock()

    def book(self, key: str, cost_s: float, now: float) -> float:
        with self._lock:
            self._tat[key] = tat = gcra_book(self._tat.get(key, 0.0), now, cost_s)
            return tat

    def adjust(self, key: str, cost_s: float, now: float) -> None:
        with self._lock:
            self._tat[key] = gcra_adjust(self._tat.get(key, 0.0), now, cost_s)


class RateLimiter:
    """A per-minute limit as a reservation schedule (GCRA): each acquire books ``n`` units
    and waits until its booking falls within ``burst_s`` of now. Unused capacity is not
    saved up beyond one burst, so a quiet minute cannot turn into a spike.

    With shared ``bookings`` (the state database, Redis) the schedule is one for every
    worker of a round, in any process on any machine; the booking is then a blocking call
    and runs off the event loop."""

    def __init__(self, per_minute: float, burst_s: float = 1.0, clock=None,
                 bookings: Bookings | None = None, key: str = "limit"):
        self.per_s = per_minute / 60.0
        self.burst_s = burst_s
        # shared bookings are compared across machines: the wall clock, not this process's monotonic one
        self.clock = clock or (time.time if bookings is not None else time.monotonic)
        self.bookings = bookings or LocalBookings()
        self.shared = bookings is not None
        self.key = key

    def reserve(self, n: float) -> float:
        """Book ``n`` units now; the seconds to wait before using them."""
        now = self.clock()
        cost = n / self.per_s
        tat = self.bookings.book(self.key, cost, now)
        return max(0.0, tat - cost - self.burst_s - now)

    def adjust(self, n: float) -> None:
        """Book ``n`` more (or fewer) units after the fact, e.g. actual tokens minus the estimate."""
        self.bookings.adjust(self.key, n / self.per_s, self.clock())

    async def acquire(self, n: float = 1.0) -> None:
        wait = await asyncio.to_thread(self.reserve, n) if self.shared else self.reserve(n)
        if wait > 0:
            await asyncio.sleep(wait)

    async def settle(self, n: float) -> None:
        """:meth:`adjust`, off the event loop when the bookings are shared."""
        if self.shared:
            await asyncio.to_thread(self.adjust, n)
        else:
            self.adjust(n)


class CircuitBreaker:
    """Opens after ``threshold`` failed attempts in a row across all calls; any success closes the count.

    Attempts that were in flight together when one of them failed are one observation, not
    many: a momentary stall that times out every concurrent request at once counts once, so
    only failures that keep coming as calls are sent again (an endpoint that stays down) open
    it. Tickets from :meth:`sent` tell which attempts overlapped. Once open it stays open (the
    round stops); a late success from an attempt already in flight does not hide the count."""

    def __init__(self, threshold: int):
        self.threshold = threshold
        self.failures = 0
        self.last_error = ""
        self.open = False
        self._clock = 0  # a tick per attempt sent
        self._counted_at = -1  # the tick at which the last failure was counted

    def sent(self) -> int:
        """A ticket for an attempt about to be sent."""
        self._clock += 1
        return self._clock

    def success(self) -> None:
        if not self.open:
            self.failures = 0

    def failure(self, message: str, ticket: int | None = None) -> None:
        """A failed attempt; ``ticket`` is what :meth:`sent` gave it (None: count it alone)."""
        self.last_error = message
        if ticket is not None and ticket <= self._counted_at:
            return  # it was sent before the failure already counted: the same moment of trouble
        self.failures += 1
        self._counted_at = self._clock
        if self.failures >= self.threshold:
            self.open = True
