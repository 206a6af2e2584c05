"""A full round through the real command line on a real Prefect server: run, status,
export; and a real kill mid-round, then a rerun that loses and duplicates nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from curation.formats.openai_chat import check_record
from tests.conftest import alive, cli_env, flywheel, flywheel_executable, free_port, http_ok, running, wait_for
from warehouse import state
from warehouse.store import Store

pytestmark = pytest.mark.slow
EPISODES = 600  # the kill and Ctrl+C rounds: 30 shards of 20, stopped after the first ones commit


@pytest.fixture(params=["sqlite", "postgres"])
def backend_env(request, prefect_server):
    if request.param == "sqlite":
        return cli_env(prefect_server)
    return cli_env(prefect_server, FLYWHEEL_STATE_URL=request.getfixturevalue("fresh_postgres_url"))


def _shard_checksums(store: Store) -> dict[str, str]:
    from sqlmodel import select

    from warehouse.state import Shard

    with store.session() as s:
        return {sh.id: sh.checksum for sh in s.exec(select(Shard))}


def _ids(store: Store) -> list[str]:
    return [r[0] for r in store.duck().execute("SELECT episode_id FROM episodes").fetchall()]


def test_full_round_status_and_export(tmp_path, backend_env):
    run = flywheel("run", "--episodes", "100", "--no-progress", env=backend_env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert "warning" not in run.stderr.lower(), run.stderr
    assert "Finished round r0001" in run.stdout
    assert str((tmp_path / "flywheel-data").resolve()) in run.stdout

    status = flywheel("status", "--json", env=backend_env, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    rounds = json.loads(status.stdout)["rounds"]
    assert len(rounds) == 1
    r = rounds[0]
    store = Store(tmp_path / "flywheel-data", backend_env.get("FLYWHEEL_STATE_URL"))
    ids = _ids(store)
    # --episodes counts planned episodes; the later sessions of a scenario (F09) come on top of them
    later = store.duck().execute("SELECT count(*) FROM episodes WHERE session > 1").fetchone()[0]
    assert later > 0
    assert r["round"] == "r0001" and r["status"] == "complete" and r["episodes"] == 100 + later
    assert 0 < r["successes"] < 100, "a round must hold both successes and failures"
    assert r["curated"]
    assert set(r["capabilities"]) >= {"tool_use", "memory", "skills", "subagents", "all"}
    assert r["capabilities"]["memory"]["pass1"] is not None and r["attribution"]
    assert len(ids) == len(set(ids)) == 100 + later
    # every family ran, and the services' steps are stored: memory reads and writes, skills loaded,
    # sub-agent runs, each with its sub-agent's own steps as rows of their own, the user's replies
    con = store.duck()
    assert con.execute("SELECT count(DISTINCT family) FROM episodes").fetchone()[0] == 13
    tools = {t for (t,) in con.execute("SELECT DISTINCT action_tool FROM steps").fetchall()}
    assert {"memory_search", "memory_add", "memory_update", "load_skill", "run_subagent", "ask_user"} <= tools
    assert con.execute("SELECT count(*) FROM steps s JOIN steps d ON d.episode_id = s.episode_id "
                       "AND d.\"index\" = s.\"index\" + 1 WHERE s.action_tool = 'run_subagent' AND s.feedback_ok "
                       "AND d.actor LIKE 'subagent:%'").fetchone()[0] > 0
    assert con.execute("SELECT count(*) FROM steps WHERE action_tool = 'ask_user' AND feedback_ok "
                       "AND feedback_result LIKE '%answer%'").fetchone()[0] > 0

    export = flywheel("export", "--verified", "--out", str(tmp_path / "out"), env=backend_env, cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    manifest = json.loads((tmp_path / "out" / "openai-chat" / "openai-chat.manifest.json").read_text())
    lines = [line for name in sorted(manifest["files"]) for line in (tmp_path / "out" / "openai-chat" / name).read_text().splitlines()]
    assert 0 < len(lines) <= r["successes"]
    for line in lines:
        record = json.loads(line)
        assert check_record(record) == []
        assert any(m.get("tool_calls") for m in record["messages"])
        assert any(m["role"] == "tool" for m in record["messages"])
    assert sum(f["rows"] for f in manifest["files"].values()) == len(lines)
    assert set(manifest["files"]) <= {f"openai-chat.{s}.jsonl" for s in ("train", "dev", "test", "challenge")}
    assert manifest["episodes_in"] == 100 + later
    assert sum(manifest["excluded"].values()) + len(lines) == 100 + later
    assert manifest["lineage"]["rounds"] == ["r0001"]
    assert sum(manifest["failure_attribution"].values()) == 100 + later - r["successes"]
    assert all(k.split(":")[0] in ("model", "harness") for k in manifest["failure_attribution"])

    # Without --verified, nothing is approved yet: nothing is exported, and the manifest says why.
    approved_only = flywheel("export", "--out", str(tmp_path / "out2"), env=backend_env, cwd=tmp_path)
    assert approved_only.returncode == 0, approved_only.stderr
    empty = json.loads((tmp_path / "out2" / "openai-chat" / "openai-chat.manifest.json").read_text())
    assert empty["files"] == {} and empty["excluded"]["not_reviewed"] > 0


def test_kill_mid_round_then_rerun_has_no_duplicate_and_no_gap(tmp_path, prefect_server):
    # shards in worker processes (asked for: the automatic runner collects a round this small inline)
    env = cli_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="20", FLYWHEEL_ROUND__RUNNER="processes")
    data = tmp_path / "flywheel-data"
    args = [flywheel_executable(), "run", "--episodes", str(EPISODES), "--no-progress"]
    watcher = Store(data)  # one reader for the whole test, opened before the writer starts
    proc = subprocess.Popen(args, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:

        def three_shards_committed() -> bool:
            assert proc.poll() is None, "the round finished before it could be killed"
            return len(watcher.done_keys("r0001", "episodes")) >= 3

        wait_for("three committed shards", three_shards_committed, timeout=240, interval=0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    partial = _ids(Store(data))
    assert 0 < len(partial) < EPISODES
    before = _shard_checksums(Store(data))

    rerun = flywheel("run", "--no-progress", env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert "Resumed and finished round r0001" in rerun.stdout
    ids = _ids(Store(data))
    later = Store(data).duck().execute("SELECT count(*) FROM episodes WHERE session > 1").fetchone()[0]
    assert len(ids) == len(set(ids)) == EPISODES + later  # a scenario's later sessions come on top of the plan
    after = _shard_checksums(Store(data))
    assert all(after[k] == v for k, v in before.items()), "committed shards must be kept, not redone"
    status = json.loads(flywheel("status", "--json", env=env, cwd=tmp_path).stdout)["rounds"]
    assert [(r["round"], r["status"], r["episodes"]) for r in status] == [("r0001", "complete", EPISODES + later)]


def test_review_command_serves_the_page(tmp_path):
    port = free_port()
    Store(tmp_path / "d")  # a data directory with no round yet: the app serves its empty queue
    args = [flywheel_executable(), "review", "--port", str(port), "--data-dir", str(tmp_path / "d")]
    with running(args, env=cli_env(None), cwd=tmp_path) as proc:
        wait_for("the review app", lambda: alive(proc) and http_ok(f"http://127.0.0.1:{port}/_stcore/health"), timeout=60)
        assert http_ok(f"http://127.0.0.1:{port}/")


def test_first_run_on_a_fresh_machine_is_quiet(tmp_path):
    """The README's first command as a new user runs it: no Prefect server, a fresh
    Prefect home; only progress and a summary reach the terminal. Two shards in worker processes
    (asked for: a round this small would collect in its own process) that report to the round's
    temporary Prefect server."""
    env = cli_env(None, FLYWHEEL_ROUND__SHARD_SIZE="10", FLYWHEEL_ROUND__RUNNER="processes")
    run = flywheel("run", "--episodes", "20", "--workers", "2", env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    later = Store(tmp_path / "flywheel-data").duck().execute(
        "SELECT count(*) FROM episodes WHERE session > 1").fetchone()[0]  # a scenario's later sessions, on top
    assert f"Finished round r0001: {20 + later} episodes" in run.stdout
    assert Store(tmp_path / "flywheel-data").done_keys("r0001", "episodes") == {"s00000", "s00001"}
    noise = [
        line
        for line in (run.stdout + run.stderr).splitlines()
        if any(w in line.lower() for w in ("warning", "error", "traceback", "telemetry", "prefect"))
    ]
    assert noise == []
    assert (tmp_path / "flywheel-data" / "prefect").is_dir()


def _in_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> str:
    """Run ``flywheel ARGS`` in a pseudo-terminal (as in a user's shell); all it showed."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([flywheel_executable(), *args], env=env, cwd=cwd, stdout=follower, stderr=follower,
                            stdin=subprocess.DEVNULL)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    text = seen.decode(errors="replace")
    assert proc.wait(timeout=300) == 0, text
    return text


