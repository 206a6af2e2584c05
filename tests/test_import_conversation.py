"""An imported conversation comes out as it went in (issue 28, "Imports rewrite the conversation").

Conversations shaped like τ-bench's airline domain (their own system prompt, no ``tools`` list, tool
results in their own JSON, one with a boolean ``ok`` key, a call whose result was never recorded),
in each of the five import formats: import → approve → export every episode format (scrubbing off)
→ the conversation read back from the export equals the one that went in. Two sources that number
their tasks alike stay two tasks, with their own tools, and preference pairs never mix them.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq
import pytest

from flows.stages.importing import prepare_import
from tests.conftest import export_dir
from tests.format_roundtrip import approve, export_rows, import_file
from warehouse.contract import MISSING_RESULT
from warehouse.query import iter_records

SYSTEM = ("# Airline agent policy\n\nYou help users of Zoë Air book, modify or cancel reservations.\n"
          "- Confirm before any action that changes the database (\"yes\" only).\n- One tool call at a time.")
USER_ID = "mia_li_3668"
PROFILE = {"ok": True, "user": {"user_id": USER_ID, "name": {"first_name": "Mia", "last_name": "Lì"},
                                "reservations": ["NO6JO3"], "membership": "gold"}}
RESERVATION = {"reservation_id": "NO6JO3", "origin": "JFK", "destination": "SEA", "cabin": "economy",
               "flights": [{"flight_number": "HAT136", "date": "2024-05-20", "price": 428}],
               "note": "line one\nline two\ttabbed — ünïcode ✈"}


def conversation(request: str, reservation_action: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One airline conversation as canonical messages: role, content, calls [(id, name, arguments)], and for a
    tool message its call id. The last call's result was never recorded."""
    action, args = reservation_action
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": request},
        {"role": "assistant", "content": "Sure — could you give me your user id?", "calls": []},
        {"role": "user", "content": f"It's {USER_ID}.\nThanks!"},
        {"role": "assistant", "content": "", "calls": [("call_a1", "get_user_details", {"user_id": USER_ID})]},
        {"role": "tool", "tool_call_id": "call_a1", "content": json.dumps(PROFILE, ensure_ascii=False)},
        {"role": "assistant", "content": "Let me look at it.",
         "calls": [("call_a2", "get_reservation_details", {"reservation_id": "NO6JO3"})]},
        {"role": "tool", "tool_call_id": "call_a2", "content": json.dumps(RESERVATION, ensure_ascii=False)},
        {"role": "assistant", "content": "Shall I go ahead? (yes/no)", "calls": []},
        {"role": "user", "content": "yes"},
        {"role": "assistant", "content": "", "calls": [("call_a3", action, args)]},  # no result recorded
        {"role": "assistant", "content": "Done: your request is submitted. Anything else?", "calls": []},
    ]


CHANGE = conversation("Hi! I need to change my flight to the 22nd.",
                      ("update_reservation_flights", {"reservation_id": "NO6JO3", "cabin": "economy",
                                                      "flights": [{"flight_number": "HAT136", "date": "2024-05-22"}]}))
CANCEL = conversation("Hello, please cancel my flights.", ("cancel_reservation", {"reservation_id": "NO6JO3"}))


# --- the five import formats, each written from a canonical conversation --------------------------------------------

def as_openai(conv, task_id, reward=1.0) -> dict[str, Any]:
    msgs = []
    for m in conv:
        if m["role"] == "assistant":
            calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in m["calls"]]
            msgs.append({"role": "assistant", "content": m["content"] or None, **({"tool_calls": calls} if calls else {})})
        else:
            msgs.append({k: v for k, v in m.items() if k != "calls"})
    return {"task_id": task_id, "messages": msgs, "reward": reward}


