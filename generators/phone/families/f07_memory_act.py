"""F07: act on what memory says ("my usual order", "the usual time").

The instruction names a habit, never its value: the value lives in memory, among a
friend's record under the same key, the user's own superseded value and a similar key.
The agent must search memory, pick the user's active record, and act with its value.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact
from generators.phone.families import noise
from generators.phone.families.base import Family, call, finish
from generators.phone.families.memory_seed import plant
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

NOISE = {1: 4, 2: 8, 3: 14}
VARIANTS = ("usual_coffee", "usual_alarm", "usual_restaurant", "usual_gym", "usual_playlist", "usual_brightness",
            "usual_cafe")
COFFEES = ["oat flat white", "double espresso", "iced latte", "cortado", "chai latte", "mocha with soy"]
TIMES = ["06:15", "06:45", "07:00", "07:20", "05:50", "07:40"]
RESTAURANTS = ["Noodle Bar", "Cafe Rio", "Trattoria Sole", "Green Curry House", "Taqueria Luna", "Sushi Go"]
GYM_TIMES = ["18:00", "18:30", "07:30", "12:15", "19:00", "06:30"]
PLAYLISTS = ["Deep Focus", "Lo-fi Study", "Rainy Jazz", "Piano Calm", "Forest Sounds", "Night Drive"]
CAFES = ["Corner Beans", "Blue Door Cafe", "Kaffeehaus Mila", "The Roastery", "Bean & Leaf", "Cafe Nord"]
BRIGHTNESS = ["25", "35", "45", "55", "75", "85"]  # never the phone's default (60), so doing nothing fails
SPEC = {  # variant -> (memory type, key, values, the similar key)
    "usual_coffee": ("preference", "coffee order", COFFEES, "coffee beans"),
    "usual_alarm": ("routine", "weekday wake-up time", TIMES, "weekend wake-up time"),
    "usual_restaurant": ("preference", "favourite restaurant", RESTAURANTS, "favourite takeaway"),
    "usual_gym": ("routine", "gym session time", GYM_TIMES, "yoga class time"),
    "usual_playlist": ("preference", "focus playlist", PLAYLISTS, "running playlist"),
    "usual_brightness": ("preference", "reading brightness", BRIGHTNESS, "night brightness"),
    "usual_cafe": ("preference", "favourite cafe", CAFES, "favourite bakery"),
}
PLACES = {"usual_restaurant": ("Dinner at {value}", ["19:00", "19:30", "20:00"]),  # the time comes from the user,
          "usual_cafe": ("Coffee with {friend}", ["08:30", "10:00", "15:30"])}  # the place from memory


class MemoryAct(Family):
    """Look a habit up in memory, pick the user's current value, act with it."""

    id = "F07"
    title = "act on what memory says"
    capability = "memory"
    tags = ("memory_recall",)
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    splits = {"usual_coffee": "train", "usual_alarm": "train", "usual_gym": "train", "usual_cafe": "train",
              "usual_restaurant": "dev",
              "usual_playlist": "test", "usual_brightness": "challenge"}
    tools = ("memory_search", "memory_get", "memory_add", "memory_update", "contacts_search", "messages_send",
             "alarms_create", "alarms_list", "calendar_create_event", "calendar_list_events", "playlists_list",
             "media_play", "device_set_brightness")
    knobs = {"distractors": "1: a friend's record under the same key; 2: + the user's superseded value; "
                            "3: + a similar key", "noise": "rows 4/8/14"}
    revision = 1  # 1: a second train variant (a seed draws from seven variants, not six)

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        mtype, key, values, similar = SPEC[variant]
        value, old, other_value, similar_value = rng.sample(values, 4)
        (f, la), other = rng.choice([(f, la) for f in seeddata.FIRST_NAMES for la in seeddata.LAST_NAMES[:8]]), \
            rng.choice(seeddata.FIRST_NAMES)
        while other == f:
            other = rng.choice(seeddata.FIRST_NAMES)
        day = (DEFAULT_START.date() + timedelta(days=rng.randint(1, 6))).isoformat()
        private = {"variant": variant, "type": mtype, "key": key, "value": value, "old_value": old,
                   "other": other, "other_value": other_value, "similar_key": similar, "similar_value": similar_value,
                   "friend": [f, la], "day": day, "user_facts": {}}
        times = PLACES.get(variant, PLACES["usual_restaurant"])[1]
        public = {"friend": f"{f} {la}", "day": day, "time": rng.choice(times)}
        return public, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p = task.private_params
        plant(world, rng, type=p["type"], key=p["key"], value=p["value"], old_value=p["old_value"], other=p["other"],
              other_value=p["other_value"], similar_key=p["similar_key"], similar_value=p["similar_value"],
              level=self.level(task, "distractors"))
        ids = noise.contacts(world, rng, NOISE[self.level(task, "noise")], {tuple(p["friend"])})
        add_contact(world, *p["friend"], phone=seeddata.phone_number(rng))
        noise.messages(world, rng, ids, NOISE[self.level(task, "noise")])
        noise.events(world, rng, NOISE[self.level(task, "noise")] // 2)
        if p["variant"] == "usual_playlist":  # every remembered name is a playlist, so a wrong pick plays
            for name in (p["value"], p["old_value"], p["other_value"], p["similar_value"]):
                world.table("playlists").insert({"id": world.next_id("pl"), "name": name, "tracks": []})

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        p = task.private_params
        rows = world.table("contacts").rows.values()
        out = {"friend_id": next(r["id"] for r in rows if [r["first_name"], r["last_name"]] == p["friend"])}
        if p["variant"] == "usual_playlist":
            out["playlist_ids"] = {r["name"]: k for k, r in world.table("playlists").rows.items()}
        return out

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        recall = call("memory_search", query=p["key"])
        if p["variant"] == "usual_coffee":
            return [recall, call("contacts_search", query=q["friend"]),
                    call("messages_send", contact_id=p["friend_id"], text=f"My usual coffee order: {p['value']}"),
                    finish(summary=f"Texted {q['friend']} the usual order.")]
        if p["variant"] == "usual_alarm":
            return [recall, call("alarms_create", time=p["value"], label="Wake up"),
                    finish(summary=f"Alarm set for {p['value']}.")]
        if p["variant"] == "usual_gym":
            return [recall, call("calendar_create_event", title="Gym", date=q["day"], start=p["value"]),
                    finish(summary=f"Gym at {p['value']} on {q['day']} is in the calendar.")]
        if p["variant"] == "usual_playlist":
            return [recall, call("playlists_list"), call("media_play", playlist_id=p["playlist_ids"][p["value"]]),
                    finish(summary=f"Playing {p['value']}.")]
        if p["variant"] == "usual_brightness":
            return [recall, call("device_set_brightness", level=int(p["value"])),
                    finish(summary=f"Brightness set to {p['value']}.")]
        title = PLACES[p["variant"]][0].format(value=p["value"], friend=q["friend"])
        where = "" if p["value"] in title else f" at {p['value']}"
        return [recall, call("calendar_create_event", title=title, date=q["day"], start=q["time"], location=p["value"]),
                finish(summary=f"{title}{where} is in the calendar.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p, q = task.private_params, task.public_params
        if p["variant"] == "usual_coffee":
            goal = {"table": "messages", "field_match": {"text": "contains"},
                    "added": [{"contact_id": p["friend_id"], "text": p["value"]}]}
        elif p["variant"] == "usual_alarm":
            goal = {"table": "alarms", "added": [{"time": p["value"]}]}
        elif p["variant"] == "usual_gym":
            goal = {"table": "events", "added": [{"date": q["day"], "start": p["value"]}]}
        elif p["variant"] == "usual_playlist":
            goal = {"table": "player", "updated": [{"key": "player",
                                                    "fields": {"playing": p["playlist_ids"][p["value"]]}}]}
        elif p["variant"] == "usual_brightness":
            goal = {"table": "device", "updated": [{"key": "brightness", "fields": {"value": int(p["value"])}}]}
        else:
            goal = {"table": "events", "added": [{"date": q["day"], "start": q["time"], "location": p["value"]}]}
        ops = ["updated"] if "updated" in goal else ["added"]
        return [
            Requirement(id="acted_on_memory", kind="state_diff", weight=2.0, dimension="memory", params=goal,
                        description="acted with the user's current remembered value"),
            Requirement(id="looked_in_memory", kind="called", dimension="memory", params={"tool": "memory_search"},
                        description="searched memory rather than guessing"),
            Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True,
                        description="one row added (or the one setting changed), memory unchanged",
                        params={"allow": [{"table": goal["table"], "ops": ops, "max": 1}]}),
        ]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # the slips memory invites: the superseded value, or the friend's value under the same key
        p, out = task.private_params, [a.model_copy(deep=True) for a in actions]
        wrong = p["old_value"] if self.level(task, "distractors") >= 2 and rng.random() < 0.5 else p["other_value"]
        args = out[-2].arguments
        if p["variant"] == "usual_playlist":
            args["playlist_id"] = p["playlist_ids"][wrong]
        elif p["variant"] == "usual_brightness":
            args["level"] = int(wrong)
        for k, v in args.items():
            if isinstance(v, str) and p["value"] in v:
                args[k] = v.replace(p["value"], wrong)
        return out
