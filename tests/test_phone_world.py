"""The world's state hash is canonical; diffs are by key; copies are independent."""

from generators.phone.apps import calendar, contacts, device
from generators.phone.tools import call_tool
from generators.phone.world import World


def build(order: list[tuple[str, str]]) -> World:
    world = World(seed=3)
    device.install(world)
    contacts.install(world)
    calendar.install(world)
    table = world.table("contacts")
    for cid, name in order:
        table.insert({"id": cid, "first_name": name, "last_name": "X", "phone": "1", "email": "", "company": "",
                      "favorite": False, "last_viewed": None, "updated_at": "t"})
    return world


def test_same_state_same_hash_regardless_of_insertion_order():
    a = build([("c-1", "Ann"), ("c-2", "Bob")])
    b = build([("c-2", "Bob"), ("c-1", "Ann")])
    assert a.state_hash() == b.state_hash()


def test_incidental_fields_do_not_change_hash_or_diff():
    world = build([("c-1", "Ann")])
    before, h = world.snapshot(), world.state_hash()
    assert call_tool(world, "contacts_get", {"contact_id": "c-1"})["ok"]  # sets last_viewed
    world.advance(10)
    assert world.state_hash() == h
    assert world.diff(before) == []


def test_changes_change_hash_and_show_in_diff():
    world = build([("c-1", "Ann"), ("c-2", "Bob")])
    before, h = world.snapshot(), world.state_hash()
    call_tool(world, "contacts_update", {"contact_id": "c-1", "phone": "2"})
    call_tool(world, "contacts_delete", {"contact_id": "c-2"})
    call_tool(world, "contacts_create", {"first_name": "Cy", "last_name": "Z", "phone": "3"})
    assert world.state_hash() != h
    ops = {(c["key"], c["op"]) for c in world.diff(before)}
    assert ops == {("c-1", "updated"), ("c-2", "removed"), ("c-0001", "added")}
    updated = next(c for c in world.diff(before) if c["op"] == "updated")
    assert updated["before"]["phone"] == "1" and updated["after"]["phone"] == "2"


def test_copy_is_independent_and_snapshot_is_plain():
    world = build([("c-1", "Ann")])
    twin = world.copy()
    call_tool(twin, "contacts_delete", {"contact_id": "c-1"})
    assert "c-1" in world.table("contacts").rows
    assert twin.state_hash() != world.state_hash()
    assert world.copy().rng.random() == world.rng.random()  # the copy continues the same random stream
    snap = world.snapshot()
    snap["contacts"]["c-1"]["first_name"] = "Changed"
    assert world.table("contacts").rows["c-1"]["first_name"] == "Ann"


def test_clock_advances_per_call_and_log_is_appended():
    world = build([])
    start = world.now
    call_tool(world, "device_get_settings", {})
    call_tool(world, "nope", {})
    assert world.now == start + 2 * world.tick
    assert [e["ok"] for e in world.events] == [True, False]


def test_unordered_lists_compare_as_multisets_and_ordered_lists_by_order():
    from generators.phone.apps import install_all
    from generators.phone.apps.mail import add_mail

    world = World(seed=3)
    install_all(world, seeded=False)
    mail = add_mail(world, "a@b.c", "s", "b", attachments=[{"name": "x", "text": "1"}, {"name": "y", "text": "2"}])
    world.table("playlists").insert({"id": "pl-1", "name": "Road", "tracks": ["tr-1", "tr-2"]})
    before, h = world.snapshot(), world.state_hash()
    mail["attachments"] = list(reversed(mail["attachments"]))
    assert world.diff(before) == [] and world.state_hash() == h
    world.table("playlists").rows["pl-1"]["tracks"] = ["tr-2", "tr-1"]
    assert [c["table"] for c in world.diff(before)] == ["playlists"] and world.state_hash() != h


