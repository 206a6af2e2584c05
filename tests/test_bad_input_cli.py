"""Bad input on the command line, driven in-process (fast) by hypothesis: hostile option values
for export, decide, reviewer add and set, import, feedback, run, gate and status. A refusal is one line
``error: ...`` on stderr, a non-zero exit, and nothing written: the data directory and the
export folder are as they were."""

from __future__ import annotations

import io
import json
import math
import os
import sys
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from flows.cli import main
from tests.fuzz import (
    FEW,
    HOSTILE_STRINGS,
    assert_one_clear_line,
    hostile_scalar,
    hostile_text,
    json_values,
    tree_digest,
)
from tests.review_fixtures import PASSWORD, make_accounts, make_round
from warehouse.store import Store

# option values: hostile strings, or a valid value (so that a refusal of a valid combination shows too)
arg = hostile_text.filter(lambda s: "\x00" not in s)  # a NUL cannot be in a real argv


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    data = tmp_path_factory.mktemp("cli-bad") / "data"
    store = Store(data)
    ids = make_round(store, n_tasks=4)
    make_accounts(store)
    return data, ids


def run_cli(argv: list[str], capsys, stdin: str = "") -> tuple[int, str, str]:
    """``flywheel ARGV`` in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FLYWHEEL_")}
    with mock.patch.dict(os.environ, clean, clear=True), mock.patch.object(sys, "stdin", io.StringIO(stdin)):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    got = capsys.readouterr()
    return code, got.out, got.err


def refused_cleanly(argv, capsys, data: Path, *also: Path, stdin: str = "") -> bool:
    """Run; if refused, check one clear line and nothing written under ``data`` and ``also``."""
    before = [tree_digest(p) for p in (data, *also)]
    code, out, err = run_cli(argv, capsys, stdin)
    if code == 0:
        return False
    assert_one_clear_line(err, where=" ".join(argv)[:300])
    # the writer lock file is rewritten by a command that takes the lock; its content is a pid, not data
    assert [tree_digest(p) for p in (data, *also)] == before, f"{argv}: a refused command wrote something"
    return True


@FEW
@given(fmt=st.one_of(arg, st.sampled_from(["openai", "dpo", "rl", "verl", "OPENAI"])),
       rounds=st.one_of(st.none(), arg, st.just("r0001")), release=st.one_of(st.none(), arg),
       pairs=st.one_of(st.none(), arg, st.just("step")), verified=st.booleans())
@example(fmt="openai", rounds="r0001' OR '1'='1", release=None, pairs=None, verified=True)
@example(fmt="../../x", rounds=None, release=None, pairs=None, verified=False)
@example(fmt="dpo", rounds=None, release=None, pairs="sideways", verified=True)
@example(fmt="openai", rounds=None, release="../rel-0001", pairs=None, verified=False)
@example(fmt="openai", rounds=",", release=None, pairs=None, verified=False)
def test_export_options(world, tmp_path_factory, capsys, fmt, rounds, release, pairs, verified):
    data, _ = world
    out = tmp_path_factory.mktemp("export") / "out"
    argv = ["export", "--data-dir", str(data), "--out", str(out), "--format", fmt]
    argv += ["--round", rounds] if rounds is not None else []
    argv += ["--release", release] if release is not None else []
    argv += ["--pairs", pairs] if pairs is not None else []
    argv += ["--verified"] if verified else []
    if refused_cleanly(argv, capsys, data, out):
        assert not out.exists()


@pytest.mark.parametrize("rounds", [",", " , ", ""])
def test_export_round_list_naming_no_round_is_refused_not_read_as_every_round(world, tmp_path, capsys, rounds):
    data, _ = world
    argv = ["export", "--verified", "--data-dir", str(data), "--out", str(tmp_path / "out"), "--round", rounds]
    assert refused_cleanly(argv, capsys, data)
    assert "--round names no round" in run_cli(argv, capsys)[2] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("below", ["a-file", "/dev/null", "/proc/self/status"])
def test_export_out_that_cannot_be_a_directory_is_one_line(world, tmp_path, capsys, below):
    data, _ = world
    (tmp_path / "a-file").write_text("mine")
    out = (tmp_path / below if below == "a-file" else Path(below)) / "sub"
    assert refused_cleanly(["export", "--verified", "--data-dir", str(data), "--out", str(out)], capsys, data, tmp_path)
    _, _, err = run_cli(["export", "--verified", "--data-dir", str(data), "--out", str(out)], capsys)
    assert err.startswith(f"error: cannot create --out {out}: ") and "internal error" not in err
    assert (tmp_path / "a-file").read_text() == "mine"


@FEW
@given(reviewer=st.one_of(arg, st.sampled_from(["ann", "lea", "nobody"])),
       decision=st.one_of(arg, st.sampled_from(["approve", "reject"])),
       reason=st.one_of(arg, st.sampled_from(["", "wrong_result", "other"])), note=arg,
       step=st.one_of(st.none(), st.sampled_from(["-1", "0", "999", "1e3", "99999999999999999999999", "x"])),
       round_id=st.one_of(st.none(), arg), password=st.one_of(arg, st.just(PASSWORD)), episode=st.one_of(arg, st.none()))
@example(reviewer="ann", decision="approve", reason="", note="a\x00b", step=None, round_id=None, password=PASSWORD,
         episode=None)
@example(reviewer="ann", decision="approve", reason="", note="", step="99999999999999999999999", round_id=None,
         password=PASSWORD, episode=None)
@example(reviewer="ann' --", decision="approve", reason="", note="", step=None, round_id=None, password=PASSWORD,
         episode=None)
@example(reviewer="ann", decision="approve", reason="", note="", step=None, round_id="r0001' OR '1'='1",
         password=PASSWORD, episode=None)
def test_decide_options(world, capsys, reviewer, decision, reason, note, step, round_id, password, episode):
    data, ids = world
    argv = ["decide", episode if episode is not None else ids[0], "--data-dir", str(data), "--reviewer", reviewer,
            "--decision", decision, "--reason", reason, "--note", note, "--password-stdin"]
    argv += ["--first-wrong-step", step] if step is not None else []
    argv += ["--round", round_id] if round_id is not None else []
    refused_cleanly(argv, capsys, data, stdin=password.replace("\x00", "") + "\n")


@FEW
@given(name=arg, role=st.one_of(arg, st.sampled_from(["reviewer", "lead"])), password=arg)
@example(name="eve", role="admin", password="long enough")
@example(name="../../eve", role="reviewer", password="long enough")
@example(name="eve", role="reviewer", password="")
def test_reviewer_add_options(tmp_path_factory, capsys, name, role, password):
    data = tmp_path_factory.mktemp("accounts") / "data"
    Store(data)
    refused_cleanly(["reviewer", "add", name, "--role", role, "--password-stdin", "--data-dir", str(data)], capsys, data,
                    stdin=password + "\n")


@FEW
@given(name=st.one_of(arg, st.sampled_from(["ann", "lea"])), role=st.one_of(st.none(), arg, st.just("reviewer")),
       active=st.sampled_from([None, "--active", "--inactive"]), password=st.one_of(st.none(), arg))
@example(name="lea", role="reviewer", active=None, password=None)  # the only lead
@example(name="lea", role=None, active="--inactive", password=None)
@example(name="../../ann", role=None, active="--inactive", password=None)
@example(name="ann", role=None, active=None, password="short")
@example(name="ann", role=None, active=None, password=None)  # nothing to change
def test_reviewer_set_options(tmp_path_factory, capsys, name, role, active, password):
    data = tmp_path_factory.mktemp("accounts") / "data"
    make_accounts(Store(data))
    argv = ["reviewer", "set", name, "--data-dir", str(data)]
    argv += ["--role", role] if role is not None else []
    argv += [active] if active else []
    argv += ["--password-stdin"] if password is not None else []
    refused_cleanly(argv, capsys, data, stdin=(password or "") + "\n")


IMPORT_KEYS = ["messages", "role", "content", "tool_calls", "function", "name", "arguments", "id", "tool_call_id",
               "reward", "task", "split", "family", "samples", "simulations", "resourceSpans", "spans", "attributes",
               "key", "value", "stringValue", "content", "class_", "kwargs", "details", "scores", "epoch", "trial"]


@FEW
@given(body=st.one_of(json_values(IMPORT_KEYS).map(json.dumps), st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
                      st.sampled_from(["", "[]", "{}", "\ufeff", "[1,", '{"messages": []}\n{"messages": 3}'])),
       fmt=st.one_of(st.sampled_from(["openai-chat", "inspect", "tau2", "otel", "adp"]), arg),
       scorer=st.one_of(st.none(), arg))
@example(body='{"messages": [{"role": "user", "content": "hi"}], "reward": NaN}', fmt="openai-chat", scorer=None)
@example(body="[]", fmt="../../inspect", scorer=None)
def test_import_options_and_files(world, tmp_path_factory, capsys, body, fmt, scorer):
    data, _ = world
    path = tmp_path_factory.mktemp("import") / "in.json"
    path.write_text(body, encoding="utf-8")
    argv = ["import", str(path), "--format", fmt, "--data-dir", str(data)]
    argv += ["--scorer", scorer] if scorer is not None else []
    if not refused_cleanly(argv, capsys, data):
        pytest.fail(f"imported from a hostile file: {body[:200]!r}") if body in HOSTILE_STRINGS else None


@FEW
@given(data=st.data(), threshold=st.sampled_from(["1.0", "0.5", "nan", "inf", "-inf", "x", "1e309", "-1"]), model=arg)
@example(data=None, threshold="1.0", model="")
@example(data=None, threshold="nan", model="")
def test_feedback_files_and_options(world, tmp_path_factory, capsys, data, threshold, model):
    """Records about the round's real tasks, with hostile rewards and verdicts (NaN among them)."""
    store_dir, _ = world
    tasks = [t for (t,) in Store(store_dir).duck().execute("SELECT task_id FROM tasks").fetchall()]
    hostile = st.fixed_dictionaries({"task_id": st.one_of(st.sampled_from(tasks), hostile_text)},
                                    optional={"reward": hostile_scalar, "success": hostile_scalar, "model": hostile_scalar})
    records = (data.draw(st.lists(st.one_of(hostile, json_values(["task_id", "reward", "success"])), min_size=1,
                                  max_size=4)) if data is not None else [{"task_id": tasks[0], "reward": float("nan")}])
    path = tmp_path_factory.mktemp("feedback") / "fb.json"
    path.write_text(json.dumps(records), encoding="utf-8")  # NaN and Infinity as Python's json writes them
    argv = ["feedback", str(path), "--success-threshold", threshold, "--model", model, "--data-dir", str(store_dir)]
    if not refused_cleanly(argv, capsys, store_dir):
        assert threshold in ("1.0", "0.5", "-1"), f"feedback accepted --success-threshold {threshold}"
        assert not any(isinstance(r, dict) and isinstance(r.get("reward"), float) and not math.isfinite(r["reward"])
                       and r.get("task_id") in tasks and len(records) == 1 for r in records), "a NaN reward was recorded"


