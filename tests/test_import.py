"""``flywheel import --format openai-chat``: conversations into the contract as external
episodes; malformed records reported by line and skipped; a rerun imports nothing twice."""

from __future__ import annotations

import json

from tests.conftest import cli_env, flywheel
from warehouse.query import iter_records
from warehouse.store import Store


def _conv(user: str, reward=None, **extra):
    rec = {"messages": [
        {"role": "system", "content": "You run the phone."},
        {"role": "user", "content": user},
        {"role": "assistant", "content": "Which one?"},
        {"role": "user", "content": "Ann Lee"},
        {"role": "assistant", "content": "Searching.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "contacts_search", "arguments": '{"query": "Ann Lee"}'}},
            {"id": "c2", "type": "function", "function": {"name": "contacts_get", "arguments": '{"contact_id": '}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"ok": True, "data": [{"id": "c-1"}]})},
        {"role": "tool", "tool_call_id": "c2", "content": json.dumps({"ok": False, "error": {"code": "INVALID_ARGUMENT", "message": "bad"}})},
        {"role": "assistant", "content": "Her number is 555."},
    ], **extra}
    if reward is not None:
        rec["reward"] = reward
    return rec


def test_jsonl_import_skips_malformed_lines_and_is_idempotent(tmp_path):
    lines = [
        json.dumps(_conv("Find Ann's number", reward=1.0, model="gpt-x", task={"family": "F01", "task_id": "t-ann"})),
        "{not json",
        json.dumps({"messages": []}),
        json.dumps(_conv("Find Bob's number", reward=0)),
        json.dumps({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "nope", "content": "{}"}]}),
        json.dumps(_conv("Find Cy's number", reward="great")),
    ]
    src = tmp_path / "convs.jsonl"
    src.write_text("\n".join(lines) + "\n")
    env = cli_env(None)
    first = flywheel("import", str(src), "--format", "openai-chat", env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "Imported 2 episodes" in first.stdout and "4 malformed skipped" in first.stdout
    warnings = first.stderr.splitlines()
    assert [w.split(": ")[2] for w in warnings] == ["line 2", "line 3", "line 5", "line 6"]
    assert "Traceback" not in first.stderr

    con = Store(tmp_path / "flywheel-data").duck()
    episodes = {e.instruction: e for e in iter_records(con, "episodes")}
    assert set(episodes) == {"Find Ann's number", "Find Bob's number"}
    ann = episodes["Find Ann's number"]
    # the task id is scoped by the source (the file's name)
    assert (ann.source, ann.round_id, ann.model, ann.family, ann.task_id) == ("external", "r0001", "gpt-x", "F01", "convs:t-ann")
    steps = sorted((s for s in iter_records(con, "steps") if s.episode_id == ann.episode_id), key=lambda s: s.index)
    # text turns are text turns (the agent's question, the user's answer, the closing answer)
    assert [(s.actor, s.action.kind) for s in steps] == [("planner", "message"), ("user", "message"), ("planner", "tool_call"),
                                                         ("planner", "invalid"), ("planner", "message")]
    assert (steps[0].action.text, steps[1].action.text, steps[4].action.text) == ("Which one?", "Ann Lee", "Her number is 555.")
    assert steps[2].feedback.ok and steps[2].feedback.result == [{"id": "c-1"}]  # our own envelope, whole
    assert steps[3].action.raw == '{"contact_id": ' and steps[3].feedback.error.code == "INVALID_ARGUMENT"
    assert ann.messages[0] == {"role": "system", "content": "You run the phone."}  # kept as recorded
    outcomes = {o.episode_id: o for o in iter_records(con, "outcomes")}
    assert outcomes[ann.episode_id].success and outcomes[ann.episode_id].termination == "external"
    assert outcomes[ann.episode_id].final_answer == "Her number is 555."
    assert not outcomes[episodes["Find Bob's number"].episode_id].success

    again = flywheel("import", str(src), env=env, cwd=tmp_path)
    assert again.returncode == 0 and "already imported as round r0001; nothing changed" in again.stdout
    assert Store(tmp_path / "flywheel-data").duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 2
    status = json.loads(flywheel("status", "--json", env=env, cwd=tmp_path).stdout)["rounds"]
    assert [(r["round"], r["status"], r["episodes"], r["import"], r["import_source"]) for r in status] == [
        ("r0001", "complete", 2, True, "convs")]
    table = flywheel("status", env=env, cwd=tmp_path).stdout
    assert "complete (import: convs)" in table, table


def test_json_list_import(tmp_path):
    src = tmp_path / "convs.json"
    src.write_text(json.dumps([_conv("A"), _conv("B"), 7]))
    proc = flywheel("import", str(src), env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Imported 2 episodes" in proc.stdout and "record 3" in proc.stderr


def test_a_file_that_is_not_json_is_one_line_with_the_position(tmp_path):
    for name, text, where in [("broken.json", '[{"messages": []},\n {"a": ]', "broken.json:2:8: not JSON"),
                              ("notes.txt", "hello\nworld\n", "notes.txt:1:1: not JSON"),
                              ("empty.json", "[]", "nothing to import"), ("blank.jsonl", "\n\n", "the file is empty")]:
        src = tmp_path / name
        src.write_text(text)
        proc = flywheel("import", str(src), env=cli_env(None), cwd=tmp_path)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 1 and len(lines) == 1, proc.stderr
        assert lines[0].startswith("error: ") and name in lines[0] and where in lines[0]
        assert not (tmp_path / "flywheel-data").exists()
    proc = flywheel("import", str(tmp_path / "missing.jsonl"), env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 1 and "cannot read" in proc.stderr


def _airline_like(tail):
    return {"messages": [
        {"role": "user", "content": "Cancel my booking ZFA04Y please."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a1", "type": "function", "function": {"name": "get_reservation_details",
                                                          "arguments": '{"reservation_id": "ZFA04Y"}'}}]},
        {"role": "tool", "tool_call_id": "a1", "content": json.dumps({"error": "Reservation ZFA04Y not found"})},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a2", "type": "function", "function": {"name": "get_reservation_details",
                                                          "arguments": '{"reservation_id": "ZFA04"}'}}]},
        {"role": "tool", "tool_call_id": "a2", "content": "Error: reservation ZFA04 not found"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a3", "type": "function", "function": {"name": "get_user_details", "arguments": '{"user_id": "mia_li_3668"}'}}]},
        {"role": "tool", "tool_call_id": "a3", "content": json.dumps({"name": "Mia Li", "error_count": 0,
                                                                         "reservations": ["ZFA04Y"]})},
        *tail,
    ]}


