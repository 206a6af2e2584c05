"""Three reviewer sessions and a flow writing a new round, all at once: no lock error, no
lost decision, none counted twice. Runs on SQLite (WAL) and PostgreSQL."""

from __future__ import annotations

import multiprocessing as mp
from collections import Counter
from datetime import UTC, datetime

from sqlmodel import select

from review_app import accounts, decisions, queue
from review_app.data import Overlap
from review_app.final import final_decisions
from tests.review_fixtures import make_accounts, make_round
from warehouse import review_tables as rt
from warehouse import state
from warehouse.store import Store

N_TASKS = 12
WRITER_SHARDS = 4


def _reviewer(data_dir, state_url, name, episode_ids, verdict, barrier, results) -> None:
    store = Store(data_dir, state_url)
    user = accounts.User(name, "reviewer")
    barrier.wait()
    done = 0
    for i, eid in enumerate(episode_ids):
        decision = verdict(i)
        decisions.save_draft(store, reviewer=name, round_id="r0001", episode_id=eid, reason_text="looking")
        decisions.record_decision(
            store, reviewer=name, round_id="r0001", episode_id=eid, decision=decision,
            reason_code="wrong_result" if decision == "reject" else "",
        )
        done += 1
        if name == "ann" and i < 3:  # a double click: the same decision twice
            decisions.record_decision(store, reviewer=name, round_id="r0001", episode_id=eid, decision=decision)
            done += 1
        if i % 6 == 0:  # sessions read the queue while the flow writes shards
            queue.queue_page(store, user, queue.QueueFilter(), limit=25)
    results.put((name, done))


def _approve(i: int) -> str:
    return "approve"


def _reject_odd(i: int) -> str:
    return "reject" if i % 2 else "approve"


def _writer(data_dir, state_url, barrier, results) -> None:
    from generators.collect import run_episode
    from generators.phone.families import FAMILIES
    from generators.policies import ScriptedPolicy

    store = Store(data_dir, state_url)
    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=WRITER_SHARDS * 4, seed=2, plan={})
    barrier.wait()
    tasks = [FAMILIES["F01"].make_task(100 + i) for i in range(WRITER_SHARDS * 4)]
    store.commit_unit(rnd.id, "batch-0000", {"tasks": tasks})
    for k in range(WRITER_SHARDS):
        recs = [
            run_episode(t, ScriptedPolicy(seed=5), rollout=0, round_id=rnd.id, batch_id="b", created_at=datetime.now(UTC))
            for t in tasks[k * 4 : (k + 1) * 4]
        ]
        store.commit_unit(
            rnd.id,
            f"s{k:05d}",
            {"episodes": [r.episode for r in recs], "steps": [s for r in recs for s in r.steps], "outcomes": [r.outcome for r in recs]},
        )
    results.put(("writer", WRITER_SHARDS * 4))


def test_three_reviewers_and_a_writing_flow_at_once(tmp_path, state_url):
    data = tmp_path / "d"
    store = Store(data, state_url)
    ids = sorted(make_round(store, n_tasks=N_TASKS))
    make_accounts(store)
    accounts.add_reviewer(store, "cat", "reviewer", "another password")
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [
        ctx.Process(target=_reviewer, args=(data, state_url, "ann", ids, _approve, barrier, results)),
        ctx.Process(target=_reviewer, args=(data, state_url, "bob", ids, _approve, barrier, results)),
        ctx.Process(target=_reviewer, args=(data, state_url, "cat", ids[::-1], _reject_odd, barrier, results)),
        ctx.Process(target=_writer, args=(data, state_url, barrier, results)),
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]  # a lock error would have failed a process
    reported = dict(results.get(timeout=5) for _ in procs)
    assert reported == {"ann": N_TASKS + 3, "bob": N_TASKS, "cat": N_TASKS, "writer": WRITER_SHARDS * 4}

    with store.session() as s:
        rows = s.exec(select(state.Review)).all()
    assert len(rows) == 3 * N_TASKS  # every submitted decision was recorded, a double click's second one as the first
    per = Counter((r.episode_id, r.reviewer) for r in rows)
    assert set(per) == {(e, who) for e in ids for who in ("ann", "bob", "cat")}

    # Counting: one vote per reviewer and episode, so the double clicks count once.
    finals = final_decisions(store, ["r0001"], Overlap(share=1.0, reviewers=2))
    rejected_by_cat = {e for i, e in enumerate(ids[::-1]) if i % 2}
    assert {e for e, f in finals.items() if f.status == "disputed"} == rejected_by_cat
    assert {e for e, f in finals.items() if f.decision == "approve"} == set(ids) - rejected_by_cat
    with store.session() as s:
        assert s.exec(select(rt.ReviewDraft)).all() == []  # each decision cleared its draft

    # The flow's round is complete and readable next to the reviews.
    con = store.duck(["r0002"])
    assert con.execute("SELECT count(*) FROM episodes").fetchone()[0] == WRITER_SHARDS * 4


def _open_store(data_dir, state_url, results, start) -> None:
    try:
        start.wait(timeout=30)
        Store(data_dir, state_url)
        results.put("ok")
    except Exception as exc:  # noqa: BLE001  (reported to the test)
        results.put(str(exc))


def test_processes_opening_a_new_state_database_at_once_all_succeed(tmp_path, state_url):
    import sqlalchemy as sa

    ctx = mp.get_context("fork")  # fast starts, so the openings really overlap
    failures = []
    for i in range(10):
        if state_url:  # a new database each time: an empty schema
            engine = sa.create_engine(state_url)
            with engine.begin() as conn:
                conn.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
            engine.dispose()
        results, start = ctx.Queue(), ctx.Barrier(6)  # all six open the same new database at once
        procs = [ctx.Process(target=_open_store, args=(tmp_path / f"d{i}", state_url, results, start))
                 for _ in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
        failures += [m for m in (results.get(timeout=5) for _ in procs) if m != "ok"]
    assert failures == []
