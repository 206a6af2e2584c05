"""Agent Data Protocol: ``flywheel export --format adp`` (ADP 1.2 trajectories, loaded with models
written from ADP's published schema) and ``flywheel import --format adp`` (sample trajectories in
ADP's documented shape, tests/data/adp/SOURCE.md); a round trip keeps steps, call ids, results,
rewards and masks."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from tests.adp_schema import Trajectory
from tests.conftest import cli_env, flywheel
from tests.curation_data import build_round
from tests.format_roundtrip import DATA, approve, export_rows, facts, import_file, masked_by_export

ADP = DATA / "adp" / "trajectories.jsonl"


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    store, _ = build_round(tmp_path_factory.mktemp("adp") / "data", episodes=40, rollouts=2)
    return store


def test_export_loads_with_adps_schema_and_carries_verifier_rewards(collected, tmp_path):
    decisions = approve(collected)
    rows, manifest = export_rows(collected, tmp_path / "out", "adp", decisions)
    assert rows and manifest["format"] == "adp" and sum(manifest["splits"].values()) == len(rows)
    trajectories = [Trajectory.model_validate(r) for r in rows]  # raises on any shape ADP would refuse
    got = facts(collected, key="episode_id")
    progress = {}
    for eid, p in collected.duck().execute("SELECT episode_id, verification_progress FROM steps WHERE actor = 'planner' "
                                           'ORDER BY episode_id, "index"').fetchall():
        progress.setdefault(eid, []).append(p)
    for row, traj in zip(rows, trajectories, strict=True):
        ep = got[(row["id"], row["details"]["rollout"])]
        actions = [c for c in traj.content if c.class_ in ("api_action", "message_action")]
        assert len(actions) == len(ep["steps"])
        # per-step rewards: what the verifier's running progress gained at each step, closing to the episode's
        running = [*progress[row["id"]][:-1], ep["reward"]]
        gains = [b - a for a, b in zip([0.0, *running[:-1]], running, strict=True)]
        assert [a.reward for a in actions] == pytest.approx(gains, abs=1e-6)
        assert row["details"]["reward"] == pytest.approx(ep["reward"])
    with pytest.raises(ValidationError):  # the models do refuse a broken link
        bad = json.loads(json.dumps(rows[0]))
        bad["content"][2]["tool_call_id"] = "nobody"
        Trajectory.model_validate(bad)


def test_import_reads_adp_samples_and_names_the_malformed_lines(tmp_path):
    store, summary = import_file(tmp_path / "d", ADP, "adp")
    assert summary.imported == 2
    assert summary.skipped == [("line 3", "not JSON at column 35: Expecting value"),
                               ("line 4", "content 1: unknown class_ 'telepathy_action'")]
    got = facts(store)
    ann = got[("contacts-ann", 0)]
    # the agent's question and the user's answer are text turns, the closing answer too (no finish invented)
    assert [s[:4] for s in ann["steps"]] == [
        ("tool_call", "contacts_search", "call_d1", {"query": "Ann"}), ("message", "", "", {}), ("message", "", "", {}),
        ("tool_call", "contacts_get", "call_d2", {"contact_id": "c-1"}), ("message", "", "", {})]
    assert ann["steps"][3][5] == {"phone": "555-0101"}
    assert ann["reward"] == 1.0  # no details.reward: the sum of the per-step rewards
    bob = got[("adp:contacts-bob-1", 0)]  # ADP 1.0 without ids: the next observation is the action's result
    assert bob["steps"][0][:2] == ("tool_call", "messages_send") and bob["steps"][0][5] == "sent"


def test_export_then_import_keeps_steps_call_ids_results_rewards_and_masks(collected, tmp_path):
    got = facts(collected, key="episode_id")
    # ana marks a step wrong in one episode; the export carries the mask, the import restores it
    victim = next(k for k, v in got.items() if len(v["steps"]) >= 3)[0]
    decisions = approve(collected, {victim: 1})
    rows, _ = export_rows(collected, tmp_path / "out", "adp", decisions, scrub=False)
    masks = {r["id"]: r["details"]["masked_steps"] for r in rows}
    assert 1 in masks[victim]
    src = tmp_path / "adp.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store, summary = import_file(tmp_path / "again", src, "adp")
    assert summary.imported == len(rows) and not summary.skipped
    back = facts(store)  # keyed by task id: our export names the episode's task in details
    for r in rows:
        before, after = got[(r["id"], r["details"]["rollout"])], back[(r["details"]["task_id"], r["details"]["rollout"])]
        assert after["steps"] == before["steps"]
        assert (after["reward"], after["success"]) == (pytest.approx(before["reward"]), before["success"])
    # the masked steps come back as steps curation masks again, and a second export writes the same masks
    again, _ = export_rows(store, tmp_path / "out2", "adp", approve(store), scrub=False)
    # (task ids come back scoped by the import's source: ``adp:<task id>``)
    back_masks = {(r["details"]["task_id"].removeprefix("adp:"), r["details"]["rollout"]): r["details"]["masked_steps"]
                  for r in again}
    for r in rows:
        assert back_masks[(r["details"]["task_id"], r["details"]["rollout"])] == r["details"]["masked_steps"]
    assert masked_by_export(store)


def test_cli_imports_adp_and_exports_it(tmp_path):
    env = cli_env(None)
    proc = flywheel("import", str(ADP), "--format", "adp", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Imported 2 episodes" in proc.stdout and "line 4: skipped: content 1: unknown class_" in proc.stderr
    proc = flywheel("export", "--format", "adp", "--verified", "--out", str(tmp_path / "out"), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "adp" / "adp.manifest.json").exists()


def test_an_invalid_reply_comes_back_as_the_invalid_step_it_was(tmp_path):
    # ADP: the agent's text answered by the environment's notice (tests/data/adp/invalid_reply.jsonl)
    store, summary = import_file(tmp_path / "d", DATA / "adp" / "invalid_reply.jsonl", "adp")
    assert summary.imported == 2 and not summary.skipped
    other = facts(store)[("alarm-off-2", 0)]["steps"]  # another producer's notice: the environment's own words
    assert [s[:2] for s in other] == [("invalid", ""), ("tool_call", "alarms_list"), ("message", ""), ("message", ""),
                                      ("message", "")]
    assert other[0][5] == {"code": "INVALID_ACTION", "message": "Invalid action: no tool call found in the reply."}
    ep = facts(store)[("alarm-off", 0)]
    notice = {"code": "INVALID_ACTION", "message": "the reply was text where a tool call was required"}
    assert ep["steps"][0] == ("invalid", "", "", {}, False, notice)  # not a question to the user
    assert [s[:3] for s in ep["steps"][1:]] == [("tool_call", "alarms_list", "call_a1"),
                                                ("tool_call", "alarms_update", "call_a2"), ("finish", "finish", "call_a3")]
    assert ep["wrong"] == [0]
    # exported again it is the same message action and notice, and a second import gives the same step
    rows, _ = export_rows(store, tmp_path / "out", "adp", approve(store), scrub=False)
    [row] = [r for r in rows if r["details"]["task_id"] == "invalid_reply:alarm-off"]
    Trajectory.model_validate(row)
    assert [(c["class_"], c.get("source")) for c in row["content"][1:3]] == [("message_action", None),
                                                                            ("text_observation", "environment")]
    assert row["content"][1]["content"] == "alarms_list()" and row["content"][2]["content"].endswith(notice["message"])
    src = tmp_path / "again.jsonl"
    src.write_text(json.dumps(row) + "\n")
    again, _ = import_file(tmp_path / "again", src, "adp")
    assert facts(again)[("invalid_reply:alarm-off", 0)]["steps"] == ep["steps"]  # its task id as exported
    # the chat exports write the same reply and notice as an assistant turn and a "[harness] ..." user turn
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"messages": [
        {"role": "user", "content": "Turn off the 7:00 alarm."}, {"role": "assistant", "content": "alarms_list()"},
        {"role": "user", "content": "[harness] " + notice["message"]},
        {"role": "assistant", "content": "Done."}], "task": {"task_id": "chat-alarm"}}) + "\n")
    store, _ = import_file(tmp_path / "chat", chat, "openai-chat")
    assert [s[0] for s in facts(store)[("chat-alarm", 0)]["steps"]] == ["invalid", "message"]
