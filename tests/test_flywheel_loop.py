"""The loop turns on the real command line: three rounds on the offline defaults with a
trainer's feedback between them; the mix moves toward what the model is learning and away
from what it has mastered, each share with a stored reason; older feedback still counts."""

from __future__ import annotations

import json

import pytest

from tests.conftest import cli_env, flywheel
from warehouse import state
from warehouse.store import Store

pytestmark = pytest.mark.slow

# The trainer's model: masters F01, is half way on F02, fails F03 at every level.
TRUTH = {"F01": lambda i: True, "F02": lambda i: i % 2 == 0, "F03": lambda i: False}


def _round(env, cwd) -> None:
    proc = flywheel("run", "--episodes", "60", "--no-progress", env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr


def _feedback(store: Store, round_id: str, tmp_path, name: str, families=tuple(TRUTH)) -> str:
    rows = store.duck([round_id]).execute("SELECT task_id, family FROM tasks ORDER BY task_id").fetchall()
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"task_id": t, "success": TRUTH[f](i)}) + "\n"
                            for i, (t, f) in enumerate(rows) if f in families))
    return str(path)


def _plans(store: Store) -> dict[str, dict]:
    with store.session() as s:
        return {r.id: r.plan for r in state.list_rounds(session=s)}


def _levels(plan: dict) -> dict[str, int]:
    return {s["family"]: s["difficulty"] for s in plan["slots"]}


def test_three_rounds_with_feedback_move_the_mix_with_reasons(tmp_path, prefect_server):
    env = cli_env(prefect_server, FLYWHEEL_ROUND__DIFFICULTY="3", FLYWHEEL_ROUND__FAMILIES='["F01","F02","F03"]')
    store = Store(tmp_path / "flywheel-data")
    _round(env, tmp_path)
    fb = flywheel("feedback", _feedback(store, "r0001", tmp_path, "fb1"), "--model", "sft-1", env=env, cwd=tmp_path)
    assert fb.returncode == 0, fb.stderr
    _round(env, tmp_path)
    fb = flywheel("feedback", _feedback(store, "r0002", tmp_path, "fb2"), "--model", "sft-1", env=env, cwd=tmp_path)
    assert fb.returncode == 0, fb.stderr
    _round(env, tmp_path)
    plans = _plans(store)
    w1, w2, w3 = (plans[r]["weights"] for r in ("r0001", "r0002", "r0003"))
    assert len(set(w1.values())) == 1 and plans["r0001"]["source"] == "even"
    # Toward what it is learning: F02 (at one half) gains; away from what it has mastered: F01 loses.
    assert w2["F02"] > w1["F02"] and w3["F02"] > w1["F02"]
    assert w2["F01"] < w1["F01"] and w3["F01"] < w2["F01"], plans["r0003"]["reasons"]["F01"]
    assert "mastered the hardest level" in plans["r0003"]["reasons"]["F01"]
    assert "keep-alive" in plans["r0003"]["reasons"]["F01"]
    # Failing: down a level each round, with the reason stored beside the share.
    assert [_levels(plans[r])["F03"] for r in ("r0001", "r0002", "r0003")] == [3, 2, 1]
    assert plans["r0002"]["reasons"]["F03"].startswith("failing level 3")
    assert all(plans[r]["reasons"][f] for r in ("r0002", "r0003") for f in TRUTH)
    # F03 now fails at the lowest level: a failure curriculum, not more of the same.
    fb3 = _feedback(store, "r0003", tmp_path, "fb3")
    assert flywheel("feedback", fb3, "--model", "sft-1", env=env, cwd=tmp_path).returncode == 0
    plan = json.loads(flywheel("plan", "--json", env=env, cwd=tmp_path).stdout)
    mix = {m["family"]: m for m in plan["mix"]}
    assert mix["F03"]["curriculum"] == "failure" and "failure curriculum" in mix["F03"]["reason"], json.dumps([mix["F03"], [c for c in plan["competence"] if c["family"] == "F03"]])
    # A newer batch that omits F02 does not send it back to "no feedback": older batches still count.
    only_f01 = _feedback(store, "r0003", tmp_path, "fb4", families=("F01",))
    assert flywheel("feedback", only_f01, "--model", "sft-1", env=env, cwd=tmp_path).returncode == 0
    plan = json.loads(flywheel("plan", "--json", env=env, cwd=tmp_path).stdout)
    mix = {m["family"]: m for m in plan["mix"]}
    assert mix["F02"]["reason"].startswith("learning at level 3"), mix["F02"]["reason"]
    f02 = [c for c in plan["competence"] if c["family"] == "F02" and c["difficulty"] == 3]
    assert f02 and f02[0]["evidence"] < f02[0]["n"]  # counted, with less weight
    # A failure curriculum goes to people: the next round's F03 episodes are routed, no other family's.
    _round(env, tmp_path)
    routed = store.duck(["r0004"]).execute(
        "SELECT e.family, m.reason FROM marks m JOIN episodes e USING (episode_id) "
        "WHERE m.\"check\" = 'routing' AND NOT m.passed").fetchall()
    assert [r for f, r in routed if f == "F03"], routed
    assert all("failure curriculum" in r for f, r in routed if f == "F03")
    assert not [r for f, r in routed if f != "F03" and "failure curriculum" in r]
    # History: competence per family after each of the four batches.
    hist = json.loads(flywheel("status", "--history", "--json", env=env, cwd=tmp_path).stdout)
    assert sorted({h["order"] for h in hist["competence"]}) == [1, 2, 3, 4]
    assert [r["round_id"] for r in hist["rounds"]] == ["r0001", "r0002", "r0003", "r0004"]
