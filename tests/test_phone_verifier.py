"""The verifier's requirement kinds, each shown passing and failing on a small case."""

from __future__ import annotations

import pytest

from warehouse.contract import Requirement, TaskSpec

from generators.phone.apps import contacts, install_all
from generators.phone.matching import same
from generators.phone.verifier import check_requirement, evaluate
from generators.phone.world import World


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
