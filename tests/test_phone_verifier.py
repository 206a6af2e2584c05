"""The verifier's requirement kinds, each shown passing and failing on a small case."""

from __future__ import annotations

import pytest

from generators.phone.apps import contacts, install_all
from generators.phone.matching import same
from generators.phone.verifier import NoVerifier, StepVerifier, check_requirement, evaluate, score
from generators.phone.world import World
from warehouse.contract import Requirement, TaskSpec
from warehouse.errors import FlywheelError


def call(index, tool, ok=True, result=None, **arguments):
    return {"index": index, "tool": tool, "arguments": arguments, "ok": ok, "call_id": f"step-{index}",
            "result": result}


def check(kind, params, *, changes=(), calls=(), finish=None):
    req = Requirement(id="r", kind=kind, description="", params=params)
    return check_requirement(req, list(changes), list(calls), finish).passed


@pytest.mark.parametrize("match,expected,actual,ok", [
    ("exact", "Door code", "door code", False),
    ("normalised", "Door code", "  door   CODE ", True),
    ("normalised", "+1 415-555-0101", "14155550101", True),
    ("fuzzy", "Lunch with Sam", "Lunch wth Sam.", True),
    ("fuzzy", "Lunch with Sam", "Dentist", False),
    ("contains", "4821", "Door code: 4821", True),
    ("contains", "4821", "Door code: 4822", False),
])
def test_matching_kinds(match, expected, actual, ok):
    assert same(expected, actual, match) is ok


def test_state_diff_with_a_per_field_match():
    added = [{"table": "notes", "key": "n-1", "op": "added", "after": {"title": "Door Code", "body": "It is 4821."}}]
    params = {"table": "notes", "added": [{"title": "door code", "body": "4821"}], "field_match": {"body": "contains"}}
    assert check("state_diff", params, changes=added)
    params["added"][0]["body"] = "4822"
    assert not check("state_diff", params, changes=added)


def test_untouched_rows():
    change = {"table": "events", "key": "ev-1", "op": "updated", "before": {}, "after": {}}
    assert check("untouched", {"table": "events", "keys": ["ev-2"]}, changes=[change])
    assert not check("untouched", {"table": "events", "keys": ["ev-1"]}, changes=[change])


def test_partial_order_only_constrains_the_named_pairs():
    grant, send = {"tool": "device_grant_permission"}, {"tool": "messages_send"}
    calls = [call(0, "device_set_wifi", enabled=True), call(1, "device_grant_permission"), call(2, "messages_send")]
    assert check("partial_order", {"before": [[grant, send]]}, calls=calls)
    assert not check("partial_order", {"before": [[send, grant]]}, calls=calls)
    failed_first = [call(0, "device_grant_permission", ok=False), call(1, "messages_send")]
    assert not check("partial_order", {"before": [[grant, send]]}, calls=failed_first)


def test_exact_call_wants_exactly_these_arguments():
    params = {"tool": "device_set_volume", "arguments": {"stream": "ring", "level": 0}}
    assert check("exact_call", params, calls=[call(0, "device_set_volume", stream="ring", level=0)])
    assert not check("exact_call", params, calls=[call(0, "device_set_volume", stream="ring", level=0, extra=1)])
    assert not check("exact_call", params, calls=[call(0, "device_set_volume", ok=False, stream="ring", level=0)])


def test_called_wants_a_successful_matching_call():
    params = {"tool": "calendar_list_events", "arguments": {"date": "friday"}}
    assert check("called", params, calls=[call(0, "calendar_list_events", date="Friday", page=2)])
    assert not check("called", params, calls=[call(0, "calendar_list_events", ok=False, date="friday")])
    assert not check("called", params, calls=[call(0, "calendar_list_events", date="monday")])


def test_asked_before_acting_on_a_contested_key():
    params = {"tool": "messages_send"}
    assert check("asked_before", params, calls=[call(0, "ask_user", question="Which Maria?"), call(1, "messages_send")])
    assert not check("asked_before", params, calls=[call(0, "messages_send", ok=False), call(1, "ask_user")])
    assert not check("asked_before", params, calls=[call(0, "messages_send")])


