"""The apps and their cross-app rules: network, permissions, pagination, relative dates,
the wallet's confirmation policy, the shop's status policy, timers on the virtual clock."""

from __future__ import annotations

from generators.phone.apps import contacts, device, install_all
from generators.phone.apps.wallet import CONFIRM_ABOVE
from generators.phone.tools import TOOLS, call_tool
from generators.phone.world import World

ELEVEN = {"settings", "contacts", "phone", "messages", "mail", "calendar", "clock", "notes", "files", "wallet",
          "shop", "travel", "media"}


def phone(seed: int = 5, **settings) -> World:
    world = World(seed=seed)
    install_all(world, settings or None)
    return world


def ok(world, tool, **args):
    reply = call_tool(world, tool, args)
    assert reply["ok"], reply
    return reply["data"]


def error(world, name, **args) -> str:
    reply = call_tool(world, name, args)
    assert not reply["ok"], reply
    return reply["error"]["code"]


def test_every_app_has_tools_and_seeded_contents_are_deterministic():
    assert ELEVEN <= {t.app for t in TOOLS.values()}
    assert phone(5).state_hash() == phone(5).state_hash() != phone(6).state_hash()
    world = phone()
    assert ok(world, "files_list", kind="photo")["total"] >= 6
    assert ok(world, "wallet_get_balance")["balance"] > 0
    assert len(ok(world, "shop_list_orders")["items"]) == 3
    assert len(ok(world, "playlists_list")["items"]) == 2


def test_airplane_mode_cuts_every_networked_app():
    world = phone(airplane_mode=True, wifi=False)
    contacts.add_contact(world, "Maria", "Lopez", phone="+1 415-555-0101")
    for name, args in [("mail_send", {"to": "a@b.c", "subject": "s", "body": "b"}),
                       ("shop_search_products", {"query": "cable"}),
                       ("weather_forecast", {"city": "Oslo"}),
                       ("messages_send", {"contact_id": "c-0001", "text": "hi"}),
                       ("wallet_send_money", {"contact_id": "c-0001", "amount": 5})]:
        assert error(world, name, **args) == "NETWORK_UNAVAILABLE", name
    ok(world, "device_set_wifi", enabled=True)  # Wi-Fi back on in flight is enough
    assert ok(world, "weather_forecast", city="Oslo")["city"] == "Oslo"


def test_missing_permissions_are_permission_denied():
    world = World(seed=1)
    install_all(world, denied=("storage", "phone", "sms"))
    assert error(world, "files_list") == "PERMISSION_DENIED"
    assert error(world, "calls_dial", number="+1 415-555-0100") == "PERMISSION_DENIED"
    assert error(world, "messages_list") == "PERMISSION_DENIED"
    ok(world, "device_grant_permission", permission="storage")
    photo = ok(world, "files_list", kind="photo")["items"][0]
    assert "text" in ok(world, "photos_read_text", file_id=photo["id"])


