"""One rate limit for every worker of a round: bookings in the state database (SQLite,
PostgreSQL) or Redis hold across processes; the engine books a call when it is sent;
the token estimate counts the tool schemas."""

from __future__ import annotations

import asyncio
import multiprocessing
import time

import pytest

from generators.models import Engine, EngineConfig
from generators.models.endpoint import ChatReply, ChatRequest
from generators.models.limits import LocalBookings, RateLimiter
from generators.phone.families import FAMILIES
from generators.policies.model_chat import conversation, tool_schemas
from warehouse.ratelimit import RedisBookings, SqlBookings
from warehouse.state import make_sql_engine

REDIS_URL = "redis://127.0.0.1:6379/15"


def _bookings(kind: str, url: str):
    return RedisBookings(url) if kind == "redis" else SqlBookings(make_sql_engine(url))


def _book_many(kind: str, url: str, key: str, n: int, start: multiprocessing.Event) -> None:
    bookings = _bookings(kind, url)
    start.wait(30)
    for _ in range(n):  # a fixed "now" in the past: every booking adds its cost, however slow the machine
        bookings.book(key, 0.01, 1.0)


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def shared(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'state.db'}"
    elif request.param == "postgres":
        url = request.getfixturevalue("fresh_postgres_url")
    else:
        url = REDIS_URL
    make_sql_engine(url) if request.param != "redis" else None  # the state tables exist before the workers start
    return request.param, url


def test_bookings_from_four_processes_add_up_exactly(shared):
    """A lost update (two workers reading the same schedule) would book less than was asked."""
    kind, url = shared
    key = f"test:{time.time_ns()}"
    start = multiprocessing.get_context("spawn").Event()
    procs = [multiprocessing.get_context("spawn").Process(target=_book_many, args=(kind, url, key, 50, start))
             for _ in range(4)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    # 200 bookings of 10 ms each: the schedule runs exactly 2 s past its start
    assert _bookings(kind, url).book(key, 0.0, 1.0) == pytest.approx(3.0, abs=1e-6)


def test_a_shared_limiter_spaces_calls_of_two_limiters_as_one(shared):
    """Two limiters (two workers) over the same bookings wait as if they were one."""
    kind, url = shared
    key = f"test:{time.time_ns()}"
    now = lambda: 1000.0  # noqa: E731  (all four calls at the same moment)
    a = RateLimiter(600, burst_s=0.0, clock=now, bookings=_bookings(kind, url), key=key)
    b = RateLimiter(600, burst_s=0.0, clock=now, bookings=_bookings(kind, url), key=key)
    waits = [limiter.reserve(1) for limiter in (a, b, a, b)]
    assert waits == pytest.approx([0.0, 0.1, 0.2, 0.3])  # ten a second, whichever worker asks


def test_engine_books_a_call_when_it_is_sent_not_while_it_waits_for_a_slot():
    """Five calls, one slot: while the first is in flight only it is booked; the four queued
    behind it hold no booking that would push other workers' calls back."""
    bookings = LocalBookings()
    gate = asyncio.Event
    seen: list[float] = []

    class Endpoint:
        model = "m"

        def __init__(self):
            self.release = gate()

        async def complete(self, request):
            await self.release.wait()
            return ChatReply(content="ok", tool_calls=[], prompt_tokens=1, completion_tokens=1)

        async def close(self):
            pass

    async def main():
        endpoint = Endpoint()
        engine = Engine(endpoint, EngineConfig(concurrency=1, rpm=60), bookings=bookings, limit_key="k")
        calls = [asyncio.create_task(engine.complete(ChatRequest(messages=[{"role": "user", "content": "hi"}])))
                 for _ in range(5)]
        await asyncio.sleep(0.05)
        seen.append(bookings._tat["k:rpm"] - time.time())  # shared bookings run on the wall clock
        endpoint.release.set()
        for c in calls:
            c.cancel()
        await asyncio.gather(*calls, return_exceptions=True)

    asyncio.run(main())
    assert seen[0] == pytest.approx(1.0, abs=0.1), "only the call in flight may be booked (one second at 60 rpm)"


def test_token_estimate_counts_the_tool_schemas():
    task = FAMILIES["F06"].make_task(1, 1)
    tools = tool_schemas(task)
    with_tools = ChatRequest(messages=conversation(task, []), tools=tools, max_tokens=1)
    without = ChatRequest(messages=conversation(task, []), max_tokens=1)
    import json

    schema_tokens = len(json.dumps(tools, separators=(",", ":"))) // 4
    assert schema_tokens > 500
    assert with_tools.estimated_tokens() >= without.estimated_tokens() + schema_tokens - 1
