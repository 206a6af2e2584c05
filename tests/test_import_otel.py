"""``flywheel import --format otel``: OpenTelemetry GenAI spans as OTLP JSON, on sample traces in
the conventions' documented shape (tests/data/otel/SOURCE.md)."""

from __future__ import annotations

import json

import pytest

from flows.stages.importing import prepare_import
from tests.conftest import cli_env, flywheel
from tests.format_roundtrip import DATA, approve, export_rows, facts, import_file
from warehouse.errors import InputError
from warehouse.query import iter_records

TRACES = DATA / "otel" / "traces.jsonl"


def test_a_conversation_is_its_last_chat_span_plus_the_tool_spans(tmp_path):
    store, summary = import_file(tmp_path / "d", TRACES, "otel")
    assert summary.imported == 1
    [(where, why)] = summary.skipped  # content capture off: reported, never guessed
    assert where == "trace 5b8efff798038103d269b633813fc60c" and "no message content" in why and "opt-in" in why
    [(key, ep)] = facts(store).items()
    assert key == ("otel:conv-ann", 0)
    assert [s[:4] for s in ep["steps"]] == [
        ("tool_call", "contacts_search", "call_o1", {"query": "Ann Lee"}),
        ("tool_call", "contacts_get", "call_o2", {"contact_id": "c-9"}),
        ("tool_call", "contacts_get", "call_o3", {"contact_id": "c-1"}),
        ("message", "", "", {})]  # the closing text: a text turn, no finish invented
    assert ep["steps"][0][5] == [{"id": "c-1"}]
    # the execute_tool span's ERROR status makes the call a failure with its error.type and message
    assert ep["steps"][1][4:] == (False, {"code": "NotFoundError", "message": "no contact c-9"})
    # the last call's result is only on its execute_tool span (gen_ai.tool.call.result)
    assert ep["steps"][2][4:] == (True, {"phone": "555-0101"})
    [task] = list(iter_records(store.duck(), "tasks"))
    assert [t["function"]["name"] for t in task.tool_schemas] == ["contacts_search", "contacts_get"]
    [episode] = list(iter_records(store.duck(), "episodes"))
    assert (episode.model, episode.policy) == ("gpt-4o-2024-08-06", "phone_agent")


def test_spans_group_by_trace_without_a_conversation_id(tmp_path):
    lines = [json.loads(line) for line in TRACES.read_text().splitlines()]
    for rs in lines[0]["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                span["attributes"] = [a for a in span["attributes"] if a["key"] != "gen_ai.conversation.id"]
    src = tmp_path / "one.json"
    src.write_text(json.dumps(lines[0]))  # a single export object, not JSON Lines
    prepared = prepare_import(src, "otel")
    [record] = prepared.episodes.values()
    assert record.episode.task_id == "one:otel:4bf92f3577b34da6a3ce929d0e0e4736" and len(record.steps) == 4


def test_import_then_export_keeps_call_ids_and_results(tmp_path):
    store, _ = import_file(tmp_path / "d", TRACES, "otel")
    [row], _ = export_rows(store, tmp_path / "out", "adp", approve(store), scrub=False)
    results = {c["tool_call_id"]: c["content"] for c in row["content"]
               if c["class_"] == "text_observation" and "tool_call_id" in c}
    # as recorded: the failed call's message, the result's JSON as the span held it
    assert results["call_o2"] == "no contact c-9" and json.loads(results["call_o3"]) == {"phone": "555-0101"}


def test_not_otlp_is_one_clear_error(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"resourceSpans": []}))
    with pytest.raises(InputError, match="no spans"):
        prepare_import(tmp_path / "x.json", "otel")


def test_cli_import_reports_the_trace_without_content(tmp_path):
    proc = flywheel("import", str(TRACES), "--format", "otel", env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Imported 1 episodes" in proc.stdout
    assert "trace 5b8efff798038103d269b633813fc60c: skipped: no message content" in proc.stderr


EVENTS = DATA / "otel" / "events.jsonl"


def test_the_event_form_imports_its_messages_and_scores(tmp_path):
    store, summary = import_file(tmp_path / "d", EVENTS, "otel")
    assert summary.imported == 2 and not summary.skipped
    got = facts(store)
    bob, dnd = got[("otel:conv-bob", 0)], got[("otel:7c1f0bd29e3e4f0aa6b1c0a1d2e3f405", 0)]
    # the details event (a log record) holds the messages the chat span lacks
    assert [s[:4] for s in bob["steps"]] == [
        ("tool_call", "messages_send", "call_e1", {"to": "Bob", "body": "I'm running late"}),
        ("message", "", "", {})]
    assert bob["steps"][0][5] == {"status": "sent"}
    assert [s[:3] for s in dnd["steps"]] == [("tool_call", "device_set_do_not_disturb", "call_e2"),
                                             ("message", "", "")]
    # scores: the first evaluation is the reward, every one is kept with its attributes
    assert (bob["reward"], bob["success"], dnd["reward"], dnd["success"]) == (1.0, True, 0.0, False)
    outcomes = {o.episode_id: o for o in iter_records(store.duck(), "outcomes")}
    by_task = {e.task_id: outcomes[e.episode_id] for e in iter_records(store.duck(), "episodes")}
    checks = {r.id: (r.passed, json.loads(r.detail)) for r in by_task["events:otel:conv-bob"].requirement_results}
    assert set(checks) == {"evaluation:task_success", "evaluation:politeness"}
    assert checks["evaluation:task_success"][1]["gen_ai.evaluation.explanation"] == "The message to Bob was sent."
    assert checks["evaluation:politeness"] == (False, {"event.name": "gen_ai.evaluation.result",
                                                       "gen_ai.evaluation.name": "politeness",
                                                       "gen_ai.evaluation.score.value": 0.4,
                                                       "gen_ai.evaluation.score.label": "curt",
                                                       "gen_ai.response.id": "chatcmpl-bob-2"})
    # --scorer picks another evaluation; one the conversation lacks is named, not guessed
    prepared = prepare_import(EVENTS, "otel", scorer="politeness")
    assert {r.episode.task_id: r.outcome.progress for r in prepared.episodes.values()} == {"events:otel:conv-bob": 0.4}
    assert prepared.summary.skipped == [("trace 7c1f0bd29e3e4f0aa6b1c0a1d2e3f405",
                                         "no evaluation named 'politeness' (it has task_success)")]