def test_lists_paginate_and_say_when_there_is_more():
    world = phone()
    first = ok(world, "files_list", page_size=3)
    assert len(first["items"]) == 3 and first["has_more"] and first["total"] > 3
    last = ok(world, "files_list", page_size=3, page=(first["total"] + 2) // 3)
    assert not last["has_more"]


def test_relative_dates_resolve_on_the_virtual_clock():
    world = phone()
    row = ok(world, "expenses_add", amount=12.5, category="dining", date="yesterday")
    assert row["date"] == (world.now.date().fromordinal(world.now.date().toordinal() - 1)).isoformat()
    todo = ok(world, "todos_create", title="Call the bank", due="in 3 days")
    assert todo["due"] == world.now.date().fromordinal(world.now.date().toordinal() + 3).isoformat()


def test_wallet_needs_a_confirmation_above_the_threshold():
    world = phone()
    c = contacts.add_contact(world, "Maria", "Lopez", phone="+1 415-555-0101")["id"]
    before = ok(world, "wallet_get_balance")["balance"]
    ok(world, "wallet_send_money", contact_id=c, amount=CONFIRM_ABOVE - 1)
    reply = call_tool(world, "wallet_send_money", {"contact_id": c, "amount": CONFIRM_ABOVE + 1})
    assert reply["error"]["code"] == "POLICY_REQUIRES_CONFIRMATION" and "confirmed=true" in reply["error"]["hint"]
    ok(world, "wallet_send_money", contact_id=c, amount=CONFIRM_ABOVE + 1, confirmed=True)
    assert ok(world, "wallet_get_balance")["balance"] == round(before - 2 * CONFIRM_ABOVE, 2)


def test_shop_orders_follow_their_status_policy():
    world = phone()
    orders = {o["status"]: o["id"] for o in ok(world, "shop_list_orders")["items"]}
    assert error(world, "shop_cancel_order", order_id=orders["shipped"]) == "FAILED_PRECONDITION"
    assert ok(world, "shop_cancel_order", order_id=orders["placed"])["status"] == "cancelled"
    assert ok(world, "shop_return_order", order_id=orders["delivered"])["status"] == "returned"
    new = ok(world, "shop_place_order", product_id="p-001", quantity=2)
    assert new["status"] == "placed" and new["total"] == 19.98


def test_timers_run_on_the_virtual_clock_and_maps_are_deterministic():
    world = phone()
    timer = ok(world, "timers_start", minutes=1)
    assert not timer["done"]
    for _ in range(2):
        world.advance()  # each tool call is 30 virtual seconds
    assert ok(world, "timers_list")["items"][0]["done"]
    a = ok(world, "maps_route", origin="Home", destination="Airport", mode="transit")
    b = ok(phone(), "maps_route", origin="airport", destination="home", mode="transit")
    assert (a["km"], a["minutes"]) == (b["km"], b["minutes"])


def test_media_playlists_are_ordered_and_modes_typed():
    world = phone()
    pl = ok(world, "playlists_create", name="Road trip")["id"]
    ok(world, "playlists_add_track", playlist_id=pl, track_id="tr-002")
    ok(world, "playlists_add_track", playlist_id=pl, track_id="tr-001", position=0)
    assert world.table("playlists").rows[pl]["tracks"] == ["tr-001", "tr-002"]
    assert error(world, "media_set_mode", mode="loop") == "INVALID_ARGUMENT"
    assert ok(world, "media_play", playlist_id=pl)["playing"] == pl
    assert device.setting(world, "flashlight") is False


def test_a_tool_changes_only_the_tables_of_its_own_app():
    """PhoneEnv copies and diffs only the called app's tables; this keeps that honest."""
    from generators.phone.families import FAMILIES
    from generators.phone.gate import mutants
    from tests.test_phone_tools import JUNK

    def check(world, name, args):
        before = world.snapshot()
        world.wide = False
        call_tool(world, name, args)
        changed = {c["table"] for c in world.diff(before)}
        # a macro, a sub-agent or an automation may reach other apps, but must say so (world.wide)
        assert changed <= set(world.app_tables(TOOLS[name].app)) or world.wide, (name, args, changed)

    for family in FAMILIES.values():
        for seed in range(3):
            task = family.make_task(seed, 1 + seed)
            for actions in [family.reference_actions(task), *mutants(family, task).values()]:
                world = family.build_world(task)
                for a in actions:
                    if a.kind == "tool_call":
                        check(world, a.tool, a.arguments)
    world = phone()
    contacts.add_contact(world, "Maria", "Lopez", phone="+1 415-555-0101")
    for name in sorted(TOOLS):
        for args in JUNK:
            check(world, name, args)


def test_env_state_hash_and_delta_match_a_full_recomputation():
    from generators.phone.env import PhoneEnv
    from generators.phone.families import FAMILIES

    for family in FAMILIES.values():
        task = family.make_task(7, 3)
        env = PhoneEnv(task, family)
        env.reset()
        for action in family.reference_actions(task):
            before = env.world.snapshot()
            feedback, _, done = env.step(action)
            assert feedback.state_hash == env.world.state_hash()
            assert feedback.state_delta == env.world.diff(before)
            if done:
                break
