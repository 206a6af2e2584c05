"""F13: a long errand across apps, memory, a skill and a sub-agent.

Gatherings (dinner, brunch, a film): the place comes from memory, the event goes in
the calendar, both guests get one group text (a gated skill), and the automation
agent quiets the phone when it starts. Pay backs (lunch, a taxi, the groceries): the
person comes from memory, the total from the newest receipt photo (the vision agent),
the user's share is logged with the expense skill, then that person is paid back half.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact
from generators.phone.apps.files import add_file
from generators.phone.families import noise
from generators.phone.families.base import Family, call, finish
from generators.phone.families.memory_seed import plant
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

RESTAURANTS = ["Noodle Bar", "Cafe Rio", "Trattoria Sole", "Green Curry House", "Taqueria Luna", "Sushi Go"]
BRUNCH = ["Sunny Side", "The Egg Shed", "Porch Cafe", "Toast & Co", "Morning Glory", "Honey Pot"]
CINEMAS = ["Rex Cinema", "Odeon Park", "Lumiere", "Starlight Screens", "The Picture House", "Cine Nova"]
# gathering -> (memory key, similar key, places, event title, the automation's tool and arguments)
GATHERINGS: dict[str, tuple[str, str, list[str], str, str, dict[str, Any]]] = {
    "dinner": ("favourite restaurant", "favourite takeaway", RESTAURANTS, "Dinner", "device_set_do_not_disturb",
               {"enabled": True}),
    "brunch": ("favourite brunch place", "favourite bakery", BRUNCH, "Brunch", "device_set_volume",
               {"stream": "ring", "level": 0}),
    "movie_night": ("favourite cinema", "favourite theatre", CINEMAS, "Film", "device_set_do_not_disturb",
                    {"enabled": True}),
}
# pay back -> (memory key, similar key, expense category, the receipt's merchant, an older receipt's merchant)
PAY_BACKS: dict[str, tuple[str, str, str, str, str]] = {
    "pay_back": ("lunch buddy", "gym buddy", "dining", "NOODLE BAR", "CAFE RIO"),
    "taxi_share": ("commute buddy", "running buddy", "transport", "CITYCAB", "METRO"),
    "groceries_share": ("flatmate", "landlord", "groceries", "FRESHMART", "GREEN GROCER"),
}
VARIANTS = (*GATHERINGS, *PAY_BACKS)


class Errand(Family):
    """Memory, a gated skill and a sub-agent in one errand of about ten steps."""

    id = "F13"
    title = "long-horizon errand across apps, memory, a skill and a sub-agent"
    capability = "all"
    tags = ("memory_recall", "skill_gating", "delegation", "long_horizon")
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    splits = {"dinner": "train", "brunch": "train", "taxi_share": "train", "pay_back": "dev", "movie_night": "test",
              "groceries_share": "challenge"}
    tools = ("memory_search", "contacts_search", "calendar_create_event", "load_skill", "messages_send_bulk",
             "start_subagent", "run_subagent", "files_list", "expenses_add_batch", "wallet_send_money",
             "device_set_volume", "device_set_do_not_disturb")
    hidden_tools = ("photos_read_text",)
    knobs = {"distractors": "memory distractors (a friend's record, a superseded value, a similar key)"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        people = rng.sample([(f, la) for f in seeddata.FIRST_NAMES for la in seeddata.LAST_NAMES[:8]], 3)
        private: dict[str, Any] = {"variant": variant, "user_facts": {}, "people": [list(p) for p in people],
                                   "other": rng.choice(seeddata.FIRST_NAMES)}
        if variant in GATHERINGS:
            value, old, other_value, similar = rng.sample(GATHERINGS[variant][2], 4)
            day = (DEFAULT_START.date() + timedelta(days=rng.randint(1, 5))).isoformat()
            time = rng.choice(["19:00", "19:30", "20:00"])
            private.update(value=value, old_value=old, other_value=other_value, similar_value=similar, day=day,
                           time=time)
            (f1, l1), (f2, l2) = people[:2]
            return {"guests": f"{f1} {l1} and {f2} {l2}", "day": day, "time": time}, private
        (f, la), old, other = people[0], people[1], people[2]
        total = round(rng.uniform(20, 80), 2)
        private.update(value=f"{f} {la}", old_value=f"{old[0]} {old[1]}", other_value=f"{other[0]} {other[1]}",
                       similar_value="Tom Baker", total=total, share=round(total / 2, 2))
        return {}, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p = task.private_params
        gathering = p["variant"] in GATHERINGS
        key, similar = (GATHERINGS if gathering else PAY_BACKS)[p["variant"]][:2]
        plant(world, rng, type="preference" if gathering else "relationship", key=key, value=p["value"],
              old_value=p["old_value"], other=p["other"], other_value=p["other_value"], similar_key=similar,
              similar_value=p["similar_value"], level=self.level(task, "distractors"))
        ids = noise.contacts(world, rng, 8, {tuple(x) for x in p["people"]})
        for f, la in p["people"]:
            add_contact(world, f, la, phone=seeddata.phone_number(rng))
        noise.messages(world, rng, ids, 6)
        noise.events(world, rng, 4)
        if not gathering:
            _, _, _, merchant, older = PAY_BACKS[p["variant"]]
            add_file(world, "receipt_old.jpg", "Camera", "photo", f"{older}  Total {p['total'] + 7:.2f}",
                     at=(world.now - timedelta(days=2)).isoformat(timespec="minutes"))
            add_file(world, "receipt_lunch.jpg", "Camera", "photo", f"{merchant}  Total {p['total']:.2f}",
                     at=(world.now - timedelta(minutes=2)).isoformat(timespec="minutes"))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        rows = world.table("contacts").rows.values()
        ids = [next(r["id"] for r in rows if [r["first_name"], r["last_name"]] == p)
               for p in task.private_params["people"]]
        photo = next((r["id"] for r in world.table("files").rows.values() if r["name"] == "receipt_lunch.jpg"), "")
        return {"contact_ids": ids, "photo_id": photo}

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        if p["variant"] in GATHERINGS:
            key, _, _, title, tool, arguments = GATHERINGS[p["variant"]]
            (f1, l1), (f2, l2) = p["people"][:2]
            text = f"{title} at {p['value']} on {p['day']} at {p['time']}!"
            return [call("memory_search", query=key),
                    call("calendar_create_event", title=f"{title} with {f1} and {f2}", date=p["day"], start=p["time"],
                         location=p["value"]),
                    call("contacts_search", query=f"{f1} {l1}"), call("contacts_search", query=f"{f2} {l2}"),
                    call("load_skill", name="group_messaging"),
                    call("messages_send_bulk", contact_ids=p["contact_ids"][:2], text=text),
                    call("start_subagent", agent="automation", instruction=f"Quiet the phone when {title.lower()} "
                         "starts.", inputs={"at": f"{p['day']}T{p['time']}", "tool": tool, "arguments": arguments}),
                    call("run_subagent", session_id="sa-0001"), finish(summary=f"{title} is organised.")]
        key, _, category, _, _ = PAY_BACKS[p["variant"]]
        return [call("memory_search", query=key), call("contacts_search", query=p["value"]),
                call("files_list", kind="photo"),
                call("start_subagent", agent="vision", instruction="Read the receipt's total.",
                     inputs={"file_id": p["photo_id"]}),
                call("run_subagent", session_id="sa-0001"), call("load_skill", name="expense_logging"),
                call("expenses_add_batch", items=[{"amount": p["share"], "category": category, "note": "my half"}]),
                call("wallet_send_money", contact_id=p["contact_ids"][0], amount=p["share"], note="my half"),
                finish(summary=f"Logged my half and paid {p['value']} back {p['share']:.2f}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        recall = Requirement(id="recalled", kind="called", dimension="memory", params={"tool": "memory_search"},
                             description="looked the habit up in memory")
        efficient = Requirement(id="efficient", kind="efficiency", hard=False, weight=0.5, noop_passes=True,
                                params={"optimal": len(self.solve(task)) - 1, "slack": 3},
                                description="no more calls than the optimal plus three")
        if p["variant"] in GATHERINGS:
            _, _, _, title, tool, arguments = GATHERINGS[p["variant"]]
            at = f"{p['day']}T{p['time']}"
            return [
                Requirement(id="event", kind="state_diff", weight=1.5, params={"table": "events", "added": [
                    {"date": p["day"], "start": p["time"], "location": p["value"]}]},
                    description="the gathering at the remembered place is in the calendar"),
                Requirement(id="guests_texted", kind="state_diff", params={
                    "table": "messages", "field_match": {"text": "contains"},
                    "added": [{"contact_id": c, "text": p["value"]} for c in p["contact_ids"][:2]]},
                    description="both guests got the plan"),
                Requirement(id="skill_gating", kind="skill_gating", dimension="skills", params={
                    "skill": "group_messaging", "tools": ["messages_send_bulk"]},
                    description="the skill was loaded first"),
                Requirement(id="handoff", kind="handoff", dimension="subagents", params={
                    "agent": "automation", "inputs": {"tool": tool, "arguments": arguments}},
                    description="the automation agent got the switch"),
                Requirement(id="scheduled", kind="state_diff", params={"table": "automations", "added": [
                    {"at": at, "tool": tool, "status": "scheduled"}]},
                    description="the phone goes quiet when it starts"),
                recall, efficient,
                Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={"allow": [
                    {"table": "events", "ops": ["added"], "max": 1}, {"table": "messages", "ops": ["added"], "max": 2},
                    {"table": "agent_sessions", "ops": ["added"], "max": 1},
                    {"table": "automations", "ops": ["added"], "max": 1}]}, description="nothing else changed")]
        category = PAY_BACKS[p["variant"]][2]
        return [
            Requirement(id="handoff", kind="handoff", dimension="subagents", params={
                "agent": "vision", "inputs": {"file_id": p["photo_id"]}, "after": "files_list"},
                description="the vision agent read the newest receipt"),
            Requirement(id="share_logged", kind="state_diff", params={"table": "transactions", "added": [
                {"amount": -p["share"], "category": category, "kind": "cash"}]}, description="my half is logged"),
            Requirement(id="paid_back", kind="state_diff", weight=1.5, params={"table": "transactions", "added": [
                {"amount": -p["share"], "kind": "transfer", "merchant": p["contact_ids"][0]}]},
                description="the remembered person got half"),
            Requirement(id="skill_gating", kind="skill_gating", dimension="skills", params={
                "skill": "expense_logging", "tools": ["expenses_add_batch"]}, description="the skill was loaded first"),
            Requirement(id="logged_then_paid", kind="partial_order", params={"before": [
                [{"tool": "expenses_add_batch"}, {"tool": "wallet_send_money"}]]},
                description="logged first, then paid, as asked"),
            recall, efficient,
            Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={"allow": [
                {"table": "transactions", "ops": ["added"], "max": 2}, {"table": "account"},
                {"table": "agent_sessions", "ops": ["added"], "max": 1}]}, description="nothing else changed")]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # the memory slip: a friend's or the superseded value
        p, out = task.private_params, [a.model_copy(deep=True) for a in actions]
        wrong = p["old_value"] if self.level(task, "distractors") >= 2 else p["other_value"]
        if p["variant"] in GATHERINGS:
            out[1].arguments["location"] = wrong
            out[5].arguments["text"] = out[5].arguments["text"].replace(p["value"], wrong)
        else:
            out[1].arguments["query"] = wrong
            out[7].arguments["contact_id"] = p["contact_ids"][1 if wrong == p["old_value"] else 2]
        return out
