"""The reply journal under group commit, on SQLite and PostgreSQL: replies that arrive together are
written in one transaction, off the event loop, and each caller resumes (and its policy acts) only
once its own reply is committed; first write wins at a place; the kill point of a user answer fires
after its commit; a failed write reaches every caller of its batch."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from flows.model_setup import StateJournal
from generators.collect import collect_episodes
from generators.model_collect import BoundModelPolicy, ModelPolicy
from generators.models import ChatReply, Engine, EngineConfig, FakeEndpoint
from generators.models.endpoint import ChatRequest, ToolCall
from generators.phone.families import FAMILIES
from warehouse import state
from warehouse.contract import USER_KEY
from warehouse.store import Store

WHEN = datetime(2026, 3, 1, tzinfo=UTC)


def _committed(store: Store, key: str, index: int) -> dict | None:
    """The reply at (key, index) as another connection sees it: committed or nothing."""
    with store.session() as s:
        row = s.get(state.ModelReply, (key, index))
        return None if row is None else row.reply


def test_replies_that_arrive_together_are_one_transaction_and_committed_before_each_caller_resumes(
        tmp_path, state_url):
    store = Store(tmp_path / "data", state_url)
    journal = StateJournal(store, "r0001")
    seen = {}

    async def one(i: int) -> None:
        await asyncio.sleep(0.001 * (i % 3))  # three waves
        kept = await journal.append(f"e{i:03d}", 0, {"n": i})
        seen[i] = (kept, _committed(store, f"e{i:03d}", 0))

    async def main() -> None:
        await asyncio.gather(*(one(i) for i in range(60)))

    asyncio.run(main())
    assert all(kept == committed == {"n": i} for i, (kept, committed) in seen.items()) and len(seen) == 60
    assert journal.batches <= 6, journal.batches  # grouped: a few transactions, not sixty
    assert StateJournal(store, "r0001").replies("e007") == {0: {"n": 7}}  # a rerun preloads what was written


def _scripted(task):
    plan = FAMILIES[task.family].reference_actions(task)

    async def responder(request: ChatRequest) -> ChatReply:
        await asyncio.sleep(0.002)  # replies of different episodes arrive together, as from a server
        n = sum(1 for m in request.messages if m["role"] == "tool")
        a = plan[min(n, len(plan) - 1)]
        return ChatReply(content=None, tool_calls=[ToolCall(id=f"c{n}", name=a.tool,
                                                            arguments=json.dumps(a.arguments))])
    return responder


class _Watching:
    """The model planner, with every turn checked against the database as its actor gets it."""

    def __init__(self, planner: BoundModelPolicy, store: Store):
        self.planner, self.store, self.turns = planner, store, []

    def __getattr__(self, name):
        return getattr(self.planner, name)

    def begin(self, task, eid, rollout):
        actor, turns, store = self.planner.begin(task, eid, rollout), self.turns, self.store

        class Actor:
            async def act(self, steps):
                turn = await actor.act(steps)
                turns.append((eid, len(steps), turn.action.tool, _committed(store, eid, len(steps))))
                return turn
        return Actor()


def test_the_policy_acts_only_on_replies_already_committed(tmp_path, state_url):
    store = Store(tmp_path / "data", state_url)
    tasks = [FAMILIES["F01"].make_task(seed, 1) for seed in range(12)]
    journal = StateJournal(store, "r0001")

    async def main():
        engine = Engine(FakeEndpoint(lambda request: responders[request.headers["X-Flywheel-Task"]](request)),
                        EngineConfig(concurrency=12))
        watching = _Watching(BoundModelPolicy(ModelPolicy(model="fake"), engine, journal), store)
        records = await collect_episodes([(t, 0) for t in tasks], watching, round_id="r0001", batch_id="b",
                                         created_at=WHEN)
        return watching.turns, records

    responders = {f"{t.family}:{t.seed}:{t.difficulty}:0": _scripted(t) for t in tasks}
    turns, records = asyncio.run(main())
    assert len(turns) == sum(len(r.steps) for r in records) > len(tasks)
    for eid, index, tool, committed in turns:
        assert committed is not None, f"{eid} step {index} acted on before its reply was committed"
        assert committed["tool_calls"][0]["name"] == tool
    assert journal.batches < len(turns)  # and replies were grouped


def test_two_replies_at_one_place_the_first_write_wins_for_everyone(tmp_path, state_url):
    store = Store(tmp_path / "data", state_url)
    first, second = StateJournal(store, "r0001"), StateJournal(store, "r0001")  # two workers, one database

    async def main():
        a = await first.append("e1", 0, {"said": "first"})
        b = await second.append("e1", 0, {"said": "second"})  # second never saw the first's write
        # two at one place in one batch of one journal: the first queued wins
        c, d = await asyncio.gather(second.append("e2", 3, {"said": "one"}), second.append("e2", 3, {"said": "two"}))
        return a, b, c, d

    a, b, c, d = asyncio.run(main())
    assert a == b == {"said": "first"} and _committed(store, "e1", 0) == {"said": "first"}
    assert c == d == {"said": "one"} and _committed(store, "e2", 3) == {"said": "one"}
    assert second.replies("e1") == {0: {"said": "first"}}


def test_a_caller_acts_on_the_reply_that_won_its_place_not_on_its_own(tmp_path):
    store = Store(tmp_path / "data")
    other = StateJournal(store, "r0001")
    journal = StateJournal(store, "r0001")  # preloaded before the other worker wrote
    asyncio.run(other.append("e1", 0, ChatReply(content="earlier", tool_calls=[]).to_dict()))

    async def main():
        engine = Engine(FakeEndpoint(lambda _: ChatReply(content="later", tool_calls=[])), EngineConfig())
        return await engine.journaled(journal, "e1", 0, ChatRequest(messages=[{"role": "user", "content": "hi"}]))

    assert asyncio.run(main()).content == "earlier"


def test_a_user_answer_reaches_its_kill_point_only_once_committed(tmp_path, monkeypatch):
    store = Store(tmp_path / "data")
    journal = StateJournal(store, "r0001")
    passes = []
    monkeypatch.setattr("warehouse.killpoints.reached",
                        lambda name: passes.append((name, _committed(store, f"{USER_KEY}e1", 2))))

    async def main():
        await asyncio.gather(journal.append("e1", 2, {"planner": True}), journal.append(f"{USER_KEY}e1", 2, {"a": 1}))

    asyncio.run(main())
    assert passes == [("user.answered", {"a": 1})]  # once, for the user's answer only, after its commit


def test_a_failed_write_reaches_every_caller_of_its_batch_and_the_journal_goes_on(tmp_path):
    class FailsOnce(StateJournal):
        failed = False

        def write(self, rows):
            if not self.failed:
                self.failed = True
                raise RuntimeError("the database went away")
            return super().write(rows)

    store = Store(tmp_path / "data")
    journal = FailsOnce(store, "r0001")

    async def main():
        outcomes = await asyncio.gather(*(journal.append(f"e{i}", 0, {"n": i}) for i in range(5)),
                                        return_exceptions=True)
        return outcomes, await journal.append("e9", 0, {"n": 9})

    outcomes, after = asyncio.run(main())
    assert [str(o) for o in outcomes] == ["the database went away"] * 5
    assert after == {"n": 9} and _committed(store, "e9", 0) == {"n": 9} and _committed(store, "e0", 0) is None
    assert journal.replies("e0") == {}  # nothing unwritten is taken as journaled


def test_a_caller_cancelled_while_its_batch_is_written_still_has_its_reply_journaled(tmp_path):
    store = Store(tmp_path / "data")
    journal = StateJournal(store, "r0001")

    async def main():
        waiting = asyncio.create_task(journal.append("e1", 0, {"n": 1}))
        await asyncio.sleep(0)  # queued, its batch under way
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await journal.append("e2", 0, {"n": 2})  # the next batch goes after the cancelled caller's

    asyncio.run(main())
    assert _committed(store, "e1", 0) == {"n": 1} and journal.replies("e1") == {0: {"n": 1}}


def test_a_reply_holds_its_concurrency_slot_until_it_is_journaled():
    """So a kill loses at most ``concurrency`` replies: those asked for and not yet committed."""
    from generators.models.journal import MemoryJournal

    class Slow(MemoryJournal):
        def __init__(self):
            super().__init__()
            self.open = asyncio.Event()

        async def append(self, key, index, reply):
            await self.open.wait()  # a commit that takes its time
            return await super().append(key, index, reply)

    async def main():
        endpoint = FakeEndpoint(lambda _: ChatReply(content="ok", tool_calls=[]))
        engine, journal = Engine(endpoint, EngineConfig(concurrency=2, adaptive=False)), Slow()  # two from the start
        calls = [asyncio.create_task(engine.journaled(journal, f"e{i}", 0, ChatRequest(messages=[])))
                 for i in range(5)]
        for _ in range(20):
            await asyncio.sleep(0)
        asked_while_committing = len(endpoint.requests)
        journal.open.set()
        await asyncio.gather(*calls)
        return asked_while_committing, len(endpoint.requests)

    assert asyncio.run(main()) == (2, 5)


def test_a_journal_reads_a_conversation_when_it_starts_and_only_its_own_rounds(tmp_path, state_url):
    store = Store(tmp_path / "data", state_url)
    asyncio.run(StateJournal(store, "r0001").append("e1", 0, {"round": 1}))
    asyncio.run(StateJournal(store, "r0002").append("e2", 0, {"round": 2}))
    journal = StateJournal(store, "r0002")
    assert journal.entries == {}  # nothing read before a conversation asks
    assert journal.replies("e2") == {0: {"round": 2}} and journal.replies("e1") == {}
    assert set(journal.entries) == {"e1", "e2"}
