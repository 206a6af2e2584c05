"""F10: pick the right skill, load it before its gated tools, follow it.

The phone lists several skills; only one fits. Its tool is gated: calling it before
``load_skill`` is ``SKILL_NOT_LOADED``. A macro skill runs as one step with its own
sub-trace. Difficulty adds near-duplicate recipients and more items.
"""

from __future__ import annotations

import random
from typing import Any

from warehouse.contract import Action, Requirement, TaskSpec

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact
from generators.phone.families import noise
from generators.phone.families.base import Family, call, finish
from generators.phone.world import World

VARIANTS = ("group_text", "expense_batch", "focus_macro")
TEXTS = ["Running 10 minutes late, start without me", "Dinner is at 8 tonight", "Meeting moved to room 4B",
         "Happy Friday, drinks at six?", "The parcel arrived, thanks"]
ITEMS = [("groceries", "FreshMart"), ("transport", "taxi"), ("dining", "lunch"), ("health", "pharmacy"),
         ("shopping", "socks"), ("other", "parking")]
GATED = {"group_text": ("group_messaging", "messages_send_bulk"),
         "expense_batch": ("expense_logging", "expenses_add_batch")}


class SkillUse(Family):
    """Choose a skill among several, load it, then use what it unlocks (or run it)."""

    id = "F10"
    title = "pick the right skill, load it before its gated tools, follow it"
    capability = "skills"
    tags = ("skill_gating",)
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    splits = {"group_text": "train", "expense_batch": "train", "focus_macro": "dev"}
    tools = ("list_skills", "load_skill", "run_skill", "contacts_search", "messages_send_bulk", "expenses_add",
             "expenses_add_batch", "device_set_do_not_disturb", "device_set_volume", "wallet_list_transactions")
    knobs = {"distractors": "2+: near-duplicate recipients; 3: more recipients and items"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        d = levels.get("distractors", 1)
        private: dict[str, Any] = {"variant": variant, "user_facts": {}}
        if variant == "group_text":
            pool = [(f, la) for f in seeddata.FIRST_NAMES for la in seeddata.LAST_NAMES[:10]]
            people = rng.sample(pool, 3 + (d >= 3))
            private["people"] = [list(p) for p in people]
            text = rng.choice(TEXTS)
            return {"names": ", ".join(f"{f} {la}" for f, la in people[:-1]) + f" and {people[-1][0]} {people[-1][1]}",
                    "text": text}, {**private, "text": text}
        if variant == "expense_batch":
            chosen = rng.sample(ITEMS, 3 + (d >= 3))
            items = [{"amount": round(rng.uniform(3, 60), 2), "category": c, "note": n} for c, n in chosen]
            private["items"] = items
            return {"items": "; ".join(f"{i['amount']:.2f} {i['category']} ({i['note']})" for i in items)}, private
        level = rng.choice([10, 15, 20, 25, 30])
        return {"level": level}, {**private, "level": level}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p, d = task.private_params, self.level(task, "distractors")
        taken = {tuple(x) for x in p.get("people", [])}
        ids = noise.contacts(world, rng, 8, taken)
        for f, la in p.get("people", []):
            add_contact(world, f, la, phone=seeddata.phone_number(rng))
            if d >= 2:  # a same-looking person
                add_contact(world, f, seeddata.NEAR_LAST[la], phone=seeddata.phone_number(rng))
        noise.messages(world, rng, ids, 6)

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        rows = world.table("contacts").rows.values()
        ids = [next(r["id"] for r in rows if [r["first_name"], r["last_name"]] == p)
               for p in task.private_params.get("people", [])]
        decoys = [r["id"] for r in rows if r["id"] not in ids
                  and [r["first_name"]] in [[p[0]] for p in task.private_params.get("people", [])]]
        return {"contact_ids": ids, "decoy_ids": decoys}

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        if p["variant"] == "focus_macro":
            return [call("list_skills"), call("run_skill", name="focus_mode", arguments={"level": p["level"]}),
                    finish(summary=f"Focus mode on, media volume {p['level']}.")]
        skill, _ = GATED[p["variant"]]
        if p["variant"] == "group_text":
            looks = [call("contacts_search", query=f"{f} {la}") for f, la in p["people"]]
            return [call("list_skills"), call("load_skill", name=skill), *looks,
                    call("messages_send_bulk", contact_ids=p["contact_ids"], text=p["text"]),
                    finish(summary="Sent the group text.")]
        return [call("list_skills"), call("load_skill", name=skill), call("expenses_add_batch", items=p["items"]),
                finish(summary=f"Logged {len(p['items'])} expenses.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        optimal = len(self.solve(task)) - 1
        efficient = Requirement(id="efficient", kind="efficiency", hard=False, weight=0.5, dimension="skills",
                                noop_passes=True, params={"optimal": optimal, "slack": 3},
                                description="no more calls than the optimal plus three")
        if p["variant"] == "focus_macro":
            return [Requirement(id="focus_on", kind="state_diff", weight=2.0, params={"table": "device", "updated": [
                        {"key": "do_not_disturb", "fields": {"value": True}},
                        {"key": "volume_media", "fields": {"value": p["level"]}}]},
                        description="do-not-disturb on, media volume as asked"),
                    Requirement(id="ran_skill", kind="called", dimension="skills",
                                params={"tool": "run_skill", "arguments": {"name": "focus_mode"}},
                                description="used the focus_mode skill"),
                    Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={
                        "allow": [{"table": "device", "keys": ["do_not_disturb", "volume_media"]}]},
                        description="no other setting changed"), efficient]
        skill, gated = GATED[p["variant"]]
        if p["variant"] == "group_text":
            goal = {"table": "messages", "added": [{"contact_id": c, "text": p["text"], "direction": "out"}
                                                   for c in p["contact_ids"]]}
        else:
            goal = {"table": "transactions", "added": [{"amount": -i["amount"], "category": i["category"],
                                                        "kind": "cash"} for i in p["items"]]}
        return [Requirement(id="done", kind="state_diff", weight=2.0, params=goal, description="every item done"),
                Requirement(id="skill_gating", kind="skill_gating", dimension="skills",
                            params={"skill": skill, "tools": [gated]},
                            description=f"loaded {skill} before using {gated}"),
                Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={
                    "allow": [{"table": goal["table"], "ops": ["added"], "max": len(goal["added"])},
                              *([{"table": "account"}] if p["variant"] == "expense_batch" else [])]},
                    description="only the asked rows added"), efficient]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        p, out = task.private_params, [a.model_copy(deep=True) for a in actions]
        args = out[-2].arguments
        if p["variant"] == "focus_macro":
            args["arguments"] = {"level": p["level"] + 10}
        elif p["variant"] == "group_text":
            ids = list(args["contact_ids"])
            swap = rng.randrange(len(ids))
            ids[swap] = p["decoy_ids"][0] if p["decoy_ids"] else "c-0001"
            args["contact_ids"] = ids
        else:
            items = [dict(i) for i in args["items"]]
            items[rng.randrange(len(items))]["amount"] += 10
            args["items"] = items
        return out
