"""Bad input in files and payloads, fed by hypothesis to the pure readers: every import format,
Label Studio annotations (the pull's parsing), review decisions. A record is read, skipped with
a reason, or the whole input is one typed error (InputError); nothing else escapes, and what
is read holds no NaN or infinity."""

from __future__ import annotations

import io
import json
import math
import zipfile

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from flows.stages.importing import prepare_import
from review_app import decisions
from review_app.label_studio import config as ls_config
from review_app.label_studio.annotations import parse_result
from review_app.label_studio.client import RemoteAnnotation, RemoteTask, RemoteUser
from review_app.label_studio.sync import plan_pull
from tests.fuzz import FUZZ, assert_clear_error, hostile_scalar, hostile_text, json_values
from tests.review_fixtures import make_accounts, make_round
from warehouse.errors import InputError
from warehouse.store import Store

NUM = st.one_of(hostile_scalar, st.sampled_from([10**400, -(10**400), 1e308]))
MSG_KEYS = ["role", "content", "tool_calls", "tool_call_id", "id", "function", "name", "arguments", "error", "type"]
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "bogus"])},
    optional={"content": st.one_of(hostile_text, json_values(MSG_KEYS, 6)), "tool_call_id": hostile_scalar,
              "tool_calls": st.lists(st.fixed_dictionaries({"id": hostile_scalar, "function": st.fixed_dictionaries(
                  {"name": hostile_scalar, "arguments": st.one_of(hostile_text, json_values(["a"], 4))})}), max_size=2),
              "error": hostile_scalar},
)
messages = st.lists(message, max_size=6)

# one document per format, in its own shape, with hostile values where its fields are
FORMATS = {
    "openai-chat": st.lists(st.fixed_dictionaries({"messages": messages}, optional={
        "reward": NUM, "success": hostile_scalar, "task": json_values(["task_id", "family", "split", "template"], 6),
        "tools": json_values(["type", "function", "name", "parameters"], 8), "reward_breakdown": json_values(["a"], 4),
        "masked_steps": json_values(["x"], 4), "rollout": NUM, "termination": hostile_scalar}), max_size=3),
    "tau2": st.fixed_dictionaries({"simulations": st.lists(st.fixed_dictionaries({"task_id": hostile_scalar, "messages": messages},
        optional={"trial": NUM, "reward_info": st.fixed_dictionaries({}, optional={"reward": NUM, "reward_breakdown": json_values(["a"], 4)}),
                  "termination_reason": hostile_scalar}), max_size=3)}, optional={"tasks": json_values(["id"], 6)}),
    "inspect": st.fixed_dictionaries({"samples": st.lists(st.fixed_dictionaries({"id": hostile_scalar, "messages": messages},
        optional={"epoch": NUM, "scores": st.dictionaries(hostile_text, st.fixed_dictionaries({}, optional={"value": NUM}),
                                                          max_size=2)}), max_size=3)}, optional={"eval": json_values(["task"], 4)}),
    "otel": st.fixed_dictionaries({"resourceSpans": st.lists(st.fixed_dictionaries({"scopeSpans": st.lists(
        st.fixed_dictionaries({"spans": st.lists(st.fixed_dictionaries({"traceId": hostile_scalar, "attributes": st.lists(
            st.fixed_dictionaries({"key": st.sampled_from(["gen_ai.input.messages", "gen_ai.output.messages",
                                                            "gen_ai.conversation.id", "gen_ai.operation.name",
                                                            "gen_ai.tool.call.id", "gen_ai.tool.definitions"]),
                                   "value": st.fixed_dictionaries({"stringValue": st.one_of(hostile_text, messages.map(json.dumps))})}),
            max_size=4)}, optional={"startTimeUnixNano": NUM, "name": hostile_scalar}), max_size=3)}), max_size=2)}),
        max_size=2)}),
    "adp": st.lists(st.fixed_dictionaries({"id": hostile_scalar, "content": st.lists(st.fixed_dictionaries(
        {"class_": st.sampled_from(["api_action", "message_action", "text_observation", "code_action", "bogus"])},
        optional={"function": hostile_scalar, "kwargs": json_values(["a"], 4), "content": hostile_scalar,
                  "source": st.sampled_from(["user", "environment", "agent", "x"]), "tool_call_id": hostile_scalar,
                  "reward": NUM, "description": hostile_scalar}), max_size=5)},
        optional={"details": json_values(["reward", "masked_steps"], 6)}), max_size=3),
}