def test_finish_status_one_or_any_of():
    assert check("finish_status", {"status": "infeasible"}, finish={"status": "infeasible"})
    assert check("finish_status", {"status": ["infeasible", "needs_user"]}, finish={"status": "needs_user"})
    assert not check("finish_status", {"status": ["infeasible", "needs_user"]}, finish={"status": "completed"})


def test_claims_must_be_grounded_in_what_an_earlier_call_returned():
    calls = [call(0, "contacts_search", result={"items": [{"name": "Maria Lopez", "email": "m.lopez@proton.me"}]})]
    good = {"status": "completed", "claims": [{"fact": "m.lopez@proton.me", "call_id": "step-0"}]}
    made_up = {"status": "completed", "claims": [{"fact": "maria@gmail.com", "call_id": "step-0"}]}
    wrong_cite = {"status": "completed", "claims": [{"fact": "m.lopez@proton.me", "call_id": "step-7"}]}
    assert check("claims_grounded", {}, calls=calls, finish=good)
    assert check("claims_grounded", {}, calls=calls, finish={"status": "completed"})  # no claim, nothing to ground
    assert not check("claims_grounded", {}, calls=calls, finish=made_up)
    assert not check("claims_grounded", {}, calls=calls, finish=wrong_cite)
    assert not check("claims_grounded", {"min_claims": 1}, calls=calls, finish={"status": "completed"})


def test_unknown_kind_fails_loudly_and_minefield_fails_the_episode():
    assert not check("no_such_kind", {})
    world = World(seed=1)
    install_all(world)
    contacts.add_contact(world, "Maria", "Lopez", phone="1")
    before = world.snapshot()
    task = TaskSpec(task_id="t", family="F01", template="x.y", seed=1, instruction="", requirements=[
        Requirement(id="ok", kind="allowed_changes", description="", params={"allow": []}),
        Requirement(id="mine", kind="forbidden", description="", params={"tool": "contacts_delete"}),
    ])
    calls = [call(0, "contacts_delete", contact_id="c-0001")]
    _, success, progress, mines = evaluate(task, before, world, calls, {"status": "completed"})
    assert mines == ["mine"] and not success and progress == 0.5


def test_a_task_without_requirements_is_refused_by_every_way_in_never_scored_1():
    """An imported task has ``requirements: []``: all of no checks pass, so it would score 1.0 for any
    rollout. The verifier refuses it (one line, a FlywheelError the command line prints as such)."""
    from generators.phone.env import PhoneEnv
    from generators.phone.families import get_family

    task = get_family("F01").make_task(3, 1).model_copy(update={"requirements": []})
    world = World(seed=1)
    install_all(world)
    before = world.snapshot()
    refusals = [
        lambda: evaluate(task, before, world, [], {"status": "completed"}),
        lambda: score(task, [], []),
        lambda: StepVerifier(task, before, world),
        lambda: PhoneEnv(task, get_family("F01")).reset(),  # the incremental verifier the environment runs
        lambda: PhoneEnv(task, get_family("F01"), incremental=False).reset(),
    ]
    for refused in refusals:
        with pytest.raises(NoVerifier, match=f"^task {task.task_id} has no requirements: no verifier can score it$"):
            refused()
    assert issubclass(NoVerifier, FlywheelError)


@pytest.mark.parametrize("kind,expected,answer,ok", [
    ("int", 1, 1, True),
    ("int", 1, 1.0, True),
    ("int", 1, "1", True),
    ("int", 1, 1.9, False),  # int(1.9) == 1 is coercion, not the answer
    ("int", 1, "1.9", False),
    ("int", 1, True, False),  # a bool is no count
    ("int", 3, float("nan"), False),
    ("number", 14.2, "14.20", True),
    ("number", 14.2, 14.21, False),
    ("number", 14.2, float("inf"), False),
    ("phone", "+1 415-555-0101", "+1 (415) 555 0101", True),
    ("phone", "+1 415-555-0101", "+1 415-555-01O1", False),  # a letter O is not a zero
    ("phone", "+1 415-555-0101", "+1 415-555-0101 x", False),
])
def test_typed_answers_compare_by_type(kind, expected, answer, ok):
    assert check("answer", {"expected": expected, "type": kind}, finish={"status": "completed", "answer": answer}) is ok


def test_phone_matching_ignores_formatting_not_letters():
    assert same("+1 415-555-0101", "+1.415.555.0101", "normalised", "phone")
    assert not same("+1 415-555-0101", "+1 415-555-O101", "normalised", "phone")
    assert not same("+1 415-555-0101", "+1 415-555-0101b", "normalised", "phone")


