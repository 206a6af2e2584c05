"""F09: remember in one session, use it in a later one (a two-session scenario).

Session 1: the user tells the agent something to remember (an allergy, where the car
is, a promise to call back); the agent must write it to memory with the right type.
Session 2, a day later, in a fresh conversation: the instruction no longer says the
fact; the agent must get it back from memory (or the open intents) and act on it.

Each session is its own task and replays alone: session 2 starts from the memory that
session 1's reference leaves. The scenario succeeds only if both sessions do.
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
from generators.phone.services.memory import add_memory
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

VARIANTS = ("allergy", "parking", "call_back", "gate_code", "gift_idea", "pay_later")
ALLERGENS = ["peanuts", "shellfish", "gluten", "dairy", "sesame", "eggs"]
GIFTS = ["a pottery class", "a bread-making kit", "concert tickets", "a travel pillow", "a board game", "a plant"]
TODO, ANSWER, INTENT = ("allergy", "gift_idea"), ("parking", "gate_code"), ("call_back", "pay_later")


class RememberLater(Family):
    """Session 1 writes a fact to memory; session 2 reads it back and acts."""

    id = "F09"
    title = "remember in one session, use in a later one"
    capability = "memory"
    tags = ("memory_write", "memory_recall", "multi_session")
    sessions = 2
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    splits = {"allergy": "train", "parking": "train", "gate_code": "train", "call_back": "dev", "gift_idea": "test",
              "pay_later": "challenge"}
    tools = ("memory_search", "memory_add", "memory_get", "memory_update", "memory_delete", "memory_list_intents",
             "contacts_search", "calls_dial", "todos_create", "todos_list", "wallet_send_money")
    knobs = {"distractors": "2+: the user's own older value and a friend's record in memory at session 2; "
                            "3: + a similar key"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        f, la = rng.choice([(f, la) for f in seeddata.FIRST_NAMES for la in seeddata.LAST_NAMES[:8]])
        other = rng.choice([n for n in seeddata.FIRST_NAMES if n != f])
        private: dict[str, Any] = {"variant": variant, "person": [f, la], "other": other, "user_facts": {}}
        tomorrow = (DEFAULT_START.date() + timedelta(days=1)).isoformat()
        if variant == "allergy":
            value, old, other_value = rng.sample(ALLERGENS, 3)
            private.update(type="relationship", key=f"{f} allergy", value=value, subject=f, old_value=old,
                           other_value=other_value)
        elif variant == "gift_idea":
            value, old, other_value = rng.sample(GIFTS, 3)
            private.update(type="relationship", key=f"{f} gift idea", value=value, subject=f, old_value=old,
                           other_value=other_value)
        elif variant == "gate_code":
            value, old, other_value = (f"{rng.randint(1000, 9999)}" for _ in range(3))
            private.update(type="relationship", key=f"{f} gate code", value=value, subject=f, old_value=old,
                           other_value=other_value)
        elif variant == "pay_later":
            amount = round(rng.uniform(8, 90), 2)
            private.update(type="prospective", key=f"pay {f} back", value=f"pay {f} {la} back {amount:.2f}",
                           subject="user", due=tomorrow, old_value="", other_value="", amount=amount)
        elif variant == "parking":
            level, spot = rng.choice(["P1", "P2", "P3", "B1"]), rng.randint(10, 99)
            private.update(type="episodic", key="parking spot", value=f"level {level}, spot {spot}", subject="user",
                           old_value=f"level {level}, spot {spot - 7}", other_value=f"level P4, spot {spot + 3}")
        else:
            private.update(type="prospective", key=f"call {f} back", value=f"call {f} {la} back", subject="user",
                           due=tomorrow, old_value="", other_value="")
        public = {"name": f, "full_name": f"{f} {la}"}
        if variant == "parking":
            public["spot"] = private["value"]
        if variant == "allergy":
            public["allergen"] = private["value"]
        if variant in ("gift_idea", "gate_code"):
            public["value"] = private["value"]
        if variant == "pay_later":
            public["amount"] = f"{private['amount']:.2f}"
        return public, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p = task.private_params
        if task.session == 1:
            plant(world, rng, type="preference", key="coffee order", value="cortado", old_value="latte",
                  other=p["other"], other_value="mocha", similar_key="coffee beans", similar_value="dark roast",
                  level=1)
            ids = noise.contacts(world, rng, 6, {tuple(p["person"])})
            add_contact(world, *p["person"], phone=seeddata.phone_number(rng))
            noise.messages(world, rng, ids, 6)
            return
        world.now = DEFAULT_START + timedelta(days=1)  # the next day
        d = self.level(task, "distractors")
        if d >= 2 and p["old_value"]:  # an older value of the same key, and someone else's
            add_memory(world, p["type"], p["key"], p["old_value"], subject=p["subject"],
                       at=(world.now - timedelta(days=30)).isoformat(timespec="minutes"), status="superseded")
            add_memory(world, p["type"], p["key"].replace(p["person"][0], p["other"]), p["other_value"],
                       subject=p["other"] if p["subject"] != "user" else p["other"],
                       at=(world.now - timedelta(days=2)).isoformat(timespec="minutes"))
        if d >= 3:
            add_memory(world, "episodic", "bike parking", "rack by the north door")
        ids = noise.contacts(world, rng, 6, {tuple(p["person"])})
        add_contact(world, *p["person"], phone=seeddata.phone_number(rng))
        noise.messages(world, rng, ids, 6)
        # what session 1 left in memory (its reference's write), a day earlier
        add_memory(world, p["type"], p["key"], p["value"], subject=p["subject"], source="agent",
                   at=DEFAULT_START.isoformat(timespec="minutes"), due=p.get("due", ""))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        p = task.private_params
        person = next(r for r in world.table("contacts").rows.values()
                      if [r["first_name"], r["last_name"]] == p["person"])
        out = {"person_id": person["id"], "person_phone": person["phone"]}
        if task.session == 2:
            out["memory_id"] = next(r["id"] for r in world.table("memories").rows.values()
                                    if r["key"] == p["key"] and r["value"] == p["value"])
        return out

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        if task.session == 1:
            extra = {"subject": p["subject"]} if p["subject"] != "user" else {}
            extra.update({"due": p["due"]} if p.get("due") else {})
            return [call("memory_add", type=p["type"], key=p["key"], value=p["value"], **extra),
                    finish(summary="Noted.")]
        if p["variant"] in TODO:
            title = f"Birthday cake for {p['person'][0]}: no {p['value']}" if p["variant"] == "allergy" else \
                f"Buy {p['person'][0]}'s birthday gift: {p['value']}"
            return [call("memory_search", query=p["key"]), call("todos_create", title=title),
                    finish(summary="Added the to-do.")]
        if p["variant"] in ANSWER:
            return [call("memory_search", query=p["key"]), finish(answer=p["value"], summary=f"It's {p['value']}.")]
        act = call("calls_dial", contact_id=p["person_id"]) if p["variant"] == "call_back" else \
            call("wallet_send_money", contact_id=p["person_id"], amount=p["amount"], note="paying you back")
        return [call("memory_list_intents"), call("contacts_search", query=" ".join(p["person"])), act,
                call("memory_delete", memory_id=p["memory_id"]),
                finish(summary=f"Done what I promised {p['person'][0]} and closed the reminder.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        if task.session == 1:
            want = {"type": p["type"], "value": p["value"], "status": "active"}
            if p["subject"] != "user":
                want["subject"] = p["subject"]
            if p.get("due"):
                want["due"] = p["due"]
            return [Requirement(id="remembered", kind="memory_diff", weight=2.0, dimension="memory",
                                params={"added": [want], "field_match": {"value": "contains"}},
                                description="the fact is in memory, typed, with whom it is about"),
                    Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True,
                                params={"allow": [{"table": "memories", "ops": ["added"], "max": 1}]},
                                description="one memory added, nothing else")]
        reqs = []
        if p["variant"] in TODO:
            reqs += [Requirement(id="acted_on_recall", kind="state_diff", weight=2.0, dimension="memory",
                                 params={"table": "todos", "field_match": {"title": "contains"},
                                         "added": [{"title": p["value"]}]},
                                 description="the to-do names what was remembered last session"),
                     Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True,
                                 params={"allow": [{"table": "todos", "ops": ["added"], "max": 1}]},
                                 description="one to-do added, nothing else")]
        elif p["variant"] in ANSWER:
            reqs += [Requirement(id="recalled", kind="answer", weight=2.0, dimension="memory",
                                 params={"expected": p["value"]}, description="the fact remembered last session"),
                     Requirement(id="no_changes", kind="allowed_changes", noop_passes=True, params={"allow": []},
                                 description="nothing changed")]
        else:
            call_back = p["variant"] == "call_back"
            table, tool = ("call_log", "calls_dial") if call_back else ("transactions", "wallet_send_money")
            done = {"number": p["person_phone"], "direction": "out"} if call_back else \
                {"amount": -p["amount"], "kind": "transfer", "merchant": p["person_id"]}
            reqs += [Requirement(id="promise_kept", kind="state_diff", weight=2.0, params={
                         "table": table, "added": [done]}, description="what was promised was done"),
                     Requirement(id="intent_closed", kind="memory_diff", dimension="memory",
                                 params={"deleted": [p["memory_id"]]}, description="the done intent is closed"),
                     Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={
                         "allow": [{"table": table, "ops": ["added"], "max": 1}, {"table": "memories"},
                                   *([] if call_back else [{"table": "account"}])]},
                         description="the promise kept, the intent closed, nothing else"),
                     Requirement(id="done_then_closed", kind="partial_order", dimension="memory", params={
                         "before": [[{"tool": tool}, {"tool": "memory_delete"}]]},
                         description="the intent is closed only once it is done")]
        return [*reqs, Requirement(id="looked_in_memory", kind="called", dimension="memory",
                                   params={"tool": "memory_list_intents" if p["variant"] in INTENT
                                           else "memory_search"}, description="got the fact back from memory")]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        p, out = task.private_params, [a.model_copy(deep=True) for a in actions]
        if task.session == 1:  # remembered it wrong: the subject lost, or the value garbled
            args = out[0].arguments
            if "subject" in args:
                args.pop("subject")
            elif "due" in args:
                args["due"] = (DEFAULT_START.date() + timedelta(days=7)).isoformat()
            else:
                args["value"] = p["old_value"]
            return out
        if p["variant"] in INTENT:
            out[2].arguments["contact_id"] = "c-0001" if p["person_id"] != "c-0001" else "c-0002"
            return out
        if p["variant"] in ANSWER:
            out[-1].arguments["answer"] = p["old_value"]
            return out
        out[1].arguments["title"] = out[1].arguments["title"].replace(p["value"], p["other_value"])
        return out