@FEW
@given(families=arg, episodes=st.sampled_from(["0", "-3", "x", "1e3", "99999999999999999999"]), seed=arg)
@example(families="F01,../../x", episodes="0", seed="0")
def test_run_refuses_hostile_options_before_anything(tmp_path_factory, capsys, families, episodes, seed):
    root = tmp_path_factory.mktemp("run")
    data = root / "data"
    argv = ["run", "--data-dir", str(data), "--families", families, "--episodes", episodes, "--seed", seed, "--no-progress"]
    assert refused_cleanly(argv, capsys, root)
    assert not data.exists()


def test_run_with_a_dask_scheduler_that_does_not_answer_is_one_line_and_writes_nothing(tmp_path, capsys):
    from tests.conftest import free_port

    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    (tmp_path / "flywheel.toml").write_text(f'[round]\ndask_address = "{address}"\n')
    data = tmp_path / "data"
    argv = ["run", "--config", str(tmp_path / "flywheel.toml"), "--data-dir", str(data), "--no-progress"]
    assert refused_cleanly(argv, capsys, tmp_path)
    _, _, err = run_cli(argv, capsys)
    assert err.startswith(f"error: cannot reach the Dask scheduler at round.dask_address={address} "
                          "(FLYWHEEL_ROUND__DASK_ADDRESS): ")
    assert not data.exists()


