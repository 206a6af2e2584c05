"""The reported case: ~200 airline-support conversations (OpenAI chat, tool calls, rewards, no
``tools`` list), imported, two approved through the review decision functions, exported: both
approved episodes are in the export, with schemas inferred from the calls (or from ``--tools``)."""

from __future__ import annotations

import json

from review_app import decisions
from review_app.accounts import add_reviewer
from tests.conftest import cli_env, flywheel
from tests.data.airline import conversations
from warehouse.query import iter_records
from warehouse.store import Store


def _write(tmp_path, n=200):
    src = tmp_path / "airline.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in conversations(n)))
    return src


def _rows(out):
    return [json.loads(line) for f in sorted(out.glob("openai-chat/*.jsonl")) for line in f.read_text().splitlines()]


def test_two_approved_airline_conversations_without_tool_lists_are_exported(tmp_path):
    src, env = _write(tmp_path), cli_env(None)
    proc = flywheel("import", str(src), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]  # said up front
    assert first.startswith("200 of 200 records have no tool schemas (no --tools file)"), proc.stdout
    assert "inferred from the calls for 7 tool(s)" in first and "transfer_to_human_agents" in first

    store = Store(tmp_path / "flywheel-data")
    con = store.duck()
    tasks = {t.task_id: t for t in iter_records(con, "tasks")}
    schema = {t["function"]["name"]: t["function"] for t in tasks["airline:airline-0"].tool_schemas}
    assert tasks["airline:airline-0"].tool_schemas_inferred and "get_user_details" in tasks["airline:airline-0"].tool_schemas_inferred
    assert schema["get_user_details"]["parameters"] == {
        "type": "object", "properties": {"user_id": {"type": "string"}}, "required": ["user_id"]}
    baggage = next(t for t in tasks.values() if "update_reservation_baggages" in (t.tool_schemas_inferred or []))
    params = {t["function"]["name"]: t["function"]["parameters"] for t in baggage.tool_schemas}["update_reservation_baggages"]
    assert params["properties"]["total_baggages"] == {"type": "integer"} and "payment_id" in params["required"]

    # the two hardest: one handed over to a person (ends on a tool's answer), one where the customer has the
    # last word; both are trials of tasks whose other trial called other tools
    eps = {e.episode_id: e for e in iter_records(con, "episodes")}
    outcomes = {o.episode_id: o for o in iter_records(con, "outcomes")}
    handed = next(e for e, o in outcomes.items() if o.termination == "external")
    bye = next(e for e, ep in eps.items() if ep.messages[-1]["role"] == "user")
    add_reviewer(store, "ann", "reviewer", "correct horse")
    for eid in (handed, bye):
        decisions.record_decision(store, reviewer="ann", round_id=eps[eid].round_id, episode_id=eid, decision="approve")
    out = tmp_path / "ex"
    proc = flywheel("export", "--round", "r0001", "--out", str(out), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Exported 2 episode rows" in proc.stdout and "invalid_record" not in proc.stdout, proc.stdout
    rows = _rows(out)
    assert sorted(r["metadata"]["episode_id"] for r in rows) == sorted([handed, bye])
    manifest = json.loads((out / "openai-chat" / "openai-chat.manifest.json").read_text())
    assert manifest["tool_schemas_inferred"]["episodes"] == 2 and "invalid_record" not in manifest["excluded"]
    for row in rows:
        names = {t["function"]["name"] for t in row["tools"]}
        called = {c["function"]["name"] for m in row["messages"] for c in m.get("tool_calls") or []}
        assert called <= names and row["messages"][-1]["role"] == "assistant"

    # every other conversation too: approve all, and none is an invalid record
    for eid, e in eps.items():
        decisions.record_decision(store, reviewer="ann", round_id=e.round_id, episode_id=eid, decision="approve")
    proc = flywheel("export", "--round", "r0001", "--out", str(tmp_path / "all"), env=env, cwd=tmp_path)
    assert proc.returncode == 0 and "invalid_record" not in proc.stdout, proc.stdout


def test_tools_file_gives_the_schemas_and_bad_tools_files_are_one_line(tmp_path):
    src, env = _write(tmp_path, 20), cli_env(None)
    given = [{"type": "function", "function": {"name": "get_user_details", "description": "Get a user's profile.",
                                               "parameters": {"type": "object", "properties": {"user_id": {
                                                   "type": "string", "description": "such as sara_doe_496"}},
                                                   "required": ["user_id"]}}}]
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(given))
    proc = flywheel("import", str(src), "--tools", str(tools), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"20 of 20 records have no tool schemas (schemas from {tools}); schemas inferred")
    task = next(iter_records(Store(tmp_path / "flywheel-data").duck(), "tasks"))
    by_name = {t["function"]["name"]: t for t in task.tool_schemas}
    assert by_name["get_user_details"] == given[0] and "get_user_details" not in task.tool_schemas_inferred
    (tmp_path / "other").mkdir()
    for bad, why in [("[]", "expected a non-empty JSON list"), ('[{"type": "function"}]', "item 1 is not a function schema"),
                     ("{oops", "not JSON")]:
        tools.write_text(bad)
        proc = flywheel("import", str(src), "--tools", str(tools), env=env, cwd=tmp_path / "other")
        assert proc.returncode != 0 and why in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