def as_tau2(convs) -> dict[str, Any]:
    sims = []
    for n, conv in enumerate(convs):
        msgs = []
        for m in conv:
            if m["role"] == "assistant":
                msgs.append({"role": "assistant", "content": m["content"] or None,
                             "tool_calls": [{"id": i, "name": nm, "arguments": a, "requestor": "assistant"}
                                            for i, nm, a in m["calls"]] or None})
            elif m["role"] == "tool":
                msgs.append({"role": "tool", "id": m["tool_call_id"], "content": m["content"], "requestor": "assistant",
                             "error": False})
            else:
                msgs.append({"role": m["role"], "content": m["content"]})
        msgs.append({"role": "user", "content": "###STOP###"})  # the simulated user's stop signal: dropped
        sims.append({"task_id": "0", "trial": n, "termination_reason": "user_stop", "reward_info": {"reward": 1.0},
                     "messages": msgs})
    return {"info": {"environment_info": {"domain_name": "airline"}, "agent_info": {"llm": "gpt-x"}}, "simulations": sims}


def as_inspect(convs) -> dict[str, Any]:
    samples = []
    for n, conv in enumerate(convs):
        msgs, names = [], {}
        for m in conv:
            if m["role"] == "assistant":
                names.update({i: nm for i, nm, _ in m["calls"]})
                msgs.append({"role": "assistant", "content": m["content"],
                             "tool_calls": [{"id": i, "function": nm, "arguments": a} for i, nm, a in m["calls"]]})
            elif m["role"] == "tool":
                msgs.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"],
                             "function": names[m["tool_call_id"]]})
            else:
                msgs.append({"role": m["role"], "content": m["content"]})
        samples.append({"id": 0, "epoch": n + 1, "messages": msgs, "scores": {"match": {"value": "C"}}})
    return {"eval": {"task": "airline", "model": "gpt-x"}, "samples": samples}


def _kv(key, value):
    return {"key": key, "value": {"stringValue": value}}


def as_otel(convs) -> dict[str, Any]:
    spans = []
    for n, conv in enumerate(convs):
        msgs = []
        for m in conv:
            if m["role"] == "assistant":
                parts = ([{"type": "text", "content": m["content"]}] if m["content"] else []) + [
                    {"type": "tool_call", "id": i, "name": nm, "arguments": a} for i, nm, a in m["calls"]]
                msgs.append({"role": "assistant", "parts": parts})
            elif m["role"] == "tool":
                msgs.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": m["tool_call_id"],
                                                        "response": m["content"]}]})
            else:
                msgs.append({"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]})
        spans.append({"traceId": f"{n + 1:032x}", "spanId": f"{n + 1:016x}", "name": "chat gpt-x", "kind": 3,
                      "startTimeUnixNano": "1764500001000000000", "endTimeUnixNano": "1764500002000000000",
                      "attributes": [_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.conversation.id", f"conv-{n}"),
                                     _kv("gen_ai.request.model", "gpt-x"),
                                     _kv("gen_ai.input.messages", json.dumps(msgs[:-1])),
                                     _kv("gen_ai.output.messages", json.dumps(msgs[-1:]))], "status": {}})
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def as_adp(conv, n) -> dict[str, Any]:
    content = []
    for m in conv:
        if m["role"] == "assistant" and m["calls"]:
            for j, (i, nm, a) in enumerate(m["calls"]):
                content.append({"class_": "api_action", "function": nm, "kwargs": a, "tool_call_id": i,
                                **({"description": m["content"]} if j == 0 and m["content"] else {})})
        elif m["role"] == "assistant":
            content.append({"class_": "message_action", "content": m["content"]})
        elif m["role"] == "tool":
            content.append({"class_": "text_observation", "content": m["content"], "source": "environment",
                            "tool_call_id": m["tool_call_id"]})
        else:
            content.append({"class_": "text_observation", "content": m["content"], "source": m["role"]})
    return {"schema_version": "1.2.0", "id": f"traj-{n}", "content": content, "details": {"task_id": "0", "reward": 1.0}}


def write_input(tmp_path, fmt: str, convs, name: str = "airline"):
    if fmt == "openai-chat":
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(as_openai(c, 0), ensure_ascii=False) + "\n" for c in convs), encoding="utf-8")
    elif fmt == "adp":
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(as_adp(c, n), ensure_ascii=False) + "\n" for n, c in enumerate(convs)),
                        encoding="utf-8")
    else:
        doc = {"tau2": as_tau2, "inspect": as_inspect, "otel": as_otel}[fmt](convs)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