@FEW
@given(family=arg, seeds=st.sampled_from(["0", "-1", "x", "2"]), knob=st.one_of(arg, st.just("noise=9")))
@example(family="F01", seeds="2", knob="noise=99")
@example(family="F01", seeds="2", knob="=")
def test_gate_options(tmp_path_factory, capsys, family, seeds, knob):
    root = tmp_path_factory.mktemp("gate")
    refused_cleanly(["gate", "--family", family, "--seeds", seeds, "--knob", knob], capsys, root)


@FEW
@given(config=arg, data_dir=arg, state_url=st.one_of(arg, st.sampled_from(
    ["postgresql+psycopg://u:pw@127.0.0.1:1/x", "sqlite:////nonexistent/dir/x.db", "mysql://x", "://", "sqlite://"])))
@example(config="", data_dir="", state_url="")
def test_status_with_hostile_paths_and_urls(tmp_path_factory, capsys, config, data_dir, state_url):
    root = tmp_path_factory.mktemp("status")
    os.chdir(root)  # relative paths land in the test's folder
    try:
        refused_cleanly(["status", "--config", config, "--data-dir", data_dir, "--state-url", state_url], capsys, root)
    finally:
        os.chdir(Path(__file__).resolve().parents[1])


def test_an_empty_config_path_is_refused_as_such(tmp_path, capsys):
    """``--config ''`` names no file; it read as '.' ("cannot read config .: Is a directory")."""
    for argv in (["status", "--config", ""], ["run", "-c", " ", "--data-dir", str(tmp_path / "d")]):
        assert refused_cleanly(argv, capsys, tmp_path)
        _, _, err = run_cli(argv, capsys)
        assert "--config" in err and "empty path" in err and "config ." not in err, err


def test_a_few_found_cases_through_the_real_command(world, tmp_path):
    """The regressions hypothesis found, as a user meets them: the installed ``flywheel``."""
    from tests.conftest import cli_env, flywheel

    data, _ = world
    before = tree_digest(data)
    fb = tmp_path / "fb.json"
    fb.write_text('[{"task_id": "t", "reward": 1}]')
    cases = [
        (cli_env(None, FLYWHEEL_ROUND__FAMILIES="F01,F02"), ["status", "--data-dir", str(data)],
         "error: FLYWHEEL_ROUND__FAMILIES: not a valid value for round"),
        (cli_env(None, FLYWHEEL_ROUND="{"), ["status", "--data-dir", str(data)], "error: FLYWHEEL_ROUND: not a valid"),
        (cli_env(None), ["feedback", str(fb), "--success-threshold", "nan", "--data-dir", str(data)],
         "error: --success-threshold must be a finite number"),
    ]
    for env, argv, start in cases:
        proc = flywheel(*argv, env=env, cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        assert_one_clear_line(proc.stderr, where=" ".join(argv))
        assert proc.stderr.startswith(start), proc.stderr
    assert tree_digest(data) == before
