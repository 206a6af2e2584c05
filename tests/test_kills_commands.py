"""Kill -9 inside the other long commands (import, feedback, eval), rerun, and compare with a
run never killed: no lost or duplicated episode, feedback row or curation mark.

Like ``tests/test_kills.py``: a real ``flywheel`` subprocess armed with ``FLYWHEEL_KILL_AT``
(see ``warehouse/killpoints.py``) SIGKILLs itself at a named point, so the kill lands at the
same place every time. ``FLYWHEEL_LONG_TESTS=1`` adds random counts of the repeated points.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from tests.conftest import cli_env, flywheel
from warehouse import state
from warehouse.store import Store

pytestmark = pytest.mark.slow
LONG = os.environ.get("FLYWHEEL_LONG_TESTS") == "1"
ROUND = ("run", "--episodes", "20", "--seed", "5", "--no-progress")
EVAL = ("eval", "--split", "dev", "--episodes", "40", "--no-progress")


@pytest.fixture(scope="module", autouse=True)
def _on_the_session_prefect_server(prefect_server):
    """Every command of this module reports to the session's Prefect server (a temporary one per
    command would cost each its start-up, and the kills are not about it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFECT_API_URL", prefect_server)
        yield


def _env(**extra: str) -> dict[str, str]:
    return cli_env(None, FLYWHEEL_ROUND__SHARD_SIZE="10", **extra)


def _copy_of(prepared: Path, cwd: Path) -> Path:
    """``prepared``'s data directory copied into ``cwd`` (what a test starts from, made once)."""
    shutil.copytree(prepared / "flywheel-data", cwd / "flywheel-data")
    return cwd