# --- reading each export format back as canonical messages ----------------------------------------------------------

def _args(value):
    return json.loads(value) if isinstance(value, str) else value


def from_chat(messages) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        if m["role"] == "assistant":
            out.append({"role": "assistant", "content": m.get("content") or "",
                        "calls": [(c["id"], c["function"]["name"], _args(c["function"]["arguments"]))
                                  for c in m.get("tool_calls") or []]})
        elif m["role"] == "tool":
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def from_adp(content) -> list[dict[str, Any]]:
    out = []
    for c in content:
        if c["class_"] == "api_action":
            out.append({"role": "assistant", "content": c.get("description", ""),
                        "calls": [(c["tool_call_id"], c["function"], c["kwargs"])]})
        elif c["class_"] == "message_action":
            out.append({"role": "assistant", "content": c["content"], "calls": []})
        elif c.get("tool_call_id"):
            out.append({"role": "tool", "tool_call_id": c["tool_call_id"], "content": c["content"]})
        else:
            out.append({"role": c["source"], "content": c["content"]})
    return out


def sharegpt_of(conv) -> tuple[str, list[tuple[str, Any]]]:
    """What ShareGPT must hold for a canonical conversation (it has no call ids)."""
    turns = []
    for m in conv[1:]:
        if m["role"] == "assistant":
            if m["content"]:
                turns.append(("gpt", m["content"]))
            turns += [("function_call", {"name": n, "arguments": a}) for _, n, a in m["calls"]]
        else:
            turns.append(({"user": "human", "tool": "observation"}[m["role"]], m["content"]))
    return conv[0]["content"], turns


def exported(tmp_path, store, fmt: str, tag: str) -> dict[str, list]:
    """Episode id -> the conversation(s) the export ``fmt`` holds for it, canonical."""
    rows, manifest = export_rows(store, tmp_path / f"out-{fmt}-{tag}", fmt, approve(store), scrub=False)
    assert not manifest["excluded"], manifest["excluded"]
    out: dict[str, list] = {}
    if fmt == "openai":
        for r in rows:
            out[r["metadata"]["episode_id"]] = from_chat(r["messages"])
    elif fmt == "trl":
        for r in rows:
            out[r["metadata"]["episode_id"]] = from_chat(r["prompt"] + r["completion"])
    elif fmt == "adp":
        for r in rows:
            out[r["id"]] = from_adp(r["content"])
    elif fmt == "sharegpt":
        for r in rows:
            out[r["id"]] = (r["system"], [(t["from"], json.loads(t["value"]) if t["from"] == "function_call" else t["value"])
                                          for t in r["conversations"]])
    elif fmt == "hf":
        for name in manifest["files"]:
            if name.endswith(".parquet"):
                for r in pq.read_table(export_dir(tmp_path / f"out-{fmt}-{tag}", manifest) / name).to_pylist():
                    out[r["episode_id"]] = from_chat([{**m, "tool_calls": json.loads(m["tool_calls"]) if m["tool_calls"] else None}
                                                      for m in r["messages"]])
    return out


