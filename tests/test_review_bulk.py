"""Bulk approve: a lead approves the verified successes the queue's filters select, each as
their own decision with a note saying it was bulk, one transaction each; a rerun (after a kill
midway) records nothing twice; a reviewer may not; on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlmodel import select

from review_app import bulk, decisions
from review_app.accounts import User
from review_app.queue import QueueFilter
from tests.review_fixtures import make_accounts, make_round
from warehouse import state
from warehouse.errors import InputError
from warehouse.store import Store

LEA = User("lea", "lead")


@pytest.fixture
def world(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url=state_url) if state_url else Store(tmp_path / "d")
    ids = make_round(store, n_tasks=8)
    make_accounts(store)
    return store, ids


def _reviews(store: Store) -> list[state.Review]:
    with store.session() as s:
        return list(s.exec(select(state.Review).order_by(state.Review.id)))


def test_a_lead_approves_every_verified_success_of_a_family(world):
    store, ids = world
    con = store.duck()
    f01_ok = {e for (e,) in con.execute(
        "SELECT episode_id FROM episodes JOIN outcomes USING (episode_id) WHERE family = 'F01' AND success").fetchall()}
    assert f01_ok and len(f01_ok) < len(ids)
    # ann already approved one of them: lea's bulk still approves it as lea (her own decision)
    first = sorted(f01_ok)[0]
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=first, decision="approve")
    flt = QueueFilter(families=["F01"], status="any")
    todo = bulk.candidates(store, LEA, flt)
    assert {r["episode_id"] for r in todo} == f01_ok
    result = bulk.approve_all(store, lead="lea", episodes=todo, note="spot-checked 3 of them:\nall «fine»")
    assert (result.recorded, result.already, result.refused) == (len(f01_ok), 0, [])
    mine = [r for r in _reviews(store) if r.reviewer == "lea"]
    assert {r.episode_id for r in mine} == f01_ok and len(mine) == len(f01_ok)
    assert {(r.decision, r.reason) for r in mine} == {("approve", "bulk approve: spot-checked 3 of them: all «fine»")}
    assert bulk.candidates(store, LEA, flt) == []  # decided by lea: not offered again


def test_a_rerun_after_a_kill_midway_records_nothing_twice(world):
    store, _ = world
    flt = QueueFilter(status="any")
    todo = bulk.candidates(store, LEA, flt)
    assert len(todo) >= 2

    class Killed(Exception):
        pass

    def kill_after_first():
        raise Killed

    with pytest.raises(Killed):
        bulk.approve_all(store, lead="lea", episodes=todo, note="ok", on_each=kill_after_first)
    assert len(_reviews(store)) == 1  # the first one is committed, nothing half-written
    again = bulk.approve_all(store, lead="lea", episodes=todo, note="ok")  # the same selection, run again
    assert (again.recorded, again.already) == (len(todo) - 1, 1)
    assert sorted(r.episode_id for r in _reviews(store)) == sorted(r["episode_id"] for r in todo)


def test_only_an_active_lead_bulk_approves_and_failures_are_never_offered(world):
    store, _ = world
    todo = bulk.candidates(store, LEA, QueueFilter(status="any"))
    con = store.duck()
    failed = {e for (e,) in con.execute("SELECT episode_id FROM outcomes WHERE NOT success").fetchall()}
    assert failed and not failed & {r["episode_id"] for r in todo}
    assert bulk.candidates(store, LEA, QueueFilter(status="any", success=False)) == []
    with pytest.raises(InputError, match="bulk approve is for leads; ann is a reviewer"):
        bulk.approve_all(store, lead="ann", episodes=todo, note="x")
    with pytest.raises(InputError, match="no active reviewer account"):
        bulk.approve_all(store, lead="mallory", episodes=todo, note="x")
    assert _reviews(store) == []
    # an episode that is not there is named, and the rest are approved
    ghost = {"episode_id": "e-0000000000000000", "round_id": "r0001"}
    result = bulk.approve_all(store, lead="lea", episodes=[ghost, *todo], note="x")
    assert result.recorded == len(todo) and [e for e, _ in result.refused] == [ghost["episode_id"]]