def _ok(*args: str, cwd: Path, **extra: str) -> str:
    done = flywheel(*args, env=_env(**extra), cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return done.stdout


def _killed(*args: str, cwd: Path, point: str) -> None:
    killed = flywheel(*args, env=_env(FLYWHEEL_KILL_AT=point), cwd=cwd)
    assert killed.returncode == -9, f"{point} was never reached: {killed.returncode} {killed.stderr}"


def _rows(data: Path, sql: str) -> list[tuple]:
    return Store(data).duck().execute(sql).fetchall()


def _no_leftovers(data: Path) -> None:
    """On disk exactly the shards the state database records: no orphan, no temporary file."""
    store = Store(data)
    with store.session() as s:
        recorded = state.all_shard_paths(session=s)
    on_disk = {p.relative_to(data).as_posix() for p in (data / "shards").rglob("*") if p.is_file()}
    assert on_disk == recorded, sorted(on_disk ^ recorded)


def _points(fixed: list[str], repeated: list[tuple[str, int]], more: list[str] = ()) -> list[str]:
    """The kill points of a command: ``fixed`` always; with FLYWHEEL_LONG_TESTS=1 also ``more``
    and random counts of the ``repeated`` points."""
    if not LONG:
        return fixed
    rng = random.Random(41)
    return fixed + list(more) + [f"{n}:{rng.randint(1, most)}" for n, most in rng.choices(repeated, k=6)]


# --- import ---------------------------------------------------------------------------

IMPORT_EPISODES = "SELECT episode_id, round_id FROM episodes ORDER BY 1"
IMPORT_MARKS = "SELECT episode_id, \"check\", passed FROM marks ORDER BY 1, 2"


def _conversations(path: Path, n: int = 12) -> Path:
    lines = []
    for i in range(n):
        lines.append(json.dumps({"messages": [
            {"role": "user", "content": f"Text contact {i} that I am late"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "contacts_search", "arguments": json.dumps({"query": f"contact {i}"})}}]},
            {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"ok": True, "data": [{"id": f"c-{i}"}]})},
            {"role": "assistant", "content": f"Done for contact {i}."}], "reward": i % 2}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def clean_import(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("clean-import")
    _ok("import", str(_conversations(cwd / "convs.jsonl")), "--format", "openai-chat", cwd=cwd)
    data = cwd / "flywheel-data"
    return {"episodes": _rows(data, IMPORT_EPISODES), "marks": _rows(data, IMPORT_MARKS)}


@pytest.mark.parametrize("point", _points(
    ["shard.written:2", "import.recorded", "curate.marked"],  # writing its shards, recording, curating
    [("shard.written", 5), ("shard.renamed", 5)], ["shard.renamed:4", "import.written", "unit.committed"]))
def test_an_import_killed_at_a_point_then_rerun_equals_a_clean_import(tmp_path, clean_import, point):
    src = _conversations(tmp_path / "convs.jsonl")
    _killed("import", str(src), "--format", "openai-chat", cwd=tmp_path, point=point)
    _ok("import", str(src), "--format", "openai-chat", cwd=tmp_path)
    data = tmp_path / "flywheel-data"
    assert _rows(data, IMPORT_EPISODES) == clean_import["episodes"]
    assert _rows(data, IMPORT_MARKS) == clean_import["marks"]
    assert _rows(data, "SELECT count(DISTINCT round_id) FROM episodes") == [(1,)]
    _no_leftovers(data)
    _ok("run", "--episodes", "10", "--no-progress", cwd=tmp_path)  # the next round opens the next number
    assert _rows(data, "SELECT DISTINCT round_id FROM episodes ORDER BY 1") == [("r0001",), ("r0002",)]


# --- feedback and eval ----------------------------------------------------------------

FEEDBACK = "SELECT task_id, model, success, reward, source, batch, split FROM feedback ORDER BY batch, task_id"


def _feedback_file(cwd: Path) -> Path:
    tasks = [t for (t,) in _rows(cwd / "flywheel-data", "SELECT task_id FROM tasks ORDER BY 1")]
    path = cwd / "results.jsonl"
    path.write_text("".join(json.dumps({"task_id": t, "success": i % 3 == 0}) + "\n" for i, t in enumerate(tasks)))
    return path


@pytest.fixture(scope="module")
def a_round(tmp_path_factory) -> Path:
    """A folder with a finished round in its data directory (copied by the tests that start from it)."""
    cwd = tmp_path_factory.mktemp("a-round")
    _ok(*ROUND, cwd=cwd)
    return cwd


@pytest.fixture(scope="module")
def round_with_feedback(tmp_path_factory, a_round) -> Path:
    """A round and a trainer's feedback on it."""
    cwd = _copy_of(a_round, tmp_path_factory.mktemp("round-with-feedback"))
    _ok("feedback", str(_feedback_file(cwd)), "--model", "sft-1", cwd=cwd)
    return cwd


@pytest.fixture(scope="module")
def clean_feedback(tmp_path_factory, round_with_feedback):
    """A round, a trainer's feedback on it and an eval, none killed."""
    cwd = _copy_of(round_with_feedback, tmp_path_factory.mktemp("clean-feedback"))
    _ok(*EVAL, cwd=cwd)
    data = cwd / "flywheel-data"
    return {"feedback": _rows(data, FEEDBACK),
            "eval_episodes": _rows(data, "SELECT episode_id, round_id FROM episodes WHERE round_id LIKE 'eval-%' "
                                         "ORDER BY 1")}


@pytest.mark.parametrize("point", ["shard.written", "shard.renamed", "unit.committed"])
def test_feedback_killed_at_a_point_then_rerun_equals_a_clean_import(tmp_path, a_round, clean_feedback, point):
    _copy_of(a_round, tmp_path)
    src = _feedback_file(tmp_path)
    _killed("feedback", str(src), "--model", "sft-1", cwd=tmp_path, point=point)
    _ok("feedback", str(src), "--model", "sft-1", cwd=tmp_path)
    _no_leftovers(tmp_path / "flywheel-data")
    _ok(*EVAL, cwd=tmp_path)
    assert _rows(tmp_path / "flywheel-data", FEEDBACK) == clean_feedback["feedback"]


@pytest.mark.parametrize("point", _points(
    ["shard.written:2", "unit.committed:2", "eval.collected"],  # mid-shard, between shards, before recording
    [("shard.written", 10), ("unit.committed", 4)], ["unit.committed:4"]))
def test_an_eval_killed_at_a_point_then_rerun_equals_a_clean_eval(tmp_path, round_with_feedback, clean_feedback,
                                                                 point):
    _copy_of(round_with_feedback, tmp_path)
    _killed(*EVAL, cwd=tmp_path, point=point)
    _ok(*EVAL, cwd=tmp_path)
    data = tmp_path / "flywheel-data"
    assert _rows(data, FEEDBACK) == clean_feedback["feedback"]
    assert _rows(data, "SELECT episode_id, round_id FROM episodes WHERE round_id LIKE 'eval-%' ORDER BY 1") == \
        clean_feedback["eval_episodes"]
    _no_leftovers(data)
    again = _ok(*EVAL, cwd=tmp_path)  # the same eval once more: recorded, nothing added
    assert _rows(data, FEEDBACK) == clean_feedback["feedback"], again
