"""Every command that reads or writes data takes --json and prints one JSON document of
the shape the README documents, and nothing else on stdout."""

from __future__ import annotations

import json
import subprocess

from sqlmodel import select

from tests.conftest import cli_env, flywheel, flywheel_executable
from tests.curation_data import build_round
from warehouse.state import Review


def _json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # the whole of stdout is one document


def test_export_feedback_eval_import_and_reviewers_speak_json(tmp_path):
    data = tmp_path / "data"
    store, round_id = build_round(data, episodes=40, rollouts=2)
    (task_id,) = store.duck().execute("SELECT task_id FROM tasks ORDER BY task_id LIMIT 1").fetchone()
    env, d = cli_env(None), ["--data-dir", str(data)]

    exported = _json(flywheel("export", "--verified", "--out", str(tmp_path / "out"), "--json", *d, env=env, cwd=tmp_path))
    assert set(exported) == {"rows", "unit", "splits", "excluded", "out", "manifest"}
    assert exported["rows"] == sum(exported["splits"].values()) > 0
    assert exported["out"] == str(tmp_path / "out" / "openai-chat") and exported["manifest"].startswith(exported["out"])
    assert json.loads((tmp_path / "out" / "openai-chat" / "openai-chat.manifest.json").read_text())["excluded"] == exported["excluded"]

    evaluated = _json(flywheel("eval", "--episodes", "6", "--no-progress", "--json", *d, env=env, cwd=tmp_path))
    assert evaluated["results"] > 0 and evaluated["already"] is False and evaluated["split"] == "dev"
    again = _json(flywheel("eval", "--episodes", "6", "--json", *d, env=env, cwd=tmp_path))
    assert again["already"] is True and again["batch"] == evaluated["batch"]
    # the eval's episodes are kept under its batch id, never a round: status lists the rounds alone
    status = _json(flywheel("status", "--json", *d, env=env, cwd=tmp_path))
    assert [r["round"] for r in status["rounds"]] == [round_id]

    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"task_id": task_id, "success": True}) + "\nnot json\n")
    fed = _json(flywheel("feedback", str(results), "--model", "m", "--json", *d, env=env, cwd=tmp_path))
    assert fed["imported"] == 1 and [s["where"] for s in fed["skipped"]] == ["line 2"]

    convo = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps(convo) + "\n{broken\n")
    imported = _json(flywheel("import", str(chats), "--json", *d, env=env, cwd=tmp_path))
    assert imported["imported"] == 1 and imported["round"] and len(imported["skipped"]) == 1
    assert imported["round"] != round_id
    rows = _json(flywheel("status", "--json", *d, env=env, cwd=tmp_path))["rounds"]
    assert sorted(r["round"] for r in rows) == sorted([round_id, imported["round"]])
    assert set(rows[0]) == set(rows[1])  # an imported round's row has every field a round's row has

    assert _json(flywheel("reviewer", "list", "--json", *d, env=env, cwd=tmp_path)) == {"reviewers": []}
    added = subprocess.run([flywheel_executable(), "reviewer", "add", "ana", "--role", "lead", "--password-stdin",
                            "--json", *d], input="s3cret-pass\n", env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)
    assert _json(added) == {"name": "ana", "role": "lead", "active": True}
    listed = _json(flywheel("reviewer", "list", "--json", *d, env=env, cwd=tmp_path))
    assert listed == {"reviewers": [{"name": "ana", "role": "lead", "active": True}]}

    # an eval's episode is refused, and said to be one
    (eval_episode,) = store.duck([evaluated["batch"]]).execute("SELECT episode_id FROM episodes LIMIT 1").fetchone()
    refused = subprocess.run([flywheel_executable(), "decide", eval_episode, "--reviewer", "ana", "--decision", "approve",
                              "--password-stdin", *d], input="s3cret-pass\n", env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and refused.stderr == (f"error: no episode {eval_episode!r} in any round (it is an "
                                                          f"episode of eval {evaluated['batch']}: evals are measured, "
                                                          f"not reviewed); nothing recorded\n")
    # an episode of the round (the data directory also holds the eval's episodes, which nobody reviews)
    (episode_id,) = store.duck([round_id]).execute("SELECT episode_id FROM episodes ORDER BY episode_id LIMIT 1").fetchone()
    decided = subprocess.run([flywheel_executable(), "decide", episode_id, "--reviewer", "ana", "--decision", "reject",
                              "--reason", "wrong_result", "--first-wrong-step", "1", "--recovered", "--password-stdin",
                              "--json", *d], input="s3cret-pass\n", env=env, cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)
    assert _json(decided) == {"episode_id": episode_id, "round": round_id, "reviewer": "ana", "decision": "reject",
                              "reason": "wrong_result", "first_wrong_step": 1, "recovered": True}
    with store.session() as s:  # recorded once
        assert [(r.episode_id, r.decision) for r in s.exec(select(Review)).all()] == [(episode_id, "reject")]
