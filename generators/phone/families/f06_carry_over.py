"""F06: carry information from one app into another.

The fact the user needs lives in one app (an appointment in a mail or its
attachment, an email address in contacts, a door code in a text) and must land in
another (calendar, messages, notes). Difficulty adds a superseded version of the
fact (the newest wins), near-duplicate sources, and hides the fact in an attachment.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact
from generators.phone.apps.mail import add_mail
from generators.phone.apps.messages import add_message
from generators.phone.families import f06_apps, noise
from generators.phone.families.base import Family, call, finish
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

NOISE = {1: 6, 2: 12, 3: 20}
VARIANTS = ("mail_to_calendar", "contact_to_text", "code_to_note")


def _spoken(day: str, hhmm: str) -> str:
    """'Thursday, March 5 at 2:30 PM': how a confirmation mail writes a time."""
    t = datetime.fromisoformat(f"{day}T{hhmm}")
    return f"{t:%A, %B} {t.day} at {t.hour % 12 or 12}:{t:%M} {'AM' if t.hour < 12 else 'PM'}"


class CarryOver(Family):
    """Read a fact in one app, write it into another, exactly."""

    id = "F06"
    title = "carry information from one app into another"
    tags = ("cross_app",)
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    tools = ("mail_search", "mail_list", "mail_read", "mail_open_attachment", "calendar_list_events",
             "calendar_create_event", "contacts_search", "contacts_get", "messages_search", "messages_list",
             "messages_send", "notes_create", "notes_search", "notes_update", "todos_create")
    hard_claims = True  # an answer backed by a made-up fact is a failure
    splits = {"mail_to_calendar": "train", "contact_to_text": "train", "receipt_to_expense": "train",
              "code_to_note": "dev", "missed_to_contact": "test", "trip_plan": "challenge"}
    apart = f06_apps.VARIANTS  # the variants that put other apps to work
    knobs = {"distractors": "2+: a superseded version of the fact (or a near-duplicate contact); "
                            "3: the fact only in an attachment, a second decoy", "noise": "rows 6/12/20"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        private: dict[str, Any] = {"variant": variant, "user_facts": {}}
        if variant == "mail_to_calendar":
            day = (DEFAULT_START.date() + timedelta(days=rng.randint(2, 9))).isoformat()
            start, old = rng.sample(range(16, 34), 2)
            private.update(day=day, start=f"{start // 2:02d}:{30 * (start % 2):02d}",
                           old_start=f"{old // 2:02d}:{30 * (old % 2):02d}")
            return {"sender": rng.choice(seeddata.CLINICS)}, private
        names = rng.sample([(f, la) for f in seeddata.FIRST_NAMES for la in seeddata.LAST_NAMES[:10]], 2)
        (f1, l1), (f2, l2) = names
        if variant == "contact_to_text":
            private.update(about=[f1, l1], to=[f2, l2], email=seeddata.email_for(f1, l1, rng))
            return {"about_name": f"{f1} {l1}", "to_name": f"{f2} {l2}"}, private
        code, old = rng.sample(range(1000, 999999), 2)
        private.update(sender=[f1, l1], code=str(code), old_code=str(old))
        return {"sender": f"{f1} {l1}", "title": rng.choice(["Door code", "Building code", "Gate code"])}, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p, d, n = task.private_params, self.level(task, "distractors"), NOISE[self.level(task, "noise")]
        taken = {tuple(p[k]) for k in ("about", "to", "sender") if k in p}
        ids = noise.contacts(world, rng, n, taken)
        noise.mails(world, rng, n)
        noise.events(world, rng, n // 2)
        if p["variant"] == "mail_to_calendar":
            self._mails(world, task)
        elif p["variant"] == "contact_to_text":
            (f1, l1), (f2, l2) = p["about"], p["to"]
            add_contact(world, f1, l1, phone=seeddata.phone_number(rng), email=p["email"])
            add_contact(world, f2, l2, phone=seeddata.phone_number(rng), email=seeddata.email_for(f2, l2, rng))
            near = [(f1, seeddata.NEAR_LAST[l1]), (rng.choice([n for n in seeddata.FIRST_NAMES if n != f1]), l1)]
            for f, la in near[: d - 1]:  # same-looking people with other addresses
                add_contact(world, f, la, phone=seeddata.phone_number(rng), email=seeddata.email_for(f, la, rng))
        else:
            f, la = p["sender"]
            sender = add_contact(world, f, la, phone=seeddata.phone_number(rng))["id"]
            stamp = (world.now - timedelta(hours=2)).isoformat(timespec="minutes")
            if d >= 2:
                old_at = (world.now - timedelta(days=3)).isoformat(timespec="minutes")
                add_message(world, sender, f"The door code is {p['old_code']}", at=old_at)
                add_message(world, sender, f"Heads up, the code changed. New door code: {p['code']}", at=stamp)
            else:
                add_message(world, sender, f"Door code is {p['code']}, see you later!", at=stamp)
            if d >= 3:
                add_message(world, rng.choice(ids), f"Gate code for the garage is {p['old_code'][::-1]}", at=stamp)
        noise.messages(world, rng, ids, n)

    def _mails(self, world: World, task: TaskSpec) -> None:
        p, d, sender = task.private_params, self.level(task, "distractors"), task.public_params["sender"]
        address = "appointments@" + sender.lower().replace(" ", "") + ".example"
        stamp = (world.now - timedelta(hours=5)).isoformat(timespec="minutes")
        if d >= 2:  # the first booking, since moved: the newest mail wins
            old_at = (world.now - timedelta(days=4)).isoformat(timespec="minutes")
            add_mail(world, address, f"{sender}: appointment confirmed",
                     f"Your appointment is confirmed for {_spoken(p['day'], p['old_start'])}.", at=old_at)
        details = f"Your appointment is {'now moved to' if d >= 2 else 'confirmed for'} " \
                  f"{_spoken(p['day'], p['start'])}. Location: {sender}."
        if d >= 3:
            add_mail(world, address, f"{sender}: updated appointment", "Please see the attached confirmation.",
                     at=stamp, attachments=[{"name": "confirmation.txt", "text": details}])
        else:
            add_mail(world, address, f"{sender}: {'updated' if d >= 2 else 'your'} appointment", details, at=stamp)

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        p = task.private_params
        if p["variant"] == "mail_to_calendar":
            sender = task.public_params["sender"]
            mails = [r for r in world.table("mails").rows.values() if sender in r["subject"]]
            return {"mail_id": max(mails, key=lambda r: r["at"])["id"]}
        rows = world.table("contacts").rows.values()
        key = "to" if p["variant"] == "contact_to_text" else "sender"
        return {"target_id": next(r["id"] for r in rows if [r["first_name"], r["last_name"]] == p[key])}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        if p["variant"] == "mail_to_calendar":
            reads = [call("mail_search", query=q["sender"]), call("mail_read", mail_id=p["mail_id"])]
            if self.level(task, "distractors") >= 3:
                reads.append(call("mail_open_attachment", mail_id=p["mail_id"], name="confirmation.txt"))
            write = call("calendar_create_event", title=f"Appointment at {q['sender']}", date=p["day"],
                         start=p["start"], location=q["sender"])
            return [*reads, write, finish(summary=f"Added the {q['sender']} appointment on {p['day']}.")]
        if p["variant"] == "contact_to_text":
            return [call("contacts_search", query=q["about_name"]), call("contacts_search", query=q["to_name"]),
                    call("messages_send", contact_id=p["target_id"], text=f"{q['about_name']}'s email: {p['email']}"),
                    finish(summary=f"Texted {q['to_name']} the address.")]
        return [call("messages_search", query=q["sender"]),
                call("notes_create", title=q["title"], body=f"{q['title']}: {p['code']}"),
                finish(summary="Saved the code.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p, q = task.private_params, task.public_params
        if p["variant"] == "mail_to_calendar":
            goal = {"table": "events", "added": [{"date": p["day"], "start": p["start"]}]}
        elif p["variant"] == "contact_to_text":
            goal = {"table": "messages", "field_match": {"text": "contains"},
                    "added": [{"contact_id": p["target_id"], "direction": "out", "text": p["email"]}]}
        else:
            goal = {"table": "notes", "field_match": {"body": "contains", "title": "fuzzy"},
                    "added": [{"title": q["title"], "body": p["code"]}]}
        return [
            Requirement(id="carried_over", kind="state_diff", weight=2.0, params=goal,
                        description="the fact arrived, exactly, in the other app"),
            Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True,
                        description="one row added, nothing else changed",
                        params={"allow": [{"table": goal["table"], "ops": ["added"], "max": 1}]}),
        ]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # the realistic slip: the superseded value, or a fact copied with a typo
        p, out = task.private_params, [a.model_copy(deep=True) for a in actions]
        args = out[-2].arguments
        if p["variant"] == "mail_to_calendar":
            args["start"] = p["old_start"]
        elif p["variant"] == "contact_to_text":
            local, _, domain = p["email"].partition("@")
            args["text"] = args["text"].replace(p["email"], f"{local}{rng.randint(1, 9)}@{domain}")
        else:
            args["body"] = args["body"].replace(p["code"], p["old_code"])
        return out