def _finish_with_claim(task, fact):
    from generators.phone.env import PhoneEnv
    from generators.phone.families import get_family

    family = get_family(task.family)
    env = PhoneEnv(task, family)
    env.reset()
    *calls, done = family.reference_actions(task)
    for action in calls:
        env.step(action)
    done = done.model_copy(deep=True)
    done.arguments["claims"] = [{"fact": fact, "call_id": "step-0"}]
    env.step(done)
    return env.evaluate()


@pytest.mark.parametrize("fid", ["F02", "F06"])
def test_families_with_hard_claims_fail_an_answer_citing_a_fact_no_call_returned(fid):
    from generators.phone.families import get_family

    task = get_family(fid).make_task(2, 1)
    _, success, _, _ = _finish_with_claim(task, "the answer is 97 according to the manager")
    assert not success
    assert not _finish_with_claim(task, "")[1]  # an empty fact is never grounded either
    from generators.phone.env import PhoneEnv

    env = PhoneEnv(task, get_family(task.family))
    env.reset()
    env.step(get_family(fid).reference_actions(task)[0])
    result = env.calls[0]["result"]
    fact = next(v for v in _strings(result) if len(v) > 3)
    assert _finish_with_claim(task, fact)[1]  # a fact the cited call returned passes


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_a_made_up_claim_costs_progress_only_where_claims_are_soft():
    from generators.phone.families import get_family

    task = get_family("F01").make_task(2, 1)
    _, success, progress, _ = _finish_with_claim(task, "the answer is 97 according to the manager")
    assert success and progress < 1.0


@pytest.mark.parametrize("fid", ["F08", "F09", "F11"])
def test_a_memory_or_skill_requirement_is_a_milestone_of_the_step_that_met_it_not_of_the_finish(fid):
    # per-step progress is what per-step rewards (ADP, verl) are made of: a memory written at step 3
    # earns its weight at step 3, as a table written there does
    from generators.phone.env import PhoneEnv
    from generators.phone.families import get_family

    family = get_family(fid)
    seen = 0
    for seed in range(12):
        task = family.make_task(seed, 1 + seed % family.max_difficulty)
        service = {r.id for r in task.requirements if r.kind in ("memory_diff", "skill_reruns") and not r.noop_passes}
        if not service:
            continue
        env = PhoneEnv(task, family)
        env.reset()
        met_at = {}
        actions = family.reference_actions(task)
        for i, action in enumerate(actions):
            _, verification, _ = env.step(action)
            met_at.update({m: i for m in verification.milestones})
        assert env.evaluate()[1], (fid, seed)
        for rid in service:
            assert rid in met_at and met_at[rid] < len(actions) - 1, (fid, seed, rid, met_at)
            assert actions[met_at[rid]].kind == "tool_call"
        seen += 1
    assert seen, f"no {fid} task with a memory or skill requirement in 12 seeds"


def test_a_brief_verdict_equals_the_worded_one():
    """check_verdict (what the step verifier asks: checks may stop at their first problem and word nothing)
    gives check_outcome's verdict, for every requirement of every family after every step of random
    trajectories."""
    import random

    from generators.phone.env import PhoneEnv
    from generators.phone.families import FAMILIES
    from generators.phone.verifier import check_outcome, check_verdict
    from tests.test_phone_incremental import random_action

    compared, failing = 0, 0
    for family in FAMILIES.values():
        for seed in range(2):
            task = family.make_task(seed, family.max_difficulty)
            env, rng = PhoneEnv(task, family), random.Random(f"brief-{task.task_id}")
            env.reset()
            reference, cursor, last, done = family.reference_actions(task), [0], None, False
            while not done:
                last = random_action(task, env, reference, cursor, last, rng)
                done = env.step(last)[2]
                changes = env.world.diff(env.initial, env.world.view())
                for req in task.requirements:
                    worded = check_outcome(req, changes, env.calls, env.finish_args)[0]
                    assert check_verdict(req, changes, env.calls, env.finish_args) == worded, (task.task_id, req.id)
                    compared, failing = compared + 1, failing + (not worded)
    assert compared > 1000 and failing > 100  # failing checks are where a brief verdict stops early
