"""F01: create, update or delete one contact hidden among noise rows and near-duplicates."""

from __future__ import annotations

import random
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact, add_random_contact
from generators.phone.families import f01_apps
from generators.phone.families.base import Family, call, finish
from generators.phone.world import World
from warehouse.contract import Action, Requirement, TaskSpec

NOISE = {1: 8, 2: 18, 3: 35}  # noise contacts per difficulty: past 10, search results paginate
DECOYS = {1: 1, 2: 2, 3: 3}  # near-duplicates of the target


class ContactCrud(Family):
    """Change exactly one contact; every other row must stay as it was."""

    id = "F01"
    title = "create, update, delete among noise rows"
    tags = ("crud", "disambiguation")
    templates = tuple(f"{v}.{w}" for v in ("update_phone", "delete_contact", "create_contact")
                      for w in ("direct", "casual", "terse"))
    tools = ("contacts_search", "contacts_list", "contacts_get", "contacts_create", "contacts_update",
             "contacts_delete", "contacts_sync", "calendar_list_events", "device_get_settings",
             "device_grant_permission")
    splits = {"update_phone": "train", "delete_contact": "train", "set_timer": "train", "add_alarm": "train",
              "add_todo": "train", "send_mail": "train", "play_playlist": "train", "pause_music": "train",
              "remove_song": "train", "cancel_timer": "train", "delete_alarm": "train", "change_alarm": "train",
              "delete_note": "train", "edit_note": "train", "delete_file": "train", "cancel_trip": "train",
              "cancel_event": "train", "delete_text": "train", "build_playlist": "dev", "complete_todo": "dev",
              "create_contact": "test", "move_file": "test", "set_mode": "test", "archive_mail": "dev",
              "move_event": "test", "order_product": "challenge", "complete_two_todos": "train",
              "archive_two_mails": "train", "add_song": "train", "new_playlist": "train"}
    apart = f01_apps.VARIANTS  # the variants that put other apps to work
    # 1: two-row chores, a song added and an empty playlist made (train) call the held-out variants' tools
    revision = 1
    knobs = {"noise": "noise contacts 8/18/35", "decoys": "near-duplicate names 1/2/3; from 2 a company to match too"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        first, last = rng.choice(seeddata.FIRST_NAMES), rng.choice(seeddata.LAST_NAMES)
        target = {"first": first, "last": last, "phone": seeddata.phone_number(rng),
                  "email": seeddata.email_for(first, last, rng), "company": rng.choice(seeddata.COMPANIES)}
        public: dict[str, Any] = {"name": f"{first} {last}"}
        private: dict[str, Any] = {"variant": variant, "target": target}
        if variant == "update_phone":
            new_phone = seeddata.phone_number(rng)
            while new_phone == target["phone"]:
                new_phone = seeddata.phone_number(rng)
            public["new_phone"] = new_phone
        elif variant == "create_contact":
            public.update(phone=target["phone"], company=target["company"] if levels["decoys"] >= 2 else "")
        # the scripted user knows the rest of the contact if asked
        private["user_facts"] = {"email": target["email"], "company": target["company"]}
        return public, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        t, variant = task.private_params["target"], task.private_params["variant"]
        taken = {(t["first"], t["last"])}
        decoy_names = [(t["first"], seeddata.NEAR_LAST[t["last"]]),
                       (rng.choice([n for n in seeddata.FIRST_NAMES if n != t["first"]]), t["last"]),
                       (t["first"], rng.choice([n for n in seeddata.LAST_NAMES if n != t["last"]]))]
        rows = [] if variant == "create_contact" else [("target", t["first"], t["last"])]
        rows += [("decoy", f, la) for f, la in decoy_names[:DECOYS[self.level(task, "decoys")]]]
        taken |= {(f, la) for _, f, la in rows}
        rows += [("noise", "", "")] * NOISE[self.level(task, "noise")]
        rng.shuffle(rows)  # so the target's id says nothing about which row it is
        for role, f, la in rows:
            if role == "noise":
                add_random_contact(world, rng, taken)
            elif role == "target":
                add_contact(world, f, la, phone=t["phone"], email=t["email"], company=t["company"])
            else:
                add_contact(world, f, la, phone=seeddata.phone_number(rng),
                            email=seeddata.email_for(f, la, rng), company=rng.choice(seeddata.COMPANIES))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        t = task.private_params["target"]
        ids = {(r["first_name"], r["last_name"]): k for k, r in world.table("contacts").rows.items()}
        target_id = ids.get((t["first"], t["last"]))
        near = {t["last"], seeddata.NEAR_LAST[t["last"]]}
        # any row sharing a first name or a (near) last name is one a careless agent could pick
        decoys = sorted(k for (f, la), k in ids.items() if k != target_id and (f == t["first"] or la in near))
        return {"target_id": target_id, "decoy_ids": decoys}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, name = task.private_params, task.public_params["name"]
        if p["variant"] == "update_phone":
            return [call("contacts_search", query=name),
                    call("contacts_update", contact_id=p["target_id"], phone=task.public_params["new_phone"]),
                    finish(summary=f"Updated {name}'s phone number.")]
        if p["variant"] == "delete_contact":
            return [call("contacts_search", query=name), call("contacts_delete", contact_id=p["target_id"]),
                    finish(summary=f"Deleted {name}.")]
        t = p["target"]
        extra = {"company": t["company"]} if task.public_params.get("company") else {}
        return [call("contacts_create", first_name=t["first"], last_name=t["last"], phone=t["phone"], **extra),
                finish(summary=f"Added {name}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        variant, target_id = p["variant"], p["target_id"]
        if variant == "update_phone":
            new_phone = task.public_params["new_phone"]
            want = {"table": "contacts", "updated": [{"key": target_id, "fields": {"phone": new_phone}}]}
            allow = [{"table": "contacts", "keys": [target_id], "ops": ["updated"]}]
        elif variant == "delete_contact":
            want = {"table": "contacts", "removed": [target_id]}
            allow = [{"table": "contacts", "keys": [target_id], "ops": ["removed"]}]
        else:
            t = p["target"]
            fields = {"first_name": t["first"], "last_name": t["last"], "phone": t["phone"]}
            if task.public_params.get("company"):
                fields["company"] = t["company"]
            want = {"table": "contacts", "added": [fields]}
            allow = [{"table": "contacts", "ops": ["added"], "max": 1}]
        reqs = [
            Requirement(id="target_changed", kind="state_diff", description=f"the contact is {variant}d as asked",
                        weight=2.0, params={**want, "match": "normalised"}),
            Requirement(id="no_collateral", kind="allowed_changes", description="no other contact changed",
                        noop_passes=True, params={"allow": allow}),
        ]
        if variant == "delete_contact":  # deleting a near-duplicate cannot be undone: a minefield
            reqs += [Requirement(id=f"spare_{d}", kind="forbidden", description=f"never delete decoy {d}",
                                 noop_passes=True, params={"tool": "contacts_delete", "arguments": {"contact_id": d}})
                     for d in p["decoy_ids"]]
        else:
            reqs.append(Requirement(id="no_delete", kind="forbidden", description="never delete a contact here",
                                    noop_passes=True, params={"tool": "contacts_delete"}))
        return reqs
