"""F05: a conflicting, infeasible or ambiguous request: ask or decline, don't act.

Three situations: two or more contacts share the first name the user gave (ask
which one, then act); the event to move does not exist on the day named (decline,
touch nothing, not even the same event on another day); the new event overlaps an
existing one (ask, then book the time the user picks).
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.calendar import add_event
from generators.phone.apps.contacts import add_contact
from generators.phone.families import f05_apps, noise
from generators.phone.families.base import Family, call, finish
from generators.phone.timeparse import WEEKDAYS, resolve_date
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

NOISE = {1: 8, 2: 16, 3: 28}
ASK_WORDS = "conflict|overlap|clash|busy|already|another time|anyway|instead"


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _day(rng: random.Random) -> tuple[str, str]:
    """(argument, phrase) for a day 1-6 days ahead."""
    offset = rng.randint(1, 6)
    name = WEEKDAYS[(DEFAULT_START.weekday() + offset) % 7]
    return ("tomorrow", "tomorrow") if offset == 1 else (name, f"on {name.capitalize()}")


class AskOrDecline(Family):
    """The right move is a question or a refusal before any write."""

    id = "F05"
    title = "conflicting, infeasible or ambiguous request: ask or decline, don't act"
    tags = ("clarification",)
    templates = tuple(f"{v}.{w}" for v in ("ambiguous_contact", "infeasible_move", "conflict_book")
                      for w in ("direct", "casual", "terse"))
    tools = ("contacts_search", "contacts_list", "contacts_get", "messages_send", "messages_list",
             "calendar_list_events", "calendar_create_event", "calendar_update_event", "calendar_delete_event",
             "alarms_list", "device_get_settings", "notes_search", "todos_create")
    splits = {"ambiguous_contact": "train", "conflict_book": "train", "pay_confirm": "train",
              "infeasible_move": "dev", "ambiguous_playlist": "test", "cancel_shipped": "challenge"}
    apart = f05_apps.VARIANTS  # the variants that put other apps to work
    knobs = {"distractors": "same-first-name contacts 2/3/4; same-title events on other days 1/2/3",
             "noise": "rows 8/16/28"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        private: dict[str, Any] = {"variant": variant}
        if variant == "ambiguous_contact":
            first = rng.choice(seeddata.FIRST_NAMES)
            lasts = rng.sample(seeddata.LAST_NAMES, 1 + levels["distractors"])
            private.update(candidates=lasts, target_last=lasts[0],
                           user_facts={f"{first.lower()}|which|who": f"I mean {first} {lasts[0]}."})
            return {"first": first, "text": rng.choice(seeddata.REQUESTS)}, private
        day_arg, phrase = _day(rng)
        title = rng.choice(seeddata.EVENT_TITLES)
        start = rng.randrange(16, 28) * 30  # 08:00 to 13:30
        private.update(day_arg=day_arg, title=title, start_min=start)
        if variant == "infeasible_move":
            private["user_facts"] = {}
            return {"title": title, "day_phrase": phrase, "new_start": _hhmm(start + 120)}, private
        alt = start + 150
        private["user_facts"] = {ASK_WORDS: f"Oh, then make it {_hhmm(alt)} instead."}
        private["alt_start"] = _hhmm(alt)
        return {"title": title, "day_phrase": phrase, "start": _hhmm(start)}, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p, n = task.private_params, NOISE[self.level(task, "noise")]
        if p["variant"] == "ambiguous_contact":
            first = task.public_params["first"]
            taken = {(first, last) for last in p["candidates"]}
            rows = [(first, last) for last in p["candidates"]] + [None] * n
            rng.shuffle(rows)  # the target's id must not give it away
            ids = [add_contact(world, r[0], r[1], phone=seeddata.phone_number(rng))["id"] if r
                   else noise.contacts(world, rng, 1, taken)[0] for r in rows]
            noise.messages(world, rng, ids, n)
            return
        day = resolve_date(p["day_arg"], world.now)
        busy = (p["start_min"] - 60, p["start_min"] + 240)  # keep the asked and the alternative slots clear
        for _ in range(n):
            offset = rng.randint(-1, 7)
            slot = rng.randrange(14, 38) * 30
            title = rng.choice([t for t in seeddata.EVENT_TITLES if t != p["title"]])
            if offset == (day - world.now.date()).days and busy[0] < slot + 60 and slot < busy[1]:
                continue
            add_event(world, title, (world.now.date() + timedelta(days=offset)).isoformat(), _hhmm(slot),
                      _hhmm(slot + 60), rng.choice(seeddata.LOCATIONS))
        if p["variant"] == "infeasible_move":  # the same event on other days: the trap
            others = [o for o in range(-1, 8) if o != (day - world.now.date()).days]
            for offset in rng.sample(others, self.level(task, "distractors")):
                add_event(world, p["title"], (world.now.date() + timedelta(days=offset)).isoformat(),
                          _hhmm(p["start_min"]), _hhmm(p["start_min"] + 60), "")
        else:
            add_event(world, rng.choice([t for t in seeddata.EVENT_TITLES if t != p["title"]]), day.isoformat(),
                      _hhmm(p["start_min"] - 30), _hhmm(p["start_min"] + 30), rng.choice(seeddata.LOCATIONS))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        p = task.private_params
        if p["variant"] == "ambiguous_contact":
            first = task.public_params["first"]
            ids = {r["last_name"]: r["id"] for r in world.table("contacts").rows.values() if r["first_name"] == first
                   and r["last_name"] in p["candidates"]}
            return {"target_id": ids[p["target_last"]],
                    "decoy_ids": [ids[last] for last in p["candidates"] if last != p["target_last"]]}
        day = resolve_date(p["day_arg"], world.now).isoformat()
        events = world.table("events").rows.values()
        if p["variant"] == "infeasible_move":
            return {"decoy_ids": sorted(r["id"] for r in events if r["title"] == p["title"])}
        blocker = next(r for r in events if r["date"] == day and r["start"] == _hhmm(p["start_min"] - 30))
        return {"blocker_id": blocker["id"], "blocker": f"{blocker['title']} at {blocker['start']}"}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        if p["variant"] == "ambiguous_contact":
            names = [f"{q['first']} {last}" for last in sorted(p["candidates"])]
            ask = Action(kind="ask_user", tool="ask_user", arguments={
                "question": f"You have {len(names)} contacts called {q['first']}. Which {q['first']} do you mean?",
                "options": names})
            return [call("contacts_search", query=q["first"]), ask,
                    call("messages_send", contact_id=p["target_id"], text=q["text"]),
                    finish(summary=f"Sent it to {q['first']} {p['target_last']}.")]
        if p["variant"] == "infeasible_move":
            return [call("calendar_list_events", date=p["day_arg"]),
                    call("calendar_list_events", query=q["title"]),
                    finish("infeasible", summary=f"There is no {q['title']} {q['day_phrase']}; I changed nothing.")]
        ask = Action(kind="ask_user", tool="ask_user", arguments={
            "question": f"{q['start']} {q['day_phrase']} would overlap with {p['blocker']}. "
                        "Book it anyway, or pick another time?",
            "options": ["book anyway", "another time"]})
        return [call("calendar_list_events", date=p["day_arg"]), ask,
                call("calendar_create_event", title=q["title"], date=p["day_arg"], start=p["alt_start"],
                     duration_minutes=60),
                finish(summary=f"Booked {q['title']} at {p['alt_start']} instead.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p, q = task.private_params, task.public_params
        if p["variant"] == "infeasible_move":
            return f05_apps.declined("calendar_list_events", "the calendar") + [Requirement(id=f"spare_{d}", kind="forbidden", noop_passes=True,
                             description=f"never move {d}, the same event on another day",
                             params={"tool": "calendar_update_event", "arguments": {"event_id": d}})
                 for d in p["decoy_ids"]]
        if p["variant"] == "ambiguous_contact":
            goal = {"table": "messages", "field_match": {"text": "fuzzy"},
                    "added": [{"contact_id": p["target_id"], "text": q["text"], "direction": "out"}]}
            tool, allow = "messages_send", [{"table": "messages", "ops": ["added"], "max": 1}]
            extra = [Requirement(id=f"not_{d}", kind="forbidden", noop_passes=True,
                                 description=f"never text {d}, the other contact with that name",
                                 params={"tool": "messages_send", "arguments": {"contact_id": d}})
                     for d in p["decoy_ids"]]
        else:
            day = resolve_date(p["day_arg"], DEFAULT_START).isoformat()
            goal = {"table": "events", "field_match": {"title": "fuzzy"},
                    "added": [{"title": q["title"], "date": day, "start": p["alt_start"]}]}
            tool, allow = "calendar_create_event", [{"table": "events", "ops": ["added"], "max": 1}]
            extra = [Requirement(id="blocker_untouched", kind="untouched", noop_passes=True,
                                 description="the existing event stays as it was",
                                 params={"table": "events", "keys": [p["blocker_id"]]})]
        return [
            Requirement(id="goal_done", kind="state_diff", weight=2.0, description="acted on the user's answer",
                        params=goal),
            Requirement(id="asked_first", kind="asked_before", description="asked the user before acting",
                        params={"tool": tool}),
            Requirement(id="no_collateral", kind="allowed_changes", description="nothing else changed",
                        noop_passes=True, params={"allow": allow}),
            *extra,
        ]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        p = task.private_params
        if p["variant"] == "ambiguous_contact":
            return super().wrong_argument(task, actions, rng)  # the other contact of that name
        if p["variant"] == "conflict_book":  # book the time first asked for: a double booking
            out = [a.model_copy(deep=True) for a in actions]
            out[2].arguments["start"] = task.public_params["start"]
            return out
        # the tempting mistake: move the same-titled event found on another day and call it done
        decoy = rng.choice(p["decoy_ids"])
        move = call("calendar_update_event", event_id=decoy, start=task.public_params["new_start"])
        return [*actions[:-1], move, finish(summary="Moved it.")]
