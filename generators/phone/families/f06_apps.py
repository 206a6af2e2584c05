"""F06 variants on the files, wallet, calls, contacts and travel apps: carry a fact across.

A receipt photo's total (read by OCR) becomes an expense; the number of a missed call
becomes a contact; a route's travel time and a forecast become a trip note.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps import files, travel
from generators.phone.families import noise
from generators.phone.families.base import Variant, call, finish
from generators.phone.families.f02_apps import latest_missed, seed_missed_calls
from generators.phone.world import World
from warehouse.contract import Action, Requirement, TaskSpec

RECEIPTS = {"Cafe Rio": "dining", "FreshMart": "groceries", "CityCab": "transport", "Pharmacy Plus": "health"}
ORIGINS = ["Home", "Office", "Central Station", "City Gym"]


def _carried(table: str, fields: dict[str, Any], field_match: dict[str, str] | None = None,
             rid: str = "carried_over") -> Requirement:
    return Requirement(id=rid, kind="state_diff", weight=2.0, description="the fact arrived, exactly, in the other app",
                       params={"table": table, "added": [fields], "field_match": field_match or {}})


def _one_row(table: str) -> Requirement:
    return Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True,
                       description="one row added, nothing else changed",
                       params={"allow": [{"table": table, "ops": ["added"], "max": 1}]})


class ReceiptToExpense(Variant):
    name = "receipt_to_expense"
    tools = ("files_search", "files_list", "photos_read_text", "expenses_add", "wallet_list_transactions",
             "wallet_send_money", "notes_create")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        merchant = rng.choice(sorted(RECEIPTS))
        amount, other = (round(rng.uniform(4, 95), 2) for _ in range(2))
        return {"merchant": merchant, "category": RECEIPTS[merchant]}, {
            "amount": amount, "other_amount": other, "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p, merchant, table = task.private_params, task.public_params["merchant"], world.table("files")
        for key in [k for k, r in table.rows.items() if r["name"].startswith("receipt_")]:
            del table.rows[key]  # seeded receipts would be other totals
        d = self.level(task, "distractors")
        receipts = [(merchant, p["amount"], rng.randint(1, 5) * 60)]
        if d >= 2:  # today's receipt from another shop
            receipts.append((rng.choice([m for m in RECEIPTS if m != merchant]), p["other_amount"], rng.randint(1, 5) * 60))
        if d >= 3:  # the same shop, days ago
            receipts.append((merchant, round(p["other_amount"] + 3.1, 2), rng.randint(3, 9) * 1440))
        rng.shuffle(receipts)
        for shop_name, amount, minutes_ago in receipts:
            at = (world.now - timedelta(minutes=minutes_ago)).isoformat(timespec="minutes")
            files.add_file(world, f"receipt_{rng.randint(1000, 9999)}.jpg", "Camera", "photo",
                           f"{shop_name.upper()}  Total {amount:.2f}  Card ****{rng.randint(1000, 9999)}", at)

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        mark = f"{task.public_params['merchant'].upper()}  Total {task.private_params['amount']:.2f}"
        return {"file_id": next(k for k, r in world.table("files").rows.items() if r["text"].startswith(mark))}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        return [call("files_search", query="receipt"), call("photos_read_text", file_id=p["file_id"]),
                call("expenses_add", amount=p["amount"], category=q["category"], note=q["merchant"]),
                finish(summary=f"Logged {p['amount']:.2f} USD at {q['merchant']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p, q = task.private_params, task.public_params
        return [_carried("transactions", {"amount": -p["amount"], "category": q["category"], "kind": "cash"}),
                _one_row("transactions")]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # another receipt's total
        out[2].arguments["amount"] = task.private_params["other_amount"]
        return out


class MissedToContact(Variant):
    name = "missed_to_contact"
    tools = ("calls_list", "calls_dial", "contacts_search", "contacts_create", "contacts_update", "messages_send")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        first, last = rng.choice(seeddata.FIRST_NAMES), rng.choice(seeddata.LAST_NAMES)
        return {"name": f"{first} {last}"}, {"first": first, "last": last, "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p = task.private_params
        noise.contacts(world, rng, 4 * self.level(task, "noise"), {(p["first"], p["last"])})
        seed_missed_calls(world, rng, self.level(task, "distractors"))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        newest, older, *_ = latest_missed(world)
        return {"number": newest, "older_number": older}

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        return [call("calls_list", missed_only=True),
                call("contacts_create", first_name=p["first"], last_name=p["last"], phone=p["number"]),
                finish(summary=f"Saved {p['number']} as {task.public_params['name']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        return [_carried("contacts", {"first_name": p["first"], "last_name": p["last"], "phone": p["number"]}),
                _one_row("contacts")]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # an older missed call's number
        out[1].arguments["phone"] = task.private_params["older_number"]
        return out


class TripPlan(Variant):
    name = "trip_plan"
    tools = ("trips_list", "maps_route", "weather_forecast", "notes_create", "notes_search", "calendar_create_event",
             "trips_cancel")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {"city": rng.choice(travel.CITIES), "origin": rng.choice(ORIGINS),
                "mode": rng.choice(["driving", "transit"])}, {"offset": rng.randint(1, 6), "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        city = task.public_params["city"]
        world.table("trips").rows.clear()
        start = world.now.date() + timedelta(days=task.private_params["offset"])
        trips = [(city, start)] + [(c, world.now.date() + timedelta(days=rng.randint(1, 30)))
                                   for c in rng.sample([c for c in travel.CITIES if c != city],
                                                       self.level(task, "distractors"))]
        rng.shuffle(trips)
        for c, day in trips:
            world.table("trips").insert({"id": world.next_id("trip"), "city": c, "start": day.isoformat(),
                                         "end": (day + timedelta(days=3)).isoformat(), "hotel": f"Hotel {c} Central"})

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        q = task.public_params
        start = next(r["start"] for r in world.table("trips").rows.values() if r["city"] == q["city"])
        route = travel.route(world, q["origin"], "Airport", q["mode"])
        weather = travel.forecast(world, q["city"], start)
        return {"start": start, "minutes": route["minutes"], "sky": weather["sky"], "high": weather["high_c"]}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        body = (f"{q['mode'].capitalize()} from {q['origin']} to the Airport: {p['minutes']} min. "
                f"{q['city']} on {p['start']}: {p['sky']}, high {p['high']} C.")
        return [call("trips_list"), call("maps_route", origin=q["origin"], destination="Airport", mode=q["mode"]),
                call("weather_forecast", city=q["city"], date=p["start"]),
                call("notes_create", title=f"Trip to {q['city']}", body=body),
                finish(summary=f"Saved the plan for {q['city']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p, title = task.private_params, f"Trip to {task.public_params['city']}"
        match = {"title": "fuzzy", "body": "contains"}
        return [_carried("notes", {"title": title, "body": f"{p['minutes']} min"}, match),
                _carried("notes", {"title": title, "body": p["sky"]}, match, "weather_noted"),
                _carried("notes", {"title": title, "body": f"{p['high']}"}, match, "high_noted"),
                _one_row("notes")]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # the travel time by the other mode, or misread
        p = task.private_params
        out[3].arguments["body"] = out[3].arguments["body"].replace(f"{p['minutes']} min", f"{p['minutes'] + 7} min")
        return out


VARIANTS = (ReceiptToExpense(), MissedToContact(), TripPlan())
