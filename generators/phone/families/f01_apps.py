"""F01 variants on the clock, media and shop apps: create exactly one row among others.

A timer (with same-labelled timers around), a playlist with songs in a given order, an
order of one product among look-alike products.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps import media, shop
from generators.phone.apps.calendar import add_alarm
from generators.phone.apps.contacts import add_contact
from generators.phone.apps.notes import add_todo
from generators.phone.families import f01_chores, noise
from generators.phone.families.base import Variant, call, finish
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

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


def _one_playlist_is(task: TaskSpec, rid: str, description: str) -> list[Requirement]:
    """The playlist holds exactly ``tracks_after`` in order, and no other playlist changed."""
    p = task.private_params
    return [
        Requirement(id=rid, kind="state_diff", weight=2.0, description=description,
                    params={"table": "playlists", "match": "exact",
                            "updated": [{"key": p["playlist_id"], "fields": {"tracks": p["tracks_after"]}}]}),
        Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, description="one playlist",
                    params={"allow": [{"table": "playlists", "keys": [p["playlist_id"]]}]}),
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


class AddAlarm(Variant):
    name = "add_alarm"
    tools = ("alarms_create", "alarms_list", "alarms_update", "alarms_delete", "timers_start")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {"time": f"{rng.randint(5, 9):02d}:{rng.choice(['00', '10', '25', '45'])}",
                "label": rng.choice(["Gym", "Pills", "School run", "Flight", "Standup"])}, {"user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        q = task.public_params
        for n in range(self.level(task, "noise")):  # other alarms; from decoys 2 one with the same label
            label = q["label"] if n == 0 and self.level(task, "decoys") >= 2 else rng.choice(["Wake up", "Bins out"])
            add_alarm(world, f"{rng.randint(10, 22):02d}:00", label)

    def solve(self, task: TaskSpec) -> list[Action]:
        q = task.public_params
        return [call("alarms_create", time=q["time"], label=q["label"]), finish(summary=f"Alarm set for {q['time']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        q = task.public_params
        return [*_one_added("alarms", {"time": q["time"], "label": q["label"]}),
                Requirement(id="no_delete", kind="forbidden", noop_passes=True, description="no alarm is deleted",
                            params={"tool": "alarms_delete"})]


class AddTodo(Variant):
    name = "add_todo"
    tools = ("todos_create", "todos_list", "todos_complete", "notes_create", "calendar_create_event")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        day = (DEFAULT_START.date() + timedelta(days=rng.randint(1, 12))).isoformat()
        return {"title": rng.choice(["Renew passport", "Book dentist", "Pay water bill", "Call plumber",
                                     "Buy birthday card"]), "due": day}, {"user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        for _ in range(2 * self.level(task, "noise")):
            add_todo(world, rng.choice(["Water plants", "Clean fridge", "Backup photos"]),
                     (world.now.date() + timedelta(days=rng.randint(0, 9))).isoformat())

    def solve(self, task: TaskSpec) -> list[Action]:
        q = task.public_params
        return [call("todos_create", title=q["title"], due=q["due"]), finish(summary=f"Added {q['title']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        q = task.public_params
        return _one_added("todos", {"title": q["title"], "due": q["due"], "done": False}, {"title": "fuzzy"})

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # due a day late
        day = date.fromisoformat(task.public_params["due"]) + timedelta(days=1)
        out[0].arguments["due"] = day.isoformat()
        return out


class SendMail(Variant):
    name = "send_mail"
    tools = ("mail_send", "mail_search", "mail_list", "contacts_search", "contacts_get", "messages_send")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        first, last = rng.choice(seeddata.FIRST_NAMES), rng.choice(seeddata.LAST_NAMES)
        subject = rng.choice(["Friday", "Slides", "Invoice", "Dinner", "Keys"])
        return {"name": f"{first} {last}", "subject": subject, "body": rng.choice(seeddata.REQUESTS)}, {
            "first": first, "last": last, "email": seeddata.email_for(first, last, rng), "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p = task.private_params
        taken = {(p["first"], p["last"])}
        noise.contacts(world, rng, 3 * self.level(task, "noise"), taken)
        add_contact(world, p["first"], p["last"], phone=seeddata.phone_number(rng), email=p["email"])
        if self.level(task, "decoys") >= 2:  # a near namesake with another address
            near = seeddata.NEAR_LAST[p["last"]]
            add_contact(world, p["first"], near, email=seeddata.email_for(p["first"], near, rng))

    def solve(self, task: TaskSpec) -> list[Action]:
        q, p = task.public_params, task.private_params
        return [call("contacts_search", query=q["name"]),
                call("mail_send", to=p["email"], subject=q["subject"], body=q["body"]),
                finish(summary=f"Mailed {q['name']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        q, p = task.public_params, task.private_params
        return _one_added("mails", {"to": p["email"], "subject": q["subject"], "body": q["body"]},
                          {"subject": "fuzzy", "body": "fuzzy"})

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # a misspelt address
        local, _, domain = task.private_params["email"].partition("@")
        out[1].arguments["to"] = f"{local}{rng.randint(1, 9)}@{domain}"
        return out


class PlayPlaylist(Variant):
    """Play one of the seeded playlists."""

    name = "play_playlist"
    tools = ("playlists_list", "media_play", "media_pause", "media_set_mode", "media_search")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {"playlist": rng.choice(["Morning mix", "Workout"])}, {"user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        pass  # two playlists are seeded with the media app

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        ids = {r["name"]: k for k, r in world.table("playlists").rows.items()}
        return {"playlist_id": ids[task.public_params["playlist"]],
                "decoy_ids": [k for n, k in ids.items() if n != task.public_params["playlist"]]}

    def solve(self, task: TaskSpec) -> list[Action]:
        return [call("playlists_list"), call("media_play", playlist_id=task.private_params["playlist_id"]),
                finish(summary=f"Playing {task.public_params['playlist']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return _player_is({"playing": task.private_params["playlist_id"]})

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # the other playlist
        out[1].arguments["playlist_id"] = task.private_params["decoy_ids"][0]
        return out


class SetMode(Variant):
    name = "set_mode"
    tools = ("media_set_mode", "media_play", "media_pause", "playlists_list")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        mode = rng.choice(["shuffle", "repeat_one", "repeat_all"])
        return {"mode_phrase": mode.replace("_", " ")}, {"mode": mode, "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        pass  # the player starts in normal mode

    def solve(self, task: TaskSpec) -> list[Action]:
        return [call("media_set_mode", mode=task.private_params["mode"]),
                finish(summary=f"Mode: {task.public_params['mode_phrase']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return _player_is({"mode": task.private_params["mode"]})

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # repeat one for repeat all, and so on
        out[0].arguments["mode"] = rng.choice([m for m in media.MODES[1:] if m != task.private_params["mode"]])
        return out


def _player_is(fields: dict[str, Any]) -> list[Requirement]:
    return [
        Requirement(id="player", kind="state_diff", weight=2.0, description="the player is as asked",
                    params={"table": "player", "match": "exact", "updated": [{"key": "player", "fields": fields}]}),
        Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, description="only the player",
                    params={"allow": [{"table": "player"}]}),
    ]


class PauseMusic(Variant):
    name = "pause_music"
    tools = ("media_pause", "media_play", "media_set_mode", "playlists_list", "device_set_volume")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {}, {"user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        player = world.table("player").rows["player"]
        player.update(playing=rng.choice(sorted(world.table("playlists").rows)), mode=rng.choice(media.MODES))

    def solve(self, task: TaskSpec) -> list[Action]:
        return [call("media_pause"), finish(summary="Music stopped.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return [
            *_player_is({"playing": None}),
            Requirement(id="no_volume", kind="forbidden", noop_passes=True, description="muting is not stopping",
                        params={"tool": "device_set_volume"}),
        ]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        return [call("device_set_volume", stream="media", level=0), actions[-1]]  # muted, still playing


class RemoveSong(Variant):
    name = "remove_song"
    tools = ("playlists_list", "playlists_remove_track", "playlists_add_track", "media_search")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {"playlist": rng.choice(["Morning mix", "Workout"]), "song": rng.choice(media.LIBRARY)[0]}, {
            "pick": rng.randrange(4), "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        q = task.public_params  # the song goes into the seeded playlist at a seeded place
        row = next(r for r in world.table("playlists").rows.values() if r["name"] == q["playlist"])
        track = next(k for k, r in world.table("tracks").rows.items() if r["title"] == q["song"])
        tracks = [t for t in row["tracks"] if t != track]
        tracks.insert(task.private_params["pick"], track)
        row["tracks"] = tracks

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        q = task.public_params
        row = next(r for r in world.table("playlists").rows.values() if r["name"] == q["playlist"])
        track = next(k for k, r in world.table("tracks").rows.items() if r["title"] == q["song"])
        others = [t for t in row["tracks"] if t != track]
        return {"playlist_id": row["id"], "track_id": track, "tracks_after": others, "others": others}

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        return [call("playlists_list"), call("playlists_remove_track", playlist_id=p["playlist_id"],
                                             track_id=p["track_id"]), finish(summary=f"Removed {task.public_params['song']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return _one_playlist_is(task, "removed", "only that song left the playlist")

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # the song next to it
        out[1].arguments["track_id"] = rng.choice(task.private_params["others"])
        return out


class AddSong(Variant):
    """Add one song to the end of a seeded playlist (the song is not in it yet)."""

    name = "add_song"
    tools = ("playlists_list", "media_search", "playlists_add_track", "playlists_remove_track", "playlists_create")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {"playlist": rng.choice(["Morning mix", "Workout"]), "song": rng.choice(media.LIBRARY)[0]}, {
            "user_facts": {}}

    def _rows(self, task: TaskSpec, world: World) -> tuple[dict[str, Any], str]:
        q = task.public_params
        row = next(r for r in world.table("playlists").rows.values() if r["name"] == q["playlist"])
        return row, next(k for k, r in world.table("tracks").rows.items() if r["title"] == q["song"])

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        row, track = self._rows(task, world)  # the seeded playlist may hold the song already: not any more
        row["tracks"] = [t for t in row["tracks"] if t != track]

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        row, track = self._rows(task, world)
        others = [k for k in world.table("tracks").rows if k != track and k not in row["tracks"]]
        return {"playlist_id": row["id"], "track_id": track, "tracks_after": [*row["tracks"], track], "others": others}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        return [call("playlists_list"), call("media_search", query=q["song"]),
                call("playlists_add_track", playlist_id=p["playlist_id"], track_id=p["track_id"]),
                finish(summary=f"Added {q['song']} to {q['playlist']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return _one_playlist_is(task, "added", "the song is at the end of the playlist")

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # another song of the library, not yet in the playlist
        out[2].arguments["track_id"] = rng.choice(task.private_params["others"])
        return out


class NewPlaylist(Variant):
    """Create one empty playlist."""

    name = "new_playlist"
    tools = ("playlists_create", "playlists_list", "playlists_add_track", "media_play")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {"name": rng.choice(PLAYLIST_NAMES)}, {"user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        pass  # the library and two playlists are seeded with the media app

    def solve(self, task: TaskSpec) -> list[Action]:
        name = task.public_params["name"]
        return [call("playlists_create", name=name), finish(summary=f"Made an empty playlist, {name}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return _one_added("playlists", {"name": task.public_params["name"], "tracks": []}, {"name": "normalised"})


VARIANTS = (SetTimer(), BuildPlaylist(), OrderProduct(), AddAlarm(), AddTodo(), SendMail(), PlayPlaylist(),
            SetMode(), PauseMusic(), RemoveSong(), *f01_chores.VARIANTS, AddSong(), NewPlaylist())