def _check_prepared(path, fmt: str) -> None:
    try:
        prepared = prepare_import(path, fmt)
    except Exception as exc:  # noqa: BLE001  (the property: only a one-line InputError escapes)
        assert_clear_error(exc)
        assert isinstance(exc, InputError)
        return
    for where, why in prepared.summary.skipped:
        assert where and why and "\n" not in why
    for rec in prepared.episodes.values():
        assert math.isfinite(rec.outcome.progress)
        assert rec.outcome.success in (True, False, None)


def _dumps(value) -> str:
    # Python writes NaN and Infinity as JSON does not; a huge int as its digits: both are hostile input
    return json.dumps(value)


@pytest.mark.parametrize("fmt", list(FORMATS))
@FUZZ
@given(data=st.data())
def test_every_import_format_reads_hostile_documents(tmp_path_factory, fmt, data):
    value = data.draw(FORMATS[fmt])
    path = tmp_path_factory.mktemp("imp") / f"in.{'json' if fmt != 'inspect' else 'json'}"
    path.write_text(_dumps(value), encoding="utf-8")
    _check_prepared(path, fmt)


GOOD_CHAT = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]}


@pytest.mark.parametrize("reward", [float("nan"), float("inf"), -float("inf"), 10**400])
def test_a_non_finite_reward_is_a_skipped_record_not_a_failure(tmp_path, reward):
    """Regression (found by hypothesis): NaN compared false with 0.5, so it imported as a failure;
    a huge integer reward crashed float()."""
    path = tmp_path / "in.jsonl"
    path.write_text(_dumps({**GOOD_CHAT, "reward": reward}) + "\n" + _dumps(GOOD_CHAT | {"reward": 1}) + "\n")
    prepared = prepare_import(path, "openai-chat")
    assert len(prepared.episodes) == 1
    assert [w for w, _ in prepared.summary.skipped] == ["line 1"]
    assert "finite" in prepared.summary.skipped[0][1]


@FUZZ
@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")  # a zip with one name twice, on purpose
@given(samples=st.lists(st.tuples(st.sampled_from(["samples/a_epoch_1.json", "samples/../../x.json", "header.json",
                                                   "samples/b.json", "/abs.json"]),
                                  st.one_of(FORMATS["inspect"].map(lambda v: _dumps(v.get("samples", [{}])[:1] or {})),
                                            st.binary(max_size=30).map(lambda b: b.decode("latin-1")))), max_size=4))
def test_inspect_eval_zips_with_hostile_members(tmp_path_factory, samples):
    """An .eval log is a zip: members are read, never extracted, so a climbing name writes nothing."""
    root = tmp_path_factory.mktemp("eval")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, body in samples:
            zf.writestr(name, body)
    path = root / "log.eval"
    path.write_bytes(buf.getvalue())
    _check_prepared(path, "inspect")
    assert sorted(p.name for p in root.iterdir()) == ["log.eval"]


# --- Label Studio annotations (the pull's parsing) --------------------------------------------

CONTROLS = [ls_config.DECISION, ls_config.REASON, ls_config.NOTES, ls_config.FIRST_WRONG, ls_config.RECOVERED]
result_item = st.one_of(
    st.fixed_dictionaries({"from_name": st.one_of(st.sampled_from(CONTROLS), hostile_scalar),
                           "type": st.one_of(st.sampled_from(["choices", "textarea"]), hostile_scalar)},
                          optional={"value": st.one_of(hostile_scalar, st.fixed_dictionaries({}, optional={
                              "choices": st.one_of(st.lists(st.one_of(st.sampled_from(
                                  ["approve", "reject", "needs_fix", "wrong_result", "other", "recovered",
                                   ls_config.NOT_RECOVERED, ls_config.NO_WRONG_STEP, "0", "1: x", "٣", "99"]), hostile_scalar),
                                  max_size=3), hostile_scalar),
                              "text": st.one_of(st.lists(hostile_scalar, max_size=2), hostile_scalar)}))}),
    hostile_scalar,
)


