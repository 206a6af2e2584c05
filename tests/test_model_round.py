"""Rounds over a model endpoint through the real command line, against our local
OpenAI-compatible server: injected faults, a real kill -9 and rerun that repeats no
committed call, the endpoint going down, and bad endpoints refused before any work."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from tests.conftest import cli_env, flywheel, flywheel_executable, single_session_families, wait_for
from tests.modelserver import FaultConfig, serve_in_thread
from warehouse.store import Store

pytestmark = pytest.mark.slow
MODEL = "flywheel-test"
TERMINATIONS = {"finished", "budget_exhausted", "invalid_replies", "endpoint_error", "harness_error"}
REFUSED = "Input should be a valid string"  # what the test server's llama.cpp-like refusal says


def _model_args(server, *extra: str) -> list[str]:
    return ["run", "--policy", "openai", "--model", MODEL, "--base-url", server.base_url, "--no-progress", *extra]


def _fast_env(prefect_server, **extra: str) -> dict[str, str]:
    # exact episode counts: one-session families (a multi-session scenario adds its later sessions)
    base = {"FLYWHEEL_OPENAI__TIMEOUT_S": "0.5", "FLYWHEEL_OPENAI__BACKOFF_S": "0.02",
            "FLYWHEEL_OPENAI__BACKOFF_MAX_S": "0.2", "FLYWHEEL_ROUND__FAMILIES": single_session_families()}
    return cli_env(prefect_server, **{**base, **extra})


def test_round_with_30_percent_faults_accounts_for_every_episode(tmp_path, prefect_server):
    faults = FaultConfig(rate=0.3, latency_ms=5, timeout_s=2.0, retry_after_s=0.05, seed=7)
    with serve_in_thread(faults) as server:
        env = _fast_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="10", FLYWHEEL_OPENAI__CONCURRENCY="16")
        run = flywheel(*_model_args(server, "--episodes", "40", "--writer", "openai"), env=env, cwd=tmp_path)
        injected = server.stats()["faults"]
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert "Finished round r0001: 40 episodes" in run.stdout
    assert set(injected) >= {"429", "500", "timeout", "malformed", "unknown_tool"}, injected

    con = Store(tmp_path / "flywheel-data").duck()
    outcomes = con.execute("SELECT episode_id, termination, success FROM outcomes").fetchall()
    assert len(outcomes) == len({o[0] for o in outcomes}) == 40
    assert {o[1] for o in outcomes} <= TERMINATIONS
    assert any(o[2] for o in outcomes) and not all(o[2] for o in outcomes)
    invalid = con.execute("SELECT action_raw, feedback_error FROM steps WHERE action_kind = 'invalid'").fetchall()
    assert invalid, "malformed replies must be kept as invalid-call steps"
    assert any(raw for raw, _ in invalid), "the raw text of a bad reply is kept"
    assert all("INVALID_ACTION" in err for _, err in invalid)
    (policy, model), = con.execute("SELECT DISTINCT policy, model FROM episodes").fetchall()
    assert (policy, model) == (f"openai:{MODEL}", MODEL)
    # every planner step cost a model call (a sub-agent's own steps cost none of the planner's)
    tokens = con.execute("SELECT sum(cost_prompt_tokens), min(cost_latency_ms) FROM steps WHERE actor = 'planner'"
                         ).fetchone()
    assert tokens[0] > 0 and tokens[1] > 0

    writers = dict(con.execute("SELECT writer, count(*) FROM tasks GROUP BY writer").fetchall())
    assert writers.get(f"openai:{MODEL}", 0) >= 15, writers  # worded by the model, some after a rejected try
    worded = con.execute("SELECT instruction FROM tasks WHERE writer <> 'template'").fetchall()
    assert all(text.startswith("Hey, ") for (text,) in worded)

    status = json.loads(flywheel("status", "--json", env=env, cwd=tmp_path).stdout)["rounds"][0]
    # the round's cost counts every call: the planner's (one a step) and the task writer's
    usage = {r["role"]: r for r in status["model_usage"]}
    assert set(usage) == {"planner", "writer"} and usage["planner"]["prompt_tokens"] == tokens[0]
    assert usage["planner"]["calls"] == con.execute("SELECT count(*) FROM steps WHERE actor = 'planner'").fetchone()[0]
    assert usage["writer"]["calls"] >= writers[f"openai:{MODEL}"] and usage["writer"]["prompt_tokens"] > 0
    assert {r["model"] for r in usage.values()} == {MODEL}
    assert status["episodes"] == 40 and status["prompt_tokens"] == tokens[0] + usage["writer"]["prompt_tokens"]
    summary = run.stdout.splitlines()
    worded, written = writers[f"openai:{MODEL}"], sum(writers.values())
    assert (f"the model worded {worded} of {written} tasks" in run.stdout) == (worded < written), run.stdout
    assert any(line.strip().startswith(f"model tokens: {status['prompt_tokens']:,} prompt") and "writer" in line
               for line in summary), run.stdout


@pytest.mark.parametrize("backend,runner", [("sqlite", "threads"), ("postgres", "threads"), ("sqlite", "processes")])
def test_kill_9_mid_round_then_rerun_repeats_no_committed_call(tmp_path, prefect_server, backend, runner, request):
    concurrency = 4
    url = request.getfixturevalue("fresh_postgres_url") if backend == "postgres" else None
    env = _fast_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="10", FLYWHEEL_OPENAI__CONCURRENCY=str(concurrency),
                    FLYWHEEL_OPENAI__TIMEOUT_S="5", FLYWHEEL_ROUND__RUNNER=runner,
                    **({"FLYWHEEL_STATE_URL": url} if url else {}))
    data = tmp_path / "flywheel-data"

    def warehouse() -> Store:  # the warehouse on this test's backend
        return Store(data, url)

    with serve_in_thread(FaultConfig(latency_ms=50)) as server:
        proc = subprocess.Popen([flywheel_executable(), *_model_args(server, "--episodes", "60")], env=env,
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            def open_shard_journaled() -> bool:
                assert proc.poll() is None, "the round finished before it could be killed"
                # model calls start after the round's tables exist: only then may we open the database
                if not server.stats()["requests"] or not warehouse().done_keys("r0001", "episodes"):
                    return False
                return bool(_open_journal(warehouse()))

            # Freeze the round where it stands (new requests wait unanswered), let the calls already
            # answered reach the journal, then kill: no race between the check and the kill. Shards run
            # in parallel, so the open one may commit while the freeze settles: then thaw and try again.
            for _ in range(20):
                wait_for("a committed shard and replies of the next one journaled", open_shard_journaled,
                         timeout=180, interval=0.05)
                server.set_faults(FaultConfig(latency_ms=50, hold=True))
                wait_for("the round frozen",
                         _settled(lambda: (len(_journal(warehouse())), _steps_committed(warehouse()))),
                         timeout=60, interval=0.3)
                if _open_journal(warehouse()):
                    break
                server.set_faults(FaultConfig(latency_ms=50))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
            server.set_faults(FaultConfig(latency_ms=50))
        journaled = _journal(warehouse())
        committed_shards = warehouse().done_keys("r0001", "episodes")
        assert journaled and 0 < len(committed_shards) < 6
        committed_before = {r[0] for r in warehouse().duck().execute("SELECT episode_id FROM episodes").fetchall()}
        assert _open_journal(warehouse()), "the kill must leave journaled replies of an open shard"
        before = server.stats()["episodes"]

        rerun = flywheel(*_model_args(server), env=env, cwd=tmp_path)
        assert rerun.returncode == 0, rerun.stderr
        assert "Resumed and finished round r0001" in rerun.stdout
        after = server.stats()["episodes"]

    con = warehouse().duck()
    ids = [r[0] for r in con.execute("SELECT episode_id FROM episodes").fetchall()]
    assert len(ids) == len(set(ids)) == 60
    # Every reply journaled before the kill was answered exactly once, and never asked again.
    for episode, index in journaled:
        assert after[episode]["positions"][str(index)] == 1, (episode, index)
    # Only the calls in flight when the process died were asked twice.
    repeated = sum(c - 1 for e in after.values() for c in e["positions"].values() if c > 1)
    assert repeated <= concurrency, repeated
    # The rerun asked nothing of the episodes whose shards were already committed.
    assert all(after[e]["requests"] == before[e]["requests"] for e in committed_before)
    # Every committed step cost one request; the only extra ones are those in flight at the kill.
    steps = con.execute("SELECT count(*) FROM steps WHERE actor = 'planner'").fetchone()[0]
    assert sum(e["requests"] for e in after.values()) == steps + repeated


def _steps_committed(store) -> int:
    return store.duck().execute("SELECT count(*) FROM steps").fetchone()[0]


def _open_journal(store) -> set[tuple[str, int]]:
    """Journaled replies of episodes not yet committed."""
    committed = {r[0] for r in store.duck().execute("SELECT episode_id FROM episodes").fetchall()}
    return {(e, i) for e, i in _journal(store) if e not in committed}


def _settled(read):
    """A check that holds once ``read()`` gives the same value twice in a row."""
    last: list = []

    def check() -> bool:
        value = read()
        same = bool(last) and last[-1] == value
        last.append(value)
        return same

    return check


def _journal(store) -> set[tuple[str, int]]:
    from sqlmodel import select

    from warehouse.state import ModelReply

    with store.session() as s:
        return {(r.episode_id, r.step_index) for r in s.exec(select(ModelReply))}


def test_endpoint_down_stops_the_round_in_one_line_and_a_rerun_finishes(tmp_path, prefect_server):
    env = _fast_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="5", FLYWHEEL_OPENAI__BREAKER_FAILURES="6")
    with serve_in_thread(FaultConfig(down=True)) as server:
        down = flywheel(*_model_args(server, "--episodes", "10"), env=env, cwd=tmp_path)
        assert down.returncode == 1
        lines = [line for line in down.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "model endpoint is down" in lines[0], down.stderr
        assert "Traceback" not in down.stdout + down.stderr
        server.set_faults(FaultConfig())
        rerun = flywheel(*_model_args(server), env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert "Resumed and finished round r0001: 10 episodes" in rerun.stdout


@pytest.mark.parametrize("then", ["heals", "stays down"])
def test_an_endpoint_timing_out_every_call_commits_no_cut_off_episode_and_the_rerun_finishes(
        tmp_path, prefect_server, then):
    # every attempt times out; the waves of concurrent timeouts count once each for the breaker,
    # so the episodes run out of retries before it opens: none of them may be committed as data.
    # "stays down": the rerun is cut off at the same steps again, which is final (a request that
    # always fails must not hold the round back for good): kept as endpoint_error, and said
    env = _fast_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="6", FLYWHEEL_OPENAI__RETRIES="1")
    with serve_in_thread(FaultConfig(rate=1.0, kinds={"timeout": 1.0}, timeout_s=1.0)) as server:
        cut = flywheel(*_model_args(server, "--episodes", "6"), env=env, cwd=tmp_path)
        assert cut.returncode == 1, cut.stdout + cut.stderr
        lines = [line for line in cut.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "6 of 6 episodes of r0001/s00000" in lines[0], cut.stderr
        assert "timeout" in lines[0] and "rerun" in lines[0]
        assert "Traceback" not in cut.stdout + cut.stderr
        assert _steps_committed(Store(tmp_path / "flywheel-data")) == 0
        if then == "heals":
            server.set_faults(FaultConfig())
        rerun = flywheel(*_model_args(server), env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert "Resumed and finished round r0001: 6 episodes" in rerun.stdout
    terminations = Store(tmp_path / "flywheel-data").duck().execute("SELECT termination FROM outcomes").fetchall()
    assert len(terminations) == 6
    if then == "heals":
        assert ("endpoint_error",) not in terminations
    else:
        assert set(terminations) == {("endpoint_error",)}
        assert "6 episode(s) ended because the model endpoint kept failing" in rerun.stdout
        status = json.loads(flywheel("status", "--json", env=env, cwd=tmp_path).stdout)["rounds"][0]
        assert status["model_usage"] == []  # no reply was ever given: no call to pay for


def _prefect_warnings(prefect_url: str) -> list[str]:
    import httpx

    resp = httpx.post(f"{prefect_url}/logs/filter", json={"logs": {"level": {"ge_": 30}}, "limit": 200}, timeout=10)
    resp.raise_for_status()
    return [row["message"] for row in resp.json()]


def test_refused_requests_end_their_episodes_once_each_and_the_round_goes_on(tmp_path, prefect_server):
    # a fifth of the requests refused like llama.cpp refuses a bad message; a breaker of 3 would open at
    # once if refusals counted as outages
    faults = FaultConfig(rate=0.2, kinds={"refuse": 1.0}, seed=3)
    env = _fast_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="10", FLYWHEEL_OPENAI__BREAKER_FAILURES="3")
    with serve_in_thread(faults) as server:
        run = flywheel(*_model_args(server, "--episodes", "20"), env=env, cwd=tmp_path)
        refused = server.stats()["faults"]["refuse"]
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stdout + run.stderr and not run.stderr.strip()
    con = Store(tmp_path / "flywheel-data").duck()
    rows = con.execute("SELECT termination, json_extract_string(failure, '$.detail') FROM outcomes").fetchall()
    rejected = [detail for term, detail in rows if term == "request_rejected"]
    assert len(rows) == 20 and len(rejected) == refused > 0  # each refusal ends one episode; none retried
    # an episode whose task was already done when its request was refused succeeds: it has no failure to explain
    explained = [d for d in rejected if d is not None]
    assert explained and all(d.startswith("500: ") and REFUSED in d for d in explained)
    assert not any(term == "endpoint_error" for term, _ in rows)
    said = [line for line in run.stdout.splitlines() if "refused a request" in line]
    assert len(said) == 1 and f"{refused} episode(s)" in said[0] and REFUSED in said[0], run.stdout
    logged = [m for m in _prefect_warnings(prefect_server) if "refused" in m and REFUSED in m]
    assert logged and sum(int(m.split("refused ")[1].split(" ")[0]) for m in logged) == refused


@pytest.mark.parametrize("case", ["wrong_url", "refused_key", "unknown_model", "placeholder_key"])
def test_bad_endpoint_is_one_line_before_any_work(tmp_path, case):
    with serve_in_thread(api_key="sk-test-right") as server:
        base_url, model, key = server.base_url, MODEL, "sk-test-right"
        if case == "wrong_url":
            base_url = server.root + "/nothing-here"
        elif case == "refused_key":
            key = "sk-test-wrong"
        elif case == "unknown_model":
            model = "no-such-model"
        elif case == "placeholder_key":
            key = "changethis"
        env = cli_env(None, OPENAI_API_KEY=key)
        proc = flywheel("run", "--policy", "openai", "--model", model, "--base-url", base_url, env=env, cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    expected = {"wrong_url": "base URL", "refused_key": "refused the API key", "unknown_model": "no-such-model",
                "placeholder_key": "placeholder"}[case]
    assert expected in lines[0]
    assert "sk-test" not in proc.stderr, "the key is never printed"
    assert not (tmp_path / "flywheel-data").exists()
