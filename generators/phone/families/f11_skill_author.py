"""F11: reuse a skill across many items; author one that re-runs on a fresh instance.

Reuse: a curated macro (``quick_todo``) run once per item, in the order given.
Authoring: the agent saves a macro with the parameters the user names, then uses it
on today's items; the verifier re-runs the saved skill on a held-out world with new
arguments, so a skill that hard-codes today's ids or values fails there.
"""

from __future__ import annotations

import random
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact
from generators.phone.families import noise
from generators.phone.families.base import Family, call, finish
from generators.phone.services.skills import fill
from generators.phone.world import World
from warehouse.contract import Action, Requirement, TaskSpec

# authored macros of one step: variant -> (skill, description, tool, argument templates, parameters, table)
AUTHORED: dict[str, tuple[str, str, str, dict[str, Any], list[str], str]] = {
    "author_alarm": ("weekday_alarm", "Set a labelled alarm.", "alarms_create", {"time": "{time}", "label": "{label}"},
                     ["time", "label"], "alarms"),
    "author_note": ("meeting_note", "Start a meeting note for a topic.", "notes_create",
                    {"title": "Meeting: {topic}", "body": "Agenda and notes for {topic}."}, ["topic"], "notes"),
    "author_timer": ("kitchen_timer", "Start a labelled kitchen timer.", "timers_start",
                     {"minutes": "{minutes}", "label": "{label}"}, ["minutes", "label"], "timers"),
}
ALARMS = [("06:10", "Gym"), ("06:40", "School run"), ("07:05", "Meds"), ("08:50", "Standup"), ("05:45", "Train")]
TOPICS = ["budget review", "hiring plan", "Q3 roadmap", "office move", "vendor contracts"]
COOKING = [(12, "pasta"), (40, "roast"), (5, "eggs"), (25, "bread"), (8, "rice")]
HELDOUT_ITEM = {"author_alarm": {"time": "05:55", "label": "Held-out"}, "author_note": {"topic": "held-out topic"},
                "author_timer": {"minutes": 17, "label": "held-out"}}
VARIANTS = ("author_greeting", "author_expense", "reuse_todos", *AUTHORED)
CHORES = ["Water the plants", "Pay the phone bill", "Book a haircut", "Return library books", "Call the plumber",
          "Renew passport", "Buy printer ink"]
GREETING = "Happy birthday, {name}! Have a great day."