def test_a_round_and_an_export_in_a_new_users_terminal_show_progress_and_no_telemetry_notice(tmp_path, prefect_server):
    """In an interactive terminal outside CI, Prefect's client would print its telemetry notice on
    first import and queue usage events for its servers (DO_NOT_TRACK, set by the command, stops
    both); the terminal shows our progress bars (collection, curation, export) and summaries."""
    from prefect._internal.analytics.ci_detection import CI_ENV_VARS

    env = {k: v for k, v in cli_env(prefect_server).items() if k not in CI_ENV_VARS and k != "DO_NOT_TRACK"}
    text = _in_a_terminal(["run", "--episodes", "6", "--families", "F01"], env, tmp_path)
    assert "Finished round r0001" in text
    assert "telemetry" not in text.lower() and "anonymous usage" not in text.lower(), text
    assert "r0001 collecting" in text and "r0001 curating" in text, text
    shown = _in_a_terminal(["export", "--verified", "--out", str(tmp_path / "out")], env, tmp_path)
    assert "exporting openai" in shown and "6/6" in shown and "episodes" in shown, shown
    assert "Exported" in shown


def test_a_temporary_prefect_server_that_does_not_start_is_one_line_and_nothing_is_written(tmp_path):
    # a busy machine: Prefect's temporary server not up within its start-up timeout
    env = cli_env(None, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")  # a fresh home migrates for longer
    run = flywheel("run", "--episodes", "4", env=env, cwd=tmp_path)
    assert run.returncode == 1
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Prefect's temporary server did not start" in lines[0], run.stderr
    assert "PREFECT_API_URL" in lines[0] and "internal error" not in lines[0]
    from sqlmodel import select

    with Store(tmp_path / "flywheel-data").session() as s:
        assert s.exec(select(state.Round)).all() == []


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm-to-the-group"])
def test_ctrl_c_or_a_kill_stops_at_once_with_one_line_and_the_rerun_finishes(tmp_path, prefect_server, how):
    # "sigterm-to-the-group": a scheduler stopping the job signals the round and its temporary Prefect
    # server at once; Prefect's own SIGTERM handling then retried reporting to the dead server for minutes
    server = prefect_server if how == "ctrl-c" else None
    env = cli_env(server, FLYWHEEL_ROUND__SHARD_SIZE="20", FLYWHEEL_ROUND__RUNNER="processes")
    data = tmp_path / "flywheel-data"
    watcher = Store(data)
    proc = subprocess.Popen(
        [flywheel_executable(), "run", "--episodes", str(EPISODES), "--no-progress"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        wait_for("a committed shard", lambda: alive(proc) and watcher.done_keys("r0001", "episodes"), timeout=240)
        if how == "ctrl-c":
            proc.send_signal(signal.SIGINT)
        else:
            os.killpg(proc.pid, signal.SIGTERM)
        out, errs = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert [line for line in errs.splitlines() if line.strip()] == [
        "interrupted; rerun the same command to continue where it stopped"
    ]
    rerun = flywheel("run", "--no-progress", env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    ids = _ids(watcher)
    later = watcher.duck().execute("SELECT count(*) FROM episodes WHERE session > 1").fetchone()[0]
    assert len(ids) == len(set(ids)) == EPISODES + later  # a scenario's later sessions come on top of the plan


def _prefect_servers(home: Path) -> list[int]:
    """Pids of Prefect servers running with ``home`` as their PREFECT_HOME."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or b"prefect.server.api.server" not in (proc / "cmdline").read_bytes():
                continue
            if f"PREFECT_HOME={home}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the server through /proc")
def test_a_round_killed_outright_leaves_no_prefect_server_behind(tmp_path):
    """The round's temporary Prefect server (a child process, ~250 MB) stops when the round is gone, even
    SIGKILLed, when nothing could stop it at exit: kills of nightly rounds must not pile servers up."""
    env = cli_env(None, FLYWHEEL_KILL_AT="shard.written:1", FLYWHEEL_ROUND__SHARD_SIZE="10")
    env.pop("PREFECT_API_URL", None)  # a temporary server: this round starts its own
    with (tmp_path / "out.txt").open("w") as out:  # a file, not a pipe: a server left behind would hold a pipe open
        killed = subprocess.run([flywheel_executable(), "run", "--episodes", "20", "--no-progress"], env=env,
                                cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, timeout=600)
    assert killed.returncode == -9, (tmp_path / "out.txt").read_text()
    home = (tmp_path / "flywheel-data" / "prefect").resolve()
    assert (home / "prefect.db").exists()  # the round did start its temporary server
    wait_for("the killed round's Prefect server to stop", lambda: not _prefect_servers(home), timeout=60)
