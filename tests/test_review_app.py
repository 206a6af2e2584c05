"""The minimal review page: lists a round's episodes and records decisions (AppTest)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from generators.collect import run_episode
from generators.phone.families import FAMILIES
from generators.policies import ScriptedPolicy
from review_app import logic
from warehouse import state
from warehouse.errors import InputError
from warehouse.store import Store

APP = str(Path(__file__).resolve().parents[1] / "review_app" / "app.py")


def _round(store: Store, n_tasks: int = 3) -> list[str]:
    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=n_tasks, seed=1, plan={})
    tasks = [FAMILIES["F01"].make_task(seed) for seed in range(n_tasks)]
    recs = [
        run_episode(t, ScriptedPolicy(seed=1), rollout=0, round_id=rnd.id, batch_id="b", created_at=datetime.now(UTC))
        for t in tasks
    ]
    store.commit_unit(rnd.id, "batch-0000", {"tasks": tasks})
    store.commit_unit(
        rnd.id,
        "s00000",
        {
            "episodes": [r.episode for r in recs],
            "steps": [s for r in recs for s in r.steps],
            "outcomes": [r.outcome for r in recs],
        },
    )
    return [r.episode.episode_id for r in recs]


def test_logic_lists_episodes_and_records_decisions(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    ids = _round(store)
    rows = logic.episode_rows(store, "r0001")
    assert sorted(r["episode_id"] for r in rows) == sorted(ids)
    assert all(r["decision"] is None for r in rows)
    logic.record_decision(store, round_id="r0001", episode_id=ids[0], reviewer="ann", decision="reject", reason="x")
    logic.record_decision(store, round_id="r0001", episode_id=ids[0], reviewer="ann", decision="approve")
    row = next(r for r in logic.episode_rows(store, "r0001") if r["episode_id"] == ids[0])
    assert (row["decision"], row["reviewer"]) == ("approve", "ann")
    assert logic.episode_steps(store, "r0001", ids[0])[-1]["action"] == "finish"
    with pytest.raises(InputError):
        logic.record_decision(store, round_id="r0001", episode_id=ids[0], reviewer=" ", decision="approve")
    with pytest.raises(InputError):
        logic.record_decision(store, round_id="r0001", episode_id=ids[0], reviewer="ann", decision="maybe")


def test_page_approves_an_episode_into_the_state_database(tmp_path, monkeypatch):
    data = tmp_path / "d"
    store = Store(data)
    _round(store)
    monkeypatch.setenv("FLYWHEEL_DATA_DIR", str(data))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert len(at.expander) == 3
    at.sidebar.text_input(key="reviewer").input("ann").run()
    approve = [b for b in at.button if b.key.startswith("approve-")][0]
    episode = approve.key.removeprefix("approve-")
    approve.click().run()
    assert not at.exception
    with store.session() as s:
        decisions = state.latest_decisions(session=s)
    assert decisions[episode].decision == "approve" and decisions[episode].reviewer == "ann"


def test_page_refuses_an_anonymous_decision(tmp_path, monkeypatch):
    data = tmp_path / "d"
    store = Store(data)
    _round(store)
    monkeypatch.setenv("FLYWHEEL_DATA_DIR", str(data))
    at = AppTest.from_file(APP, default_timeout=60).run()
    [b for b in at.button if b.key.startswith("reject-")][0].click().run()
    assert any("reviewer" in e.value for e in at.error)
    with store.session() as s:
        assert state.latest_decisions(session=s) == {}