class SkillAuthor(Family):
    """Save a reusable skill and use it per item, or reuse a curated one per item."""

    id = "F11"
    title = "reuse a skill across many items; author one that re-runs"
    capability = "skills"
    tags = ("skill_authoring",)
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    splits = {"author_greeting": "train", "reuse_todos": "train", "author_alarm": "train", "author_expense": "dev",
              "author_note": "test", "author_timer": "challenge"}
    tools = ("list_skills", "load_skill", "run_skill", "save_skill", "contacts_search", "messages_send",
             "expenses_add", "todos_create", "todos_list", "alarms_create", "notes_create", "timers_start")
    knobs = {"targets": "items to handle: 2/2/3 (reuse: 3/3/4)"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        n = {1: 2, 2: 2, 3: 3}[levels.get("targets", 1)]
        heldout = {"seed": rng.randrange(10**6), "first": rng.choice(seeddata.FIRST_NAMES)}
        private: dict[str, Any] = {"variant": variant, "user_facts": {}, "heldout": heldout}
        if variant == "author_greeting":
            people = rng.sample([(f, la) for f in seeddata.FIRST_NAMES for la in seeddata.LAST_NAMES[:10]], n)
            private["people"] = [list(p) for p in people]
            return {"names": " and ".join(f"{f} {la}" for f, la in people), "skill": "birthday_text"}, private
        if variant == "author_expense":
            amounts = [round(rng.uniform(2.5, 6.5), 2) for _ in range(n)]
            private.update(amounts=amounts, heldout={**heldout, "amount": round(rng.uniform(2.5, 6.5), 2)})
            return {"amounts": " and ".join(f"{a:.2f}" for a in amounts), "skill": "log_coffee"}, private
        if variant in AUTHORED:
            items = {"author_alarm": lambda: [{"time": t, "label": la} for t, la in rng.sample(ALARMS, n)],
                     "author_note": lambda: [{"topic": t} for t in rng.sample(TOPICS, n)],
                     "author_timer": lambda: [{"minutes": m, "label": la} for m, la in rng.sample(COOKING, n)]}[variant]()
            private["items"] = items
            shown = " and ".join(" ".join(f"({v})" if k == "label" else f"{v} min" if k == "minutes" else f"{v}"
                                          for k, v in i.items()) for i in items)
            return {"items": shown, "skill": AUTHORED[variant][0]}, private
        chores = rng.sample(CHORES, n + 1)
        private["chores"] = chores
        return {"chores": "; ".join(chores)}, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p = task.private_params
        ids = noise.contacts(world, rng, 8, {tuple(x) for x in p.get("people", [])})
        for f, la in p.get("people", []):
            add_contact(world, f, la, phone=seeddata.phone_number(rng))
        noise.messages(world, rng, ids, 5)

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        rows = world.table("contacts").rows.values()
        return {"contact_ids": [next(r["id"] for r in rows if [r["first_name"], r["last_name"]] == p)
                                for p in task.private_params.get("people", [])]}

    def _runs(self, task: TaskSpec) -> list[dict[str, Any]]:
        p = task.private_params
        if p["variant"] == "author_greeting":
            return [{"contact_id": c, "name": f} for c, (f, _) in zip(p["contact_ids"], p["people"], strict=True)]
        if p["variant"] == "author_expense":
            return [{"amount": a} for a in p["amounts"]]
        if p["variant"] in AUTHORED:
            return [dict(i) for i in p["items"]]
        return [{"task": c} for c in p["chores"]]

    def _skill(self, task: TaskSpec) -> str:
        variant = task.private_params["variant"]
        if variant in AUTHORED:
            return AUTHORED[variant][0]
        return {"author_greeting": "birthday_text", "author_expense": "log_coffee"}.get(variant, "quick_todo")

    def solve(self, task: TaskSpec) -> list[Action]:
        p, name = task.private_params, self._skill(task)
        runs = [call("run_skill", name=name, arguments=a) for a in self._runs(task)]
        if p["variant"] == "reuse_todos":
            return [call("list_skills"), *runs, finish(summary=f"Added {len(runs)} to-dos.")]
        if p["variant"] in AUTHORED:
            _, description, tool, arguments, parameters, _ = AUTHORED[p["variant"]]
            save = call("save_skill", name=name, description=description,
                        steps=[{"tool": tool, "arguments": dict(arguments)}], parameters=list(parameters))
            return [save, *runs, finish(summary=f"Done {len(runs)} times; the skill is saved.")]
        if p["variant"] == "author_greeting":
            steps = [{"tool": "messages_send", "arguments": {"contact_id": "{contact_id}", "text": GREETING}}]
            looks = [call("contacts_search", query=f"{f} {la}") for f, la in p["people"]]
            save = call("save_skill", name=name, description="Text a birthday greeting to a contact.", steps=steps,
                        parameters=["contact_id", "name"])
            return [*looks, save, *runs, finish(summary="Greeted everyone; the skill is saved.")]
        steps = [{"tool": "expenses_add", "arguments": {"amount": "{amount}", "category": "dining", "note": "coffee"}}]
        save = call("save_skill", name=name, description="Log a coffee bought with cash.", steps=steps,
                    parameters=["amount"])
        return [save, *runs, finish(summary="Logged the coffees; the skill is saved.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p, name = task.private_params, self._skill(task)
        runs = self._runs(task)
        if p["variant"] == "author_greeting":
            goal = {"table": "messages", "added": [{"contact_id": r["contact_id"], "direction": "out",
                                                    "text": GREETING.format(name=r["name"])} for r in runs]}
            h = p["heldout"]
            rerun = {"seed": h["seed"], "setup": {"contacts": [{"first_name": h["first"], "last_name": "Heldout",
                                                                "phone": "+1 555 0100"}]},
                     "arguments": {"contact_id": "c-0001", "name": h["first"]},
                     "expect": {"table": "messages", "added": [{"contact_id": "c-0001",
                                                                "text": GREETING.format(name=h["first"])}]}}
        elif p["variant"] in AUTHORED:
            _, _, _, arguments, _, table = AUTHORED[p["variant"]]
            fields = [k for k in arguments if k != "body"]  # the body's wording is the skill's own
            goal = {"table": table, "added": [{k: fill(arguments[k], r) for k in fields} for r in runs]}
            held = HELDOUT_ITEM[p["variant"]]
            rerun = {"seed": p["heldout"]["seed"], "arguments": held,
                     "expect": {"table": table, "added": [{k: fill(arguments[k], held) for k in fields}]}}
        elif p["variant"] == "author_expense":
            goal = {"table": "transactions", "added": [{"amount": -r["amount"], "category": "dining"} for r in runs]}
            h = p["heldout"]
            rerun = {"seed": h["seed"], "arguments": {"amount": h["amount"]},
                     "expect": {"table": "transactions", "added": [{"amount": -h["amount"], "category": "dining"}]}}
        else:
            goal = {"table": "todos", "added": [{"title": r["task"]} for r in runs]}
            rerun = None
        reqs = [Requirement(id="items_done", kind="state_diff", weight=2.0, params=goal, description="every item done"),
                Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={"allow": [
                    {"table": goal["table"], "ops": ["added"], "max": len(runs)},
                    {"table": "skills", "ops": ["added"], "max": 1}]}, description="only the items (and the skill)"),
                Requirement(id="in_order", kind="partial_order", params={"before": [
                    [{"tool": "run_skill", "arguments": {"arguments": a}}, {"tool": "run_skill", "arguments": {
                        "arguments": b}}] for a, b in zip(runs, runs[1:], strict=False)]},
                    description="the items in the order the user gave")]
        if rerun is None:
            reqs.append(Requirement(id="reused_skill", kind="called", dimension="skills",
                                    params={"tool": "run_skill", "arguments": {"name": name}},
                                    description="reused the curated skill"))
        else:
            reqs.append(Requirement(id="skill_reruns", kind="skill_reruns", weight=2.0, dimension="skills",
                                    params=rerun, description="the saved skill works on a fresh, held-out instance"))
        return reqs

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # authoring: the skill saved with a parameter hard-coded to today's first value (and under a slightly
        # different name); reuse: a slip in one item
        out = [a.model_copy(deep=True) for a in actions]
        save = next((a for a in out if a.tool == "save_skill"), None)
        if save is not None:
            first = self._runs(task)[0]
            save.arguments["name"] += "s"
            save.arguments["steps"] = fill_first(save.arguments["steps"], first)
            save.arguments["parameters"] = []
            return out
        last = max(i for i, a in enumerate(out) if a.tool == "run_skill")
        args = dict(out[last].arguments["arguments"])
        key = next(iter(args))
        if key == "amount":
            args[key] = round(args[key] + 1, 2)
        elif key == "task":
            args[key] = args[key] + " today"
        else:
            args[key] = "c-0001" if args[key] != "c-0001" else "c-0002"
        out[last].arguments["arguments"] = args
        return out


def fill_first(steps: list[dict[str, Any]], values: dict[str, Any]) -> list[dict[str, Any]]:
    """Macro steps with every placeholder replaced by one item's values: a skill that only fits today."""
    return [{"tool": s["tool"], "arguments": fill(s["arguments"], values)} for s in steps]
