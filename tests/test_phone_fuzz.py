"""Every tool, called with hostile values (NaN, infinities, huge numbers, empty and 10 kB
strings, wrong types, unknown keys), answers with a typed error or a valid result: never an
exception, never an INTERNAL fault, never a world holding a NaN or an unhashable row."""

from __future__ import annotations

import math
from typing import Any

import pytest

from generators.phone.families import get_family
from generators.phone.tools import TOOLS, call_tool
from generators.phone.world import World
from warehouse.ids import canonical_json

HOSTILE: list[Any] = [
    float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 10**30, -(10**30), 0, -1, 0.5,
    "", " ", "x" * 10_240, "\x00", "💥" * 50, "NaN", "Infinity", "2026-02-30", "25:99",
    None, True, [], [float("nan")], {}, {"nested": float("nan")},
]
TYPED = {"INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "NETWORK_UNAVAILABLE", "FAILED_PRECONDITION",
         "POLICY_REQUIRES_CONFIRMATION", "INSUFFICIENT_FUNDS", "UNSUPPORTED_APP", "TIMEOUT", "SKILL_NOT_LOADED",
         "UNKNOWN_TOOL", "ALREADY_EXISTS", "CONFLICT"}


def _world() -> World:
    family = get_family("F06")
    world = family.build_world(family.make_task(5, 3))  # contacts, mail, messages, events, notes, every app seeded
    return world


def _plain(name: str, schema: dict[str, Any]) -> Any:
    """An ordinary value for a parameter, so each call varies one argument at a time."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    low = schema.get("minimum", 1)
    return {"string": "x", "integer": int(low), "number": float(low), "boolean": True, "array": [],
            "object": {}}.get(kind, "x")


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _assert_sound(world: World, reply: Any, where: str) -> None:
    assert isinstance(reply, dict) and set(reply) in ({"ok", "data"}, {"ok", "error"}), where
    if reply["ok"]:
        canonical_json(reply["data"])  # a result is plain JSON
        assert _finite(reply["data"]), where
    else:
        err = reply["error"]
        assert err["code"] in TYPED, (where, err)
        assert len(err["message"]) < 1000, where  # a 10 kB argument is not echoed back whole
    for name, table in world.tables.items():
        for key, row in table.rows.items():
            assert isinstance(key, str) and _finite(row), (where, name, key)
    world.state_hash()


def _calls(name: str):
    props = TOOLS[name].parameters.get("properties", {})
    required = TOOLS[name].parameters.get("required", [])
    base = {k: _plain(k, props[k]) for k in required}
    yield "no arguments", {}
    yield "base", base
    for prop in props:
        for value in HOSTILE:
            yield f"{prop}={value!r:.40}", {**base, prop: value}
    yield "unknown key", {**base, "no_such_argument": 1}
    yield "unknown key only", {"__proto__": {}}
    for bad in (None, [], "text", 3, float("nan")):
        yield f"arguments {bad!r}", bad


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_survives_hostile_arguments(name):
    world = _world()  # one world per tool: damage done by one call would show in the next
    for where, args in _calls(name):
        reply = call_tool(world, name, args)
        _assert_sound(world, reply, f"{name}({where})")


def test_nan_and_infinite_amounts_are_refused_and_the_balance_stays():
    world = _world()
    contact = next(iter(world.table("contacts").rows))
    before = world.table("account").rows["balance"]["value"]
    for amount in (float("nan"), float("inf"), float("-inf")):
        reply = call_tool(world, "wallet_send_money", {"contact_id": contact, "amount": amount})
        assert not reply["ok"] and reply["error"]["code"] == "INVALID_ARGUMENT", reply
        assert "finite" in reply["error"]["message"]
        reply = call_tool(world, "expenses_add", {"amount": amount, "category": "dining"})
        assert not reply["ok"] and reply["error"]["code"] == "INVALID_ARGUMENT", reply
    assert world.table("account").rows["balance"]["value"] == before
    ok = call_tool(world, "wallet_send_money", {"contact_id": contact, "amount": 12.5})
    assert ok["ok"] and world.table("account").rows["balance"]["value"] == round(before - 12.5, 2)
