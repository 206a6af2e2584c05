"""F10: pick the right skill, load it before its gated tools, follow it.

The phone lists several skills; only one fits. Its tool is gated: calling it before
``load_skill`` is ``SKILL_NOT_LOADED``. A macro skill runs as one step with its own
sub-trace. Difficulty adds near-duplicate recipients and more items.
"""

from __future__ import annotations

import random
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact
from generators.phone.apps.notes import add_note
from generators.phone.families import noise
from generators.phone.families.base import Family, call, finish
from generators.phone.world import World
from warehouse.contract import Action, Requirement, TaskSpec

VARIANTS = ("group_text", "expense_batch", "focus_macro", "expense_from_note", "group_invite", "focus_timer")
TEXTS = ["Running 10 minutes late, start without me", "Dinner is at 8 tonight", "Meeting moved to room 4B",
         "Happy Friday, drinks at six?", "The parcel arrived, thanks"]
ITEMS = [("groceries", "FreshMart"), ("transport", "taxi"), ("dining", "lunch"), ("health", "pharmacy"),
         ("shopping", "socks"), ("other", "parking")]
GATED = {"group_text": ("group_messaging", "messages_send_bulk"), "group_invite": ("group_messaging", "messages_send_bulk"),
         "expense_batch": ("expense_logging", "expenses_add_batch"),
         "expense_from_note": ("expense_logging", "expenses_add_batch")}
GROUP, EXPENSES, FOCUS = ("group_text", "group_invite"), ("expense_batch", "expense_from_note"), \
    ("focus_macro", "focus_timer")