@FUZZ
@given(result=st.one_of(st.lists(result_item, max_size=5), hostile_scalar), n_steps=st.integers(0, 12))
@example(result=[{"from_name": ls_config.DECISION, "type": "choices", "value": "approve"}], n_steps=3)
@example(result=[{"from_name": ls_config.DECISION, "type": "choices", "value": {"choices": "approve"}}], n_steps=3)
@example(result=[{"from_name": ls_config.DECISION, "type": "choices", "value": {"choices": ["approve"]}},
                 {"from_name": ls_config.FIRST_WRONG, "type": "choices", "value": {"choices": ["٣"]}}], n_steps=5)
@example(result=5, n_steps=1)
def test_label_studio_results_parse_or_name_the_problem(result, n_steps):
    try:
        got = parse_result(result, n_steps)
    except Exception as exc:  # noqa: BLE001
        assert_clear_error(exc)
        return
    if got is not None:
        decisions.check_decision(got.decision, got.reason_code, got.reason_text, got.first_wrong_step, n_steps,
                                 got.recovered)


@FUZZ
@given(data=st.one_of(json_values(["episode_id", "round_id", "n_steps"], 8), st.fixed_dictionaries(
    {"episode_id": st.just("e-1")}, optional={"round_id": hostile_scalar, "n_steps": hostile_scalar})),
    result=st.lists(result_item, max_size=3), user_id=st.one_of(st.none(), st.integers(0, 3)))
@example(data={"episode_id": "e-1", "n_steps": "many", "round_id": "r9' --"}, result=[], user_id=1)
@example(data={"episode_id": "e-1", "n_steps": [1]}, result=[], user_id=1)
def test_label_studio_tasks_with_hostile_data_plan_or_name_the_problem(data, result, user_id):
    """A task's data is edited by anyone in Label Studio: only its episode id is used, and the
    round and step count come from the warehouse."""
    task = RemoteTask(id=1, data=data if isinstance(data, dict) else {"x": data},
                      annotations=[RemoteAnnotation(id=7, task_id=1, user_id=user_id, updated_at="t", result=result)])
    try:
        planned, _ = plan_pull([task], {1: RemoteUser(1, "ann@example.com")}, {"e-1": ("r0001", 4)}, {1: "ann"})
    except Exception as exc:  # noqa: BLE001
        assert_clear_error(exc)
        return
    assert all(p.round_id == "r0001" for p in planned)


# --- review decisions, on both state databases --------------------------------------------------


@pytest.fixture
def review_world(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    ids = make_round(store, n_tasks=2)
    make_accounts(store)
    return store, ids


@FUZZ
@given(reviewer=st.one_of(hostile_text, st.sampled_from(["ann", "lea"])),
       decision=st.one_of(hostile_text, st.sampled_from(["approve", "reject", "needs_fix"])),
       reason=st.one_of(hostile_text, st.sampled_from(["", "wrong_result", "other"])), text=hostile_text,
       step=st.one_of(st.none(), st.sampled_from([-1, 0, 1, 10**6, 2**63, 2**70])), recovered=st.booleans(),
       round_id=st.one_of(hostile_text, st.just("r0001")))
@example(reviewer="ann", decision="approve", reason="", text="a\x00b", step=None, recovered=False, round_id="r0001")
@example(reviewer="ann\x00", decision="approve", reason="", text="", step=None, recovered=False, round_id="r0001")
@example(reviewer="ann", decision="approve", reason="", text="", step=2**70, recovered=False, round_id="r0001")
@example(reviewer="ann", decision="approve", reason="", text="", step=None, recovered=False, round_id="r0001\x00")
def test_review_decisions_are_saved_or_refused_in_one_line(review_world, reviewer, decision, reason, text, step,
                                                          recovered, round_id):
    store, ids = review_world
    for call in (decisions.record_decision, decisions.save_draft):
        kwargs = {"reviewer": reviewer, "round_id": round_id, "episode_id": ids[0], "reason_code": reason,
                  "reason_text": text, "first_wrong_step": step, "recovered": recovered}
        if call is decisions.record_decision:
            kwargs["decision"] = decision
        try:
            call(store, **kwargs)
        except Exception as exc:  # noqa: BLE001
            assert_clear_error(exc)
    try:
        decisions.adjudicate(store, lead=reviewer, round_id=round_id, episode_id=ids[0], decision=decision,
                             reason_code=reason, reason_text=text, first_wrong_step=step, recovered=recovered)
    except Exception as exc:  # noqa: BLE001
        assert_clear_error(exc)