def test_tool_errors_are_error_steps_no_reward_is_unknown_and_an_open_ending_is_external():
    from datetime import UTC, datetime

    from generators.importers.openai_chat import episode_from_record

    rec = episode_from_record(_airline_like([]), batch_id="b", created_at=datetime(2026, 3, 1, tzinfo=UTC))
    oks = [(s.action.tool, s.feedback.ok) for s in rec.steps]
    assert oks == [("get_reservation_details", False), ("get_reservation_details", False), ("get_user_details", True)]
    assert rec.steps[0].feedback.error.message == "Reservation ZFA04Y not found"
    assert rec.steps[1].feedback.error.message.startswith("Error: reservation ZFA04")
    # no reward: unknown, not a failure; it ended in the source's harness, not ours
    assert rec.outcome.success is None and rec.outcome.termination == "external"
    closed = episode_from_record({**_airline_like([{"role": "assistant", "content": "It is cancelled."}]), "reward": 0.0},
                                 batch_id="b", created_at=datetime(2026, 3, 1, tzinfo=UTC))
    assert closed.outcome.success is False and closed.outcome.termination == "external"
    assert closed.outcome.final_answer == "It is cancelled." and closed.steps[-1].action.kind == "message"


def test_an_imported_record_without_reward_is_curated_as_unknown(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps(_airline_like([])) + "\n" + json.dumps({**_airline_like([]), "reward": 1}) + "\n")
    proc = flywheel("import", str(src), env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    con = Store(tmp_path / "flywheel-data").duck()
    marks = con.execute("SELECT o.success IS NULL, m.\"check\", m.mark FROM marks m JOIN outcomes o USING (episode_id) "
                        "WHERE m.\"check\" IN ('verified', 'selection', 'schema')").fetchall()
    unknown = {c: m for no_reward, c, m in marks if no_reward}
    assert unknown == {"verified": "unknown", "selection": "unknown", "schema": "valid"}
    assert con.execute("SELECT count(*) FROM steps WHERE NOT feedback_ok").fetchone()[0] == 4
    assert con.execute("SELECT DISTINCT termination FROM outcomes").fetchall() == [("external",)]