FORMATS = ("openai-chat", "tau2", "inspect", "otel", "adp")


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_imported_conversation_is_exported_as_it_was_recorded(tmp_path, fmt):
    convs = [CHANGE, CANCEL]
    store, summary = import_file(tmp_path / "data", write_input(tmp_path, fmt, convs), fmt)
    assert summary.imported == 2 and not summary.skipped, summary.skipped
    con = store.duck()
    eps = sorted(iter_records(con, "episodes"), key=lambda e: e.rollout)
    by_request = {e.instruction: e for e in eps}
    want = {by_request[c[1]["content"]].episode_id: c for c in convs}
    # the steps: text turns as text turns, no question or finish invented, the unrecorded result marked, not made up
    steps = sorted((s for s in iter_records(con, "steps") if s.episode_id == eps[0].episode_id), key=lambda s: s.index)
    assert not any(s.action.kind in ("ask_user", "finish") for s in steps)
    assert [s.action.kind for s in steps if s.actor == "user"] == ["message", "message"]
    last_call = [s for s in steps if s.action.kind == "tool_call"][-1]
    assert last_call.feedback.notices == [MISSING_RESULT] and last_call.feedback.result is None
    profile = next(s for s in steps if s.action.tool == "get_user_details")
    assert profile.feedback.result == PROFILE  # a result with a boolean ok key is not read as our envelope
    assert {t.task_id for t in iter_records(con, "tasks")} == {e.task_id for e in eps}
    assert all(e.task_id.startswith("airline:") for e in eps)

    for export_fmt in ("openai", "trl", "hf", "adp"):
        got = exported(tmp_path, store, export_fmt, fmt)
        assert got == want, export_fmt
    got = exported(tmp_path, store, "sharegpt", fmt)
    assert got == {eid: sharegpt_of(c) for eid, c in want.items()}
    # scrubbing on: only personal data differs; every row is still there and parses
    for export_fmt in ("openai", "sharegpt", "trl", "adp"):
        rows, manifest = export_rows(store, tmp_path / f"scrubbed-{export_fmt}", export_fmt, approve(store))
        assert len(rows) == 2 and not manifest["excluded"], manifest["excluded"]


def test_two_sources_that_number_their_tasks_alike_stay_apart(tmp_path):
    a = write_input(tmp_path, "openai-chat", [CHANGE, CHANGE], name="airline_a")
    b = write_input(tmp_path, "openai-chat", [CANCEL, CANCEL], name="airline_b")
    # the second trial of each task failed early, so preference pairs can be made within a task
    for path in (a, b):
        recs = [json.loads(line) for line in path.read_text().splitlines()]
        recs[1]["reward"] = 0.0
        recs[1]["messages"] = recs[1]["messages"][:4] + [
            {"role": "assistant", "content": f"Sorry, I cannot help with: {recs[1]['messages'][1]['content']}"}]
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    store, _ = import_file(tmp_path / "data", a, "openai-chat")
    import_file(tmp_path / "data", b, "openai-chat", source="airline_b")
    con = store.duck()
    tasks = {t.task_id: t for t in iter_records(con, "tasks")}
    assert set(tasks) == {"airline_a:0", "airline_b:0"}  # task_id 0 is an id, scoped by its source
    assert "cancel_reservation" in tasks["airline_b:0"].tools and "cancel_reservation" not in tasks["airline_a:0"].tools
    eps = {e.episode_id: e for e in iter_records(con, "episodes")}

    rows, manifest = export_rows(store, tmp_path / "openai", "openai", approve(store), scrub=False)
    assert len(rows) == 4 and not manifest["excluded"], manifest["excluded"]
    for row in rows:
        names = {t["function"]["name"] for t in row["tools"]}
        called = {c["function"]["name"] for m in row["messages"] for c in m.get("tool_calls") or []}
        assert called <= names and not {"finish", "ask_user"} & names
        assert row["metadata"]["task_id"] == eps[row["metadata"]["episode_id"]].task_id

    def review(e):
        return SimpleNamespace(decision="reject" if e.messages[-1]["content"].startswith("Sorry") else "approve",
                               reviewer="ana", first_wrong_step=None, recovered=False)

    pairs, manifest = export_rows(store, tmp_path / "dpo", "dpo", {i: review(e) for i, e in eps.items()}, scrub=False)
    assert len(pairs) == 2, manifest
    for pair in pairs:
        chosen, rejected = eps[pair["metadata"]["chosen_id"]], eps[pair["metadata"]["rejected_id"]]
        assert chosen.task_id == rejected.task_id == pair["metadata"]["task_id"]
        conv = CHANGE if chosen.task_id == "airline_a:0" else CANCEL
        assert from_chat(pair["prompt"] + pair["chosen"]) == conv
        assert pair["prompt"][0] == {"role": "system", "content": SYSTEM}