def test_row_json_is_canonical_json_for_every_value_a_step_encodes():
    """The step encodes rows, call arguments and results with row_json (orjson, json where they could differ); it
    must give canonical_json's text for all of them: hostile values, nesting, non-ASCII, NaN, non-str keys, non-JSON
    objects, subclasses (a plain Enum member is no row value: orjson writes its value), floats json writes with an exponent (orjson writes them otherwise), ints beyond 64 bits,
    text that looks like an exponent, every code point, and random floats of every magnitude."""
    import enum
    import random
    import struct
    from collections import OrderedDict
    from datetime import date, datetime

    from generators.phone.families import FAMILIES
    from generators.phone.world import row_json
    from tests.phone_calls import HOSTILE
    from warehouse.ids import canonical_json

    values = [*HOSTILE, float("nan"), float("inf"), -0.0, 1e300, 2**70, "zürich ☕", "\u2028", {1: "one", 2: "two"},
              {"b": 1, "a": [1, {"d": None}]}, date(2026, 3, 2), ("a", 1), [[], {}, [[]]], True, None]
    values += [a.arguments for family in FAMILIES.values() for a in family.reference_actions(family.make_task(0, 2))]

    class Mode(str, enum.Enum):
        FAST = "fast"

    values += [1e-05, -9.99e-05, 0.0001, 1e16, -1.2345e17, 9999999999999998.0, 5e-324, 1e-4 * 0.999, 2**63, -2**63 - 1,
               {"a": [1e-7, None]}, {"x": None, "y": float("nan")}, [None, -float("inf")], "1e-5 and 2e+3 and 0.00001",
               "null", Mode.FAST, OrderedDict(b=1, a=2), datetime(2026, 3, 2, 9), {"k": (1, 2.5e-9)},
               "".join(chr(c) for c in range(0x20)) + "\x7f\u00e9\U0001f600", "\ud800 lone surrogate"]
    values += ["".join(map(chr, range(lo, min(lo + 4096, 0x110000)))) for lo in range(0, 0x110000, 4096)
               if not 0xD800 <= lo < 0xE000]
    rng = random.Random(12)
    values += [struct.unpack("d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(20000)]
    values += [round(rng.uniform(-1e6, 1e6), rng.randint(0, 8)) for _ in range(20000)]
    for value in values:
        assert row_json(value) == canonical_json(value), value
        assert row_json(["tool", value]) == canonical_json(["tool", value]), value


def _diff_by_definition(name, old, new, skip, table):
    """diff_table spelled out key by key, as it was first written."""
    hits = []
    for key in old.keys() | new.keys():
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if a is None:
            hits.append({"table": name, "key": key, "op": "added", "before": None, "after": b})
        elif b is None:
            hits.append({"table": name, "key": key, "op": "removed", "before": a, "after": None})
        elif table is not None:
            if table.essential(a) != table.essential(b):
                hits.append({"table": name, "key": key, "op": "updated", "before": a, "after": b})
        elif not skip or {k: v for k, v in a.items() if k not in skip} != {k: v for k, v in b.items() if k not in skip}:
            hits.append({"table": name, "key": key, "op": "updated", "before": a, "after": b})
    return sorted(hits, key=lambda c: c["key"])


def test_diff_table_equals_its_definition_over_random_tables():
    """diff_table (rows that differ found in C, each row's change by row_change) gives the key-by-key definition's
    changes: added, removed, updated, incidental-only and reordered unordered lists among unchanged rows."""
    import random

    from generators.phone.world import Table, diff_table

    rng = random.Random(7)
    table = Table("mails", "id", incidental=("read",), unordered=("tags",))
    for _ in range(300):
        old = {f"k{i:02d}": {"id": f"k{i:02d}", "v": rng.randint(0, 2), "read": rng.random() < 0.5,
                             "tags": rng.sample(["a", "b", "c"], rng.randint(0, 3))} for i in rng.sample(range(30), 12)}
        new = {k: dict(r) for k, r in old.items() if rng.random() < 0.9}
        for r in new.values():
            field = rng.choice(["v", "read", "tags", None, None, None])
            if field == "tags":
                r["tags"] = list(reversed(r["tags"])) if rng.random() < 0.5 else r["tags"] + ["d"]
            elif field is not None:
                r[field] = rng.randint(0, 2) if field == "v" else not r["read"]
        new.update({f"n{i}": {"id": f"n{i}", "v": 0, "read": False, "tags": []} for i in range(rng.randint(0, 2))})
        for skip, with_table in (((), None), (("read",), None), (("read",), table)):
            assert diff_table("mails", old, new, skip, with_table) == _diff_by_definition("mails", old, new, skip,
                                                                                            with_table)


def test_fixed_tasks_build_the_worlds_they_always_built():
    """Every family's worlds, as built and after the reference solution, hash as pinned in
    tests/data/world_hashes.json: making the phone faster must not move one row of a recorded
    episode's world (its replay would fail)."""
    import json

    from tests.world_hashes import PATH, world_hashes

    pinned, now = json.loads(PATH.read_text()), world_hashes()
    assert now.keys() == pinned.keys()
    moved = sorted(t for t in now if now[t] != pinned[t])
    assert not moved, f"{len(moved)} tasks' worlds moved, e.g. {moved[:3]}"
