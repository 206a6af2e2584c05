"""F04 variants on the calls, shop and files apps: the obstacle is found by trying.

Calling back a missed caller without the phone permission; undoing an order whose
status decides between cancel and return (only placed orders cancel); reading a photo's
text without the storage permission.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone.apps import files, shop
from generators.phone.families.base import Variant, call, finish
from generators.phone.families.f02_apps import latest_missed, seed_missed_calls
from generators.phone.families.mutants import set_answer, with_wrong_argument_in_last_write
from generators.phone.world import World
from warehouse.contract import Action, Requirement, TaskSpec


def _granted(permission: str) -> Requirement:
    return Requirement(id=f"{permission}_granted", kind="state_diff", description=f"prerequisite fixed: {permission}",
                       params={"table": "permissions", "match": "exact",
                               "updated": [{"key": permission, "fields": {"granted": True}}]})


def _timeout(tool: str, levels: dict[str, int]) -> list[dict[str, Any]]:
    """From faults level 2, the service times out once."""
    return [{"tool": tool, "code": "TIMEOUT", "times": 1}] if levels["faults"] >= 2 else []


class CallBack(Variant):
    name = "call_back"
    tools = ("calls_list", "calls_dial", "contacts_search", "device_get_settings", "device_grant_permission",
             "messages_send")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {}, {"denied_permissions": ["phone"], "faults": _timeout("calls_dial", levels), "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        seed_missed_calls(world, rng, self.level(task, "noise"))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        return {"number": latest_missed(world)[0]}

    def solve(self, task: TaskSpec) -> list[Action]:
        dial = call("calls_dial", number=task.private_params["number"])
        retry = [dial] if task.faults else []
        return [call("calls_list", missed_only=True), dial, call("device_grant_permission", permission="phone"), dial,
                *retry, finish(summary="Calling them back now.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return [
            Requirement(id="goal_done", kind="state_diff", weight=2.0, description="the missed caller is called back",
                        params={"table": "call_log", "added": [{"number": task.private_params["number"],
                                                                "direction": "out"}]}),
            _granted("phone"),
            Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True,
                        description="only the permission and one call", params={"allow": [
                            {"table": "call_log", "ops": ["added"], "max": 1},
                            {"table": "permissions", "keys": ["phone"]}]}),
        ]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        return with_wrong_argument_in_last_write(task, actions, rng, prefer=("number",))


class CancelOrReturn(Variant):
    name = "cancel_or_return"
    tools = ("shop_list_orders", "shop_track_order", "shop_cancel_order", "shop_return_order", "shop_place_order",
             "shop_search_products")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        item, _ = rng.choice(shop.CATALOGUE)
        status = rng.choice(["placed", "delivered"])
        tool = "shop_cancel_order" if status == "placed" else "shop_return_order"
        return {"item": item}, {"status": status, "tool": tool, "faults": _timeout(tool, levels), "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        item, p = task.public_params["item"], task.private_params
        others = [(n, price) for n, price in shop.CATALOGUE if n != item]
        for row in world.table("orders").rows.values():  # seeded orders of the same item would make it ambiguous
            if row["item"] == item:
                row["item"] = rng.choice(others)[0]
        orders = [(item, dict(shop.CATALOGUE)[item], p["status"], rng.randint(1, 6))]
        for n in range(self.level(task, "noise") + rng.randint(0, 3)):  # other undoable orders, the first like the target
            name, other_price = rng.choice(others)
            orders.append((name, other_price, p["status"] if n == 0 else rng.choice(["placed", "delivered"]),
                           rng.randint(1, 20)))
        rng.shuffle(orders)  # the target's id says nothing
        for name, price, status, days in orders:
            shop.add_order(world, name, price, 1, status, (world.now - timedelta(days=days)).date().isoformat())

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        rows = world.table("orders").rows.values()
        target = next(r["id"] for r in rows if r["item"] == task.public_params["item"])
        return {"order_id": target, "decoy_ids": sorted(r["id"] for r in rows if r["id"] != target
                                                         and r["status"] in ("placed", "delivered")),
                "alike_ids": sorted(r["id"] for r in rows if r["id"] != target
                                    and r["status"] == task.private_params["status"])}

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        act = call(p["tool"], order_id=p["order_id"])
        return [call("shop_list_orders", query=task.public_params["item"]), act, *([act] if task.faults else []),
                finish(summary=f"{'Cancelled' if p['status'] == 'placed' else 'Returned'} the {task.public_params['item']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        after = "cancelled" if p["status"] == "placed" else "returned"
        return [
            Requirement(id="goal_done", kind="state_diff", weight=2.0, description=f"the order is {after}",
                        params={"table": "orders", "match": "exact",
                                "updated": [{"key": p["order_id"], "fields": {"status": after}}]}),
            Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, description="no other order changed",
                        params={"allow": [{"table": "orders", "keys": [p["order_id"]], "ops": ["updated"]}]}),
        ] + [Requirement(id=f"spare_{d}", kind="forbidden", noop_passes=True, description=f"never undo order {d}",
                         params={"tool": tool, "arguments": {"order_id": d}})
             for d in p["decoy_ids"] for tool in ("shop_cancel_order", "shop_return_order")]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # another order, still undoable: the mix-up
        for a in out:
            if a.tool == task.private_params["tool"]:
                a.arguments["order_id"] = rng.choice(task.private_params["alike_ids"])
        return out


class PhotoText(Variant):
    name = "photo_text"
    tools = ("files_search", "files_list", "photos_read_text", "files_move", "files_delete", "device_get_settings",
             "device_grant_permission", "notes_create")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        password, old = (f"{rng.choice(['sunflower', 'maple', 'otter', 'copper'])}{rng.randint(10, 99)}"
                         for _ in range(2))
        # the camera is off limits too: granting it instead of storage is the tempting slip
        return {}, {"password": password, "old_password": old, "denied_permissions": ["storage", "camera"],
                    "faults": _timeout("photos_read_text", levels), "answer_type": "str", "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p, table = task.private_params, world.table("files")
        for key in [k for k, r in table.rows.items() if r["name"].startswith("wifi_")]:
            del table.rows[key]  # seeded router photos would hold other passwords
        stamp = (world.now - timedelta(hours=rng.randint(1, 6))).isoformat(timespec="minutes")
        if self.level(task, "noise") >= 2:  # an older photo of the old label: the newest wins
            old_at = (world.now - timedelta(days=rng.randint(20, 60))).isoformat(timespec="minutes")
            files.add_file(world, f"wifi_{rng.randint(100, 499)}.jpg", "Camera", "photo",
                           f"Network: Home5G  Password: {p['old_password']}", old_at)
        files.add_file(world, f"wifi_{rng.randint(500, 999)}.jpg", "Camera", "photo",
                       f"Network: Home5G  Password: {p['password']}", stamp)

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        rows = [r for r in world.table("files").rows.values() if r["name"].startswith("wifi_")]
        return {"file_id": max(rows, key=lambda r: r["created_at"])["id"]}

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        read = call("photos_read_text", file_id=p["file_id"])
        search = call("files_search", query="wifi")
        return [search, call("device_grant_permission", permission="storage"), search, read,
                *([read] if task.faults else []),
                finish(answer=p["password"], summary=f"The password is {p['password']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return [
            Requirement(id="answer", kind="answer", weight=2.0, description="the password from the newest photo",
                        params={"expected": task.private_params["password"], "type": "str"}),
            _granted("storage"),
            Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True,
                        description="only the permission changed",
                        params={"allow": [{"table": "permissions", "keys": ["storage"]}]}),
        ]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # the wrong permission (the camera, for a photo), and so the old label's password or a misread one
        out = [a.model_copy(deep=True) for a in actions]
        p = task.private_params
        out[1].arguments["permission"] = "camera"
        misread = p["password"][:-1] + ("1" if p["password"].endswith("0") else "0")
        set_answer(out[-1], p["old_password"] if self.level(task, "noise") >= 2 else misread)
        return out


VARIANTS = (CallBack(), CancelOrReturn(), PhotoText())
