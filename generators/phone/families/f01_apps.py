"""F01 variants on the clock, media and shop apps: create exactly one row among others.

A timer (with same-labelled timers around), a playlist with songs in a given order, an
order of one product among look-alike products.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from warehouse.contract import Action, Requirement, TaskSpec

from generators.phone.apps import media, shop
from generators.phone.families.base import Variant, call, finish
from generators.phone.world import World

LABELS = ["Pasta", "Laundry", "Tea", "Parking", "Oven", "Nap", "Eggs", "Call mum"]
PLAYLIST_NAMES = ["Road trip", "Focus", "Sunday chill", "Running", "Dinner party", "Study"]


def _one_added(table: str, fields: dict[str, Any], field_match: dict[str, str] | None = None) -> list[Requirement]:
    """The row was added as asked, and nothing else changed."""
    return [
        Requirement(id="created", kind="state_diff", weight=2.0, description=f"the {table} row is created as asked",
                    params={"table": table, "added": [fields], "field_match": field_match or {}}),
        Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, description="nothing else changed",
                    params={"allow": [{"table": table, "ops": ["added"], "max": 1}]}),
    ]


class SetTimer(Variant):
    name = "set_timer"
    tools = ("timers_start", "timers_list", "timers_cancel", "alarms_create", "alarms_list")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {"minutes": rng.choice([5, 8, 10, 12, 15, 20, 25, 40, 45, 90]), "label": rng.choice(LABELS)}, {
            "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        q = task.public_params
        for n in range(self.level(task, "noise")):  # running timers, the first one with the same label
            label = q["label"] if n == 0 and self.level(task, "decoys") >= 2 else rng.choice(LABELS)
            minutes = rng.choice([m for m in (3, 7, 30, 60) if m != q["minutes"]])
            world.table("timers").insert({"id": world.next_id("tm"), "label": label, "minutes": minutes,
                                          "ends_at": (world.now + timedelta(minutes=minutes)).isoformat()})

    def solve(self, task: TaskSpec) -> list[Action]:
        q = task.public_params
        return [call("timers_start", minutes=q["minutes"], label=q["label"]),
                finish(summary=f"Timer set for {q['minutes']} minutes.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        q = task.public_params
        return [*_one_added("timers", {"minutes": q["minutes"], "label": q["label"]}, {"label": "normalised"}),
                Requirement(id="no_cancel", kind="forbidden", noop_passes=True, description="no running timer is cancelled",
                            params={"tool": "timers_cancel"})]


class BuildPlaylist(Variant):
    name = "build_playlist"
    tools = ("media_search", "playlists_list", "playlists_create", "playlists_add_track", "playlists_remove_track",
             "media_play", "media_set_mode")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        titles = [t for t, _ in rng.sample(media.LIBRARY, 1 + levels["decoys"])]
        songs = ", ".join(f'"{t}"' for t in titles[:-1]) + f' and "{titles[-1]}"'
        return {"name": rng.choice(PLAYLIST_NAMES), "songs": songs}, {"titles": titles, "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        pass  # the library and two playlists are seeded with the media app

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        ids = {r["title"]: k for k, r in world.table("tracks").rows.items()}
        return {"track_ids": [ids[t] for t in task.private_params["titles"]],
                "playlist_id": f"pl-{world.counters.get('pl', 0) + 1:04d}"}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        steps = [call("playlists_create", name=q["name"])]
        for title, track in zip(p["titles"], p["track_ids"], strict=True):
            steps += [call("media_search", query=title),
                      call("playlists_add_track", playlist_id=p["playlist_id"], track_id=track)]
        return [*steps, finish(summary=f"Made {q['name']} with {len(p['titles'])} songs.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        return _one_added("playlists", {"name": task.public_params["name"], "tracks": p["track_ids"]},
                          {"tracks": "exact"})

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # the slip: a song by the same artist, or the next one in the library
        out = [a.model_copy(deep=True) for a in actions]
        add = next(a for a in out if a.tool == "playlists_add_track")
        others = sorted({f"tr-{n:03d}" for n in range(1, len(media.LIBRARY) + 1)} - set(task.private_params["track_ids"]))
        add.arguments["track_id"] = rng.choice(others)
        return out


class OrderProduct(Variant):
    name = "order_product"
    tools = ("shop_search_products", "shop_place_order", "shop_list_orders", "shop_cancel_order", "shop_track_order",
             "wallet_get_balance")
    LOOKALIKES = {"USB-C cable": "USB-C cable 2m", "Phone case": "Phone case (clear)", "Desk lamp": "Desk lamp mini",
                  "Water bottle": "Water bottle 1L", "Notebook A5": "Notebook A4"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        item = rng.choice(sorted(self.LOOKALIKES))
        return {"item": item, "quantity": rng.randint(1, 1 + levels["decoys"])}, {"user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        item = task.public_params["item"]
        lookalikes = [self.LOOKALIKES[item]] + [v for k, v in sorted(self.LOOKALIKES.items()) if k != item]
        for n, name in enumerate(lookalikes[: self.level(task, "decoys")], 1):
            price = dict(shop.CATALOGUE).get(item, 10.0) + 2.5 * n
            world.table("products").insert({"id": f"p-{100 + n:03d}", "name": name, "price": price})

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        rows = world.table("products").rows.values()
        return {"product_id": next(r["id"] for r in rows if r["name"] == task.public_params["item"])}

    def solve(self, task: TaskSpec) -> list[Action]:
        q = task.public_params
        return [call("shop_search_products", query=q["item"]),
                call("shop_place_order", product_id=task.private_params["product_id"], quantity=q["quantity"]),
                finish(summary=f"Ordered {q['quantity']} x {q['item']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        q = task.public_params
        return [*_one_added("orders", {"item": q["item"], "quantity": q["quantity"], "status": "placed"}),
                Requirement(id="no_cancel", kind="forbidden", noop_passes=True, description="no order is cancelled",
                            params={"tool": "shop_cancel_order"})]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # the look-alike product (e.g. the 2 m cable), or one too many
        out = [a.model_copy(deep=True) for a in actions]
        if self.level(task, "decoys") >= 1 and rng.random() < 0.7:
            out[1].arguments["product_id"] = "p-101"
        else:
            out[1].arguments["quantity"] += 1
        return out


VARIANTS = (SetTimer(), BuildPlaylist(), OrderProduct())