class SkillUse(Family):
    """Choose a skill among several, load it, then use what it unlocks (or run it)."""

    id = "F10"
    title = "pick the right skill, load it before its gated tools, follow it"
    capability = "skills"
    tags = ("skill_gating",)
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    splits = {"group_text": "train", "expense_batch": "train", "expense_from_note": "train", "focus_macro": "dev",
              "group_invite": "test", "focus_timer": "challenge"}
    tools = ("list_skills", "load_skill", "run_skill", "contacts_search", "messages_send_bulk", "expenses_add",
             "expenses_add_batch", "device_set_do_not_disturb", "device_set_volume", "wallet_list_transactions",
             "notes_search", "notes_get", "calendar_create_event", "timers_start")
    knobs = {"distractors": "2+: near-duplicate recipients; 3: more recipients and items"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        d = levels.get("distractors", 1)
        private: dict[str, Any] = {"variant": variant, "user_facts": {}}
        if variant in GROUP:
            pool = [(f, la) for f in seeddata.FIRST_NAMES for la in seeddata.LAST_NAMES[:10]]
            people = rng.sample(pool, 3 + (d >= 3))
            private["people"] = [list(p) for p in people]
            names = ", ".join(f"{f} {la}" for f, la in people[:-1]) + f" and {people[-1][0]} {people[-1][1]}"
            if variant == "group_invite":
                day, time = f"2026-03-{rng.randint(3, 8):02d}", rng.choice(["12:00", "12:30", "13:00"])
                text = f"Team lunch on {day} at {time}, see you there"
                return {"names": names, "day": day, "time": time}, {**private, "text": text, "day": day, "time": time}
            text = rng.choice(TEXTS)
            return {"names": names, "text": text}, {**private, "text": text}
        if variant in EXPENSES:
            chosen = rng.sample(ITEMS, 3 + (d >= 3))
            items = [{"amount": round(rng.uniform(3, 60), 2), "category": c, "note": n} for c, n in chosen]
            private["items"] = items
            listed = "; ".join(f"{i['amount']:.2f} {i['category']} ({i['note']})" for i in items)
            return ({"items": listed} if variant == "expense_batch" else {}), {**private, "listed": listed}
        level = rng.choice([10, 15, 20, 25, 30])
        minutes = rng.choice([25, 45, 50, 90])
        return {"level": level, "minutes": minutes}, {**private, "level": level, "minutes": minutes}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p, d = task.private_params, self.level(task, "distractors")
        taken = {tuple(x) for x in p.get("people", [])}
        ids = noise.contacts(world, rng, 8, taken)
        for f, la in p.get("people", []):
            add_contact(world, f, la, phone=seeddata.phone_number(rng))
            if d >= 2:  # a same-looking person
                add_contact(world, f, seeddata.NEAR_LAST[la], phone=seeddata.phone_number(rng))
        noise.messages(world, rng, ids, 6)
        if p["variant"] == "expense_from_note":  # the items live in a note, beside an older one already logged
            add_note(world, "Cash spent today", p["listed"])
            add_note(world, "Cash spent last week", "12.00 dining (lunch); 4.50 transport (bus)")

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        rows = world.table("contacts").rows.values()
        ids = [next(r["id"] for r in rows if [r["first_name"], r["last_name"]] == p)
               for p in task.private_params.get("people", [])]
        decoys = [r["id"] for r in rows if r["id"] not in ids
                  and [r["first_name"]] in [[p[0]] for p in task.private_params.get("people", [])]]
        notes = world.table("notes").rows.values() if "notes" in world.tables else []
        note = next((r["id"] for r in notes if r["title"] == "Cash spent today"), "")
        return {"contact_ids": ids, "decoy_ids": decoys, "note_id": note}

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        if p["variant"] in FOCUS:
            timer = [call("timers_start", minutes=p["minutes"], label="Focus")] if p["variant"] == "focus_timer" else []
            return [call("list_skills"), call("run_skill", name="focus_mode", arguments={"level": p["level"]}), *timer,
                    finish(summary=f"Focus mode on, media volume {p['level']}.")]
        skill, _ = GATED[p["variant"]]
        if p["variant"] in GROUP:
            looks = [call("contacts_search", query=f"{f} {la}") for f, la in p["people"]]
            event = [call("calendar_create_event", title="Team lunch", date=p["day"], start=p["time"])] \
                if p["variant"] == "group_invite" else []
            return [call("list_skills"), call("load_skill", name=skill), *event, *looks,
                    call("messages_send_bulk", contact_ids=p["contact_ids"], text=p["text"]),
                    finish(summary="Sent the group text.")]
        read = [call("notes_search", query="Cash spent today"), call("notes_get", note_id=p["note_id"])] \
            if p["variant"] == "expense_from_note" else []
        return [*read, call("list_skills"), call("load_skill", name=skill),
                call("expenses_add_batch", items=p["items"]), finish(summary=f"Logged {len(p['items'])} expenses.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        optimal = len(self.solve(task)) - 1
        efficient = Requirement(id="efficient", kind="efficiency", hard=False, weight=0.5, dimension="skills",
                                noop_passes=True, params={"optimal": optimal, "slack": 3},
                                description="no more calls than the optimal plus three")
        if p["variant"] in FOCUS:
            timer = p["variant"] == "focus_timer"
            return [Requirement(id="focus_on", kind="state_diff", weight=2.0, params={"table": "device", "updated": [
                        {"key": "do_not_disturb", "fields": {"value": True}},
                        {"key": "volume_media", "fields": {"value": p["level"]}}]},
                        description="do-not-disturb on, media volume as asked"),
                    Requirement(id="ran_skill", kind="called", dimension="skills",
                                params={"tool": "run_skill", "arguments": {"name": "focus_mode"}},
                                description="used the focus_mode skill"),
                    *([Requirement(id="timer", kind="state_diff", params={"table": "timers", "added": [
                        {"minutes": p["minutes"]}]}, description="a timer for the focus session"),
                       Requirement(id="focus_then_timer", kind="partial_order", params={"before": [
                           [{"tool": "run_skill"}, {"tool": "timers_start"}]]},
                           description="the session's timer starts once the phone is quiet")] if timer else []),
                    Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={
                        "allow": [{"table": "device", "keys": ["do_not_disturb", "volume_media"]},
                                  *([{"table": "timers", "ops": ["added"], "max": 1}] if timer else [])]},
                        description="no other setting changed"), efficient]
        skill, gated = GATED[p["variant"]]
        event = []
        if p["variant"] == "group_invite":
            event = [Requirement(id="event", kind="state_diff", params={"table": "events", "added": [
                {"title": "Team lunch", "date": p["day"], "start": p["time"]}]}, description="the lunch is in the "
                "calendar"), Requirement(id="booked_then_told", kind="partial_order", params={"before": [
                    [{"tool": "calendar_create_event"}, {"tool": "messages_send_bulk"}]]},
                    description="the lunch was in the calendar before anyone was told")]
        if p["variant"] in GROUP:
            goal = {"table": "messages", "added": [{"contact_id": c, "text": p["text"], "direction": "out"}
                                                   for c in p["contact_ids"]]}
        else:
            goal = {"table": "transactions", "added": [{"amount": -i["amount"], "category": i["category"],
                                                        "kind": "cash"} for i in p["items"]]}
        return [Requirement(id="done", kind="state_diff", weight=2.0, params=goal, description="every item done"),
                *event,
                Requirement(id="skill_gating", kind="skill_gating", dimension="skills",
                            params={"skill": skill, "tools": [gated]},
                            description=f"loaded {skill} before using {gated}"),
                Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={
                    "allow": [{"table": goal["table"], "ops": ["added"], "max": len(goal["added"])},
                              *([{"table": "account"}] if p["variant"] in EXPENSES else []),
                              *([{"table": "events", "ops": ["added"], "max": 1}] if event else [])]},
                    description="only the asked rows added"), efficient]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        p, out = task.private_params, [a.model_copy(deep=True) for a in actions]
        args = out[-2].arguments
        if p["variant"] in FOCUS:
            args = next(a for a in out if a.tool == "run_skill").arguments
            args["arguments"] = {"level": p["level"] + 10}
        elif p["variant"] in GROUP:
            ids = list(args["contact_ids"])
            swap = rng.randrange(len(ids))
            ids[swap] = p["decoy_ids"][0] if p["decoy_ids"] else "c-0001"
            args["contact_ids"] = ids
        else:
            items = [dict(i) for i in args["items"]]
            items[rng.randrange(len(items))]["amount"] += 10
            args["items"] = items
        return out