def test_conversations_that_differ_in_what_was_said_are_not_duplicates(tmp_path):
    """τ-bench users open with a greeting and say what they want later: the turns after it and the agent's
    answers tell "change my flight" from "cancel my flights" (same lookups, same first message)."""
    def greeted(conv, request, answer):
        return ([conv[0], {"role": "user", "content": "Hi there"}, conv[2],
                 {"role": "user", "content": f"{request} My id is {USER_ID}."}] + conv[4:8]
                + [{"role": "assistant", "content": answer, "calls": []}])
    for answers in (("Your flight can be changed to the 22nd for $30.", "Your reservation can be cancelled with a "
                     "full refund."), ("Let me transfer you to an agent.",) * 2):  # the user's words alone tell them apart
        convs = [greeted(CHANGE, "I want to change my flight.", answers[0]),
                 greeted(CANCEL, "I want to cancel my flights.", answers[1])]
        store, _ = import_file(tmp_path / answers[0][:4], write_input(tmp_path, "openai-chat", convs), "openai-chat")
        marks = store.duck().execute("SELECT \"check\", passed, reason FROM marks WHERE \"check\" IN "
                                     "('exact_duplicate', 'near_duplicate')").fetchall()
        assert len(marks) == 4 and all(passed for _, passed, _ in marks), marks


def test_review_shows_the_conversation_and_marks_the_call_without_a_result(tmp_path):
    from review_app.conversation import conversation_turns, is_conversation
    store, _ = import_file(tmp_path / "data", write_input(tmp_path, "openai-chat", [CHANGE]), "openai-chat")
    [ep] = iter_records(store.duck(), "episodes")
    steps = list(iter_records(store.duck(), "steps"))
    turns = conversation_turns(ep.instruction, steps)
    assert is_conversation(ep, steps)
    said = [(t.role, t.text) for t in turns]
    assert said[:3] == [("user", CHANGE[1]["content"]), ("agent", CHANGE[2]["content"]), ("user", CHANGE[3]["content"])]
    calls = [c for t in turns for c in t.calls]
    assert [c.missing for c in calls] == [False, False, True] and not calls[-1].bad
    assert turns[-1].after == CHANGE[-1]["content"] or turns[-1].text == CHANGE[-1]["content"]


def test_a_source_name_that_is_no_name_is_one_line(tmp_path):
    from warehouse.errors import InputError
    path = write_input(tmp_path, "openai-chat", [CHANGE])
    with pytest.raises(InputError, match=r"^--source 'a b': use 1 to 64"):
        prepare_import(path, "openai-chat", source="a b")
    assert prepare_import(path, "openai-chat").source == "airline"


def test_a_call_whose_arguments_are_not_json_leaves_its_conversation_out_of_every_export(tmp_path):
    rec = as_openai(CHANGE, 0)
    rec["messages"][4]["tool_calls"][0]["function"]["arguments"] = '{"user_id": '  # cut short
    src = tmp_path / "cut.jsonl"
    src.write_text(json.dumps(rec) + "\n" + json.dumps(as_openai(CANCEL, 1)) + "\n")
    store, summary = import_file(tmp_path / "data", src, "openai-chat")
    assert summary.imported == 2
    cut = next(e.episode_id for e in iter_records(store.duck(), "episodes") if e.task_id == "cut:0")
    for fmt in ("openai", "sharegpt", "trl", "hf", "adp", "dpo"):
        _, manifest = export_rows(store, tmp_path / f"out-{fmt}", fmt, approve(store), pairs="step" if fmt == "dpo" else None)
        assert manifest["excluded"].get("invalid_record") == 1, (fmt, manifest["excluded"])
        assert [e["episode_id"] for e in manifest["approved_left_out"]["episodes"]
                if e["reason"] == "invalid_record"] == [cut], fmt
