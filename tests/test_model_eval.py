"""``flywheel eval`` over a model endpoint, through the real command line, against our local
OpenAI-compatible server: the model acts in the phone on held-out tasks, its results are
stored as one feedback batch, and ``flywheel plan`` reads exactly those results (dev), or
does not move at all (test)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.conftest import cli_env, flywheel
from tests.modelserver import serve_in_thread
from warehouse.store import Store

pytestmark = pytest.mark.slow
MODEL = "flywheel-test"
EPISODES = 12


def _json(*args: str, cwd, env) -> dict:
    run = flywheel(*args, "--json", env=env, cwd=cwd)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    return json.loads(run.stdout)


def _eval(server, split: str, cwd, env) -> dict:
    return _json("eval", "--split", split, "--model", MODEL, "--base-url", server.base_url,
                 "--episodes", str(EPISODES), "--no-progress", cwd=cwd, env=env)


def test_an_eval_over_a_model_endpoint_is_stored_and_is_what_the_plan_reads(tmp_path):
    store = Store(tmp_path / "flywheel-data")  # an existing data directory, as after a first round
    env = cli_env(None, FLYWHEEL_OPENAI__CONCURRENCY="4")
    before = _json("plan", cwd=tmp_path, env=env)
    with serve_in_thread() as server:
        dev = _eval(server, "dev", tmp_path, env)
        served = server.stats()["episodes"]
    batch = dev["batch"]
    assert (dev["split"], dev["feeds_planner"], dev["model"]) == ("dev", True, f"openai:{MODEL}")

    con = store.duck()
    # the model played every evaluated task in the phone: each episode's calls reached the server
    episodes = dict(con.execute("SELECT episode_id, policy FROM episodes WHERE round_id = ?", [batch]).fetchall())
    assert len(episodes) == dev["results"] == EPISODES
    assert set(episodes.values()) == {f"openai:{MODEL}"}
    assert all(served.get(e, {}).get("requests", 0) >= 2 for e in episodes), served  # a call, then finish
    assert con.execute("SELECT count(*) FROM episodes").fetchone()[0] == EPISODES  # no round's episodes

    # stored: one result per episode, the model's own outcome, held-out tasks only, failures with their type
    rows = con.execute(
        "SELECT f.family, f.difficulty, f.success, o.success, f.model, f.source, f.split, f.failure_type "
        "FROM feedback f JOIN episodes e ON e.task_id = f.task_id AND e.round_id = f.batch "
        "JOIN outcomes o ON o.episode_id = e.episode_id WHERE f.batch = ?", [batch]).fetchall()
    assert len(rows) == EPISODES
    assert all(fed == played for _, _, fed, played, *_ in rows)
    assert {r[4:7] for r in rows} == {(f"openai:{MODEL}", "eval", "dev")}
    assert any(r[2] for r in rows) and all(r[7] for r in rows if not r[2])
    measured = Counter((f, d) for f, d, *_ in rows)
    wins = Counter((f, d) for f, d, ok, *_ in rows if ok)
    per_family = {k: (n, wins[k]) for k, n in measured.items()}
    assert {(r["family"], r["difficulty"]): (r["n"], r["successes"]) for r in dev["per_family"]} == per_family

    # what the planner reads: exactly these results, measured on this model
    after = _json("plan", cwd=tmp_path, env=env)
    assert before["feedback_batch"] is None and not before["competence"]
    assert after["feedback_batch"] == batch
    assert {(c["family"], c["difficulty"]): (c["n"], c["successes"]) for c in after["competence"]} == per_family
    assert all(c["models"] == [f"openai:{MODEL}"] for c in after["competence"])
    assert {m["family"] for m in after["mix"] if m["competence"]} == {f for f, _ in per_family}
    assert [m["share"] for m in after["mix"]] != [m["share"] for m in before["mix"]]

    # a test-split eval is stored and reported, but the plan does not move
    with serve_in_thread() as server:
        test = _eval(server, "test", tmp_path, env)
    assert (test["split"], test["feeds_planner"]) == ("test", False) and test["batch"] != batch
    stored = store.duck().execute("SELECT count(*) FROM feedback WHERE batch = ? AND split = 'test'",
                                  [test["batch"]]).fetchone()[0]
    assert stored == test["results"] > 0
    later = _json("plan", cwd=tmp_path, env=env)
    assert later["reported_evals"] == [{"batch": test["batch"], "split": "test", "model": f"openai:{MODEL}",
                                        "results": test["results"]}]  # listed beside the plan, never planned from
    assert {**later, "reported_evals": []} == after
