"""Tools never raise: every bad call comes back as a typed error with a hint."""

import random

import pytest

from generators.phone.apps import calendar, contacts, install_all
from generators.phone.arguments import _argument_problem, arguments_pass, check_arguments
from generators.phone.tools import META_SCHEMAS, TOOLS, call_tool, openai_tool_schemas
from generators.phone.world import World

JUNK = [None, [], "text", 3, {"no_such_arg": 1}, {"contact_id": 5}, {"enabled": "yes"}, {"level": 500},
        {"date": "someday", "start": "25:99", "title": "x"}, {"query": ""}, {"time": "9"}]


def fresh_world() -> World:
    world = World(seed=1)
    install_all(world)
    contacts.add_contact(world, "Maria", "Lopez", phone="+1 415-555-0101")
    calendar.add_event(world, "Dentist", "2026-03-03", "10:00", "11:00")
    calendar.add_alarm(world, "07:00")
    return world


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_tool_never_raises_on_bad_arguments(name):
    world = fresh_world()
    for args in JUNK:
        reply = call_tool(world, name, args)
        assert set(reply) in ({"ok", "data"}, {"ok", "error"})
        if not reply["ok"]:
            assert set(reply["error"]) == {"code", "message", "retryable", "hint"}
            assert reply["error"]["code"] != "INTERNAL", reply


def test_bad_arguments_give_invalid_argument_with_hint():
    world = fresh_world()
    bad = ({"first_name": "A"}, {"first_name": 1, "last_name": "B"}, {"first_name": "A", "last_name": "B", "x": 1})
    for args in bad:
        reply = call_tool(world, "contacts_create", args)
        assert reply["error"]["code"] == "INVALID_ARGUMENT"
        assert "contacts_create(" in reply["error"]["hint"]


def test_unknown_tool_and_unexposed_tool():
    world = fresh_world()
    assert call_tool(world, "contacts_serch", {})["error"]["code"] == "UNKNOWN_TOOL"
    assert "contacts_search" in call_tool(world, "contacts_serch", {})["error"]["hint"]
    reply = call_tool(world, "contacts_delete", {"contact_id": "c-0001"}, allowed=["contacts_search"])
    assert reply["error"]["code"] == "UNKNOWN_TOOL"
    assert "c-0001" in world.table("contacts").rows


def test_typed_errors():
    world = fresh_world()
    assert call_tool(world, "contacts_get", {"contact_id": "c-9"})["error"]["code"] == "NOT_FOUND"
    world.table("permissions").rows["contacts"]["granted"] = False
    assert call_tool(world, "contacts_list", {})["error"]["code"] == "PERMISSION_DENIED"
    assert call_tool(world, "device_set_airplane_mode", {"enabled": True})["ok"]
    world.table("permissions").rows["contacts"]["granted"] = True
    reply = call_tool(world, "contacts_sync", {})
    assert reply["error"]["code"] == "NETWORK_UNAVAILABLE" and reply["error"]["retryable"]


def test_airplane_mode_cuts_radios():
    world = fresh_world()
    call_tool(world, "device_set_bluetooth", {"enabled": True})
    call_tool(world, "device_set_airplane_mode", {"enabled": True})
    settings = call_tool(world, "device_get_settings", {})["data"]
    assert settings["wifi"] is False and settings["bluetooth"] is False
    assert call_tool(world, "device_check_connectivity", {})["data"]["online"] is False


def test_relative_dates_resolve_on_virtual_clock():
    world = fresh_world()  # Monday 2026-03-02
    made = call_tool(world, "calendar_create_event", {"title": "Gym", "date": "tomorrow", "start": "6:30 pm"})
    assert made["data"]["date"] == "2026-03-03" and made["data"]["start"] == "18:30"
    listed = call_tool(world, "calendar_list_events", {"date": "tuesday"})["data"]
    assert listed["total"] == 2
    friday = call_tool(world, "calendar_create_event", {"title": "x", "date": "friday", "start": "09:00"})
    assert friday["data"]["date"] == "2026-03-06"


def test_pagination():
    world = fresh_world()
    for i in range(12):
        contacts.add_contact(world, f"Person{i}", "Acme", phone=f"+1 212-555-01{i:02d}")
    page1 = call_tool(world, "contacts_search", {"query": "acme"})["data"]
    page2 = call_tool(world, "contacts_search", {"query": "acme", "page": 2})["data"]
    assert page1["total"] == 12 and page1["has_more"] and len(page1["items"]) == 10
    assert len(page2["items"]) == 2 and not page2["has_more"]


def test_openai_schemas_include_finish_and_ask_user():
    schemas = openai_tool_schemas(["contacts_search", "device_set_wifi"])
    names = [s["function"]["name"] for s in schemas]
    assert names == ["contacts_search", "device_set_wifi", "finish", "ask_user"]
    for s in schemas:
        assert s["type"] == "function"
        assert set(s["function"]) == {"name", "description", "parameters"}
        assert s["function"]["parameters"]["type"] == "object"


def test_tool_of_an_uninstalled_app_is_unsupported_app():
    world = World(seed=1)
    contacts.install(world)
    reply = call_tool(world, "mail_list", {})
    assert reply["error"]["code"] == "UNSUPPORTED_APP" and "mail" in reply["error"]["message"]


VALUES = [None, True, False, 0, 1, -1, 3, 500, 2.5, 1.0, float("nan"), float("inf"), "", "x", "shuffle", "ring",
          [], ["a"], [1], {}, {"fact": "x"}]


@pytest.mark.parametrize("name", sorted(TOOLS) + sorted(META_SCHEMAS))
def test_compiled_argument_checks_agree_with_the_full_check(name):
    """The compiled fast path passes a call only when the full check finds nothing wrong, and every call
    (fast or not) gets exactly the full check's problem."""
    parameters = TOOLS[name].parameters if name in TOOLS else META_SCHEMAS[name]["parameters"]
    props, required = parameters["properties"], parameters.get("required", [])
    rng = random.Random(name)
    for _ in range(300):
        args = {k: rng.choice(VALUES) for k in props if k in required or rng.random() < 0.5}
        if args and rng.random() < 0.05:
            del args[rng.choice(sorted(args))]
        if rng.random() < 0.03:
            args["no_such_argument"] = 1
        full = _argument_problem(name, props, required, args)
        if arguments_pass(name, parameters, args):
            assert full is None, (args, full)
        problem = check_arguments(name, parameters, args)
        assert (problem[0] if problem else None) == full, args
