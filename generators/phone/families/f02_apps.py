"""F02 variants on the wallet, calls and travel apps: read, aggregate, answer typed.

Spending in a category since a date (a number, to the cent), the number of the latest
missed call (a phone number), the forecast high on the first day of a trip (an integer).
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps import travel, wallet
from generators.phone.families.base import Variant, call, finish
from generators.phone.families.mutants import set_answer
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

SPEND_CATEGORIES = ["groceries", "dining", "transport", "shopping"]


def answer_requirements(expected: Any, kind: str) -> list[Requirement]:
    """The typed answer is right, and a question changes nothing."""
    return [
        Requirement(id="answer", kind="answer", description="the typed answer is right", weight=2.0,
                    params={"expected": expected, "type": kind}),
        Requirement(id="read_only", kind="allowed_changes", description="a question changes nothing",
                    noop_passes=True, params={"allow": []}),
    ]


def add_call(world: World, number: str, direction: str, minutes_ago: int) -> None:
    """A call-log entry ``minutes_ago`` before now."""
    at = (world.now - timedelta(minutes=minutes_ago)).isoformat(timespec="minutes")
    world.table("call_log").insert({"id": world.next_id("call"), "number": number, "direction": direction,
                                    "seconds": 0 if direction == "missed" else 120, "at": at, "seen": False})


def latest_missed(world: World) -> list[str]:
    """Numbers of missed calls, newest first."""
    rows = sorted(world.table("call_log").rows.values(), key=lambda r: (r["at"], r["id"]), reverse=True)
    return [r["number"] for r in rows if r["direction"] == "missed"]


def seed_missed_calls(world: World, rng: random.Random, distractors: int) -> None:
    """The missed call a task is about (the newest), an older missed call, and from ``distractors`` 2
    a more recent call that was answered."""
    add_call(world, seeddata.phone_number(rng), "missed", rng.randint(5, 40))
    add_call(world, seeddata.phone_number(rng), "missed", rng.randint(90, 600))
    if distractors >= 2:
        add_call(world, seeddata.phone_number(rng), "in", rng.randint(1, 4))


class SpendCategory(Variant):
    name = "spend_category"
    tools = ("wallet_list_transactions", "wallet_get_balance", "expenses_add", "wallet_send_money")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        days = rng.choice([5, 7, 10, 14])
        since = (DEFAULT_START - timedelta(days=days)).date().isoformat()
        return {"category": rng.choice(SPEND_CATEGORIES), "since": since}, {
            "answer_type": "number", "n_targets": rng.randint(1, 1 + levels["targets"]), "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        q, p = task.public_params, task.private_params
        since = date.fromisoformat(q["since"])
        for _ in range(p["n_targets"]):  # in the window and the category
            day = since + timedelta(days=rng.randint(0, (world.now.date() - since).days))
            wallet.add_transaction(world, rng.choice(wallet.MERCHANTS[q["category"]]), -round(rng.uniform(4, 80), 2),
                                   q["category"], day.isoformat())
        for _ in range(2 * self.level(task, "noise")):  # the same category just before the window: the trap
            day = since - timedelta(days=rng.randint(1, 6))
            wallet.add_transaction(world, rng.choice(wallet.MERCHANTS[q["category"]]), -round(rng.uniform(4, 80), 2),
                                   q["category"], day.isoformat())

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        q = task.public_params
        rows = [r for r in world.table("transactions").rows.values()
                if r["category"] == q["category"] and r["date"] >= q["since"] and r["amount"] < 0]
        return {"expected_answer": round(-sum(r["amount"] for r in rows), 2),
                "smallest": round(-max(r["amount"] for r in rows), 2)}

    def solve(self, task: TaskSpec) -> list[Action]:
        q, p = task.public_params, task.private_params
        return [call("wallet_list_transactions", category=q["category"], since=q["since"], page_size=50),
                finish(answer=p["expected_answer"], summary=f"You spent {p['expected_answer']:.2f} USD.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return answer_requirements(task.private_params["expected_answer"], "number")

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # one row missed (a page not read, a day off)
        p = task.private_params
        set_answer(out[-1], round(p["expected_answer"] - p["smallest"], 2))
        return out


class MissedCaller(Variant):
    name = "missed_caller"
    tools = ("calls_list", "calls_dial", "contacts_search", "contacts_create", "messages_list")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {}, {"answer_type": "phone", "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        seed_missed_calls(world, rng, self.level(task, "noise"))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        newest, older, *_ = latest_missed(world)
        return {"expected_answer": newest, "older_number": older}

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        return [call("calls_list", missed_only=True), finish(answer=p["expected_answer"],
                                                             summary=f"It was {p['expected_answer']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return answer_requirements(task.private_params["expected_answer"], "phone")

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # an older missed call, not the latest
        set_answer(out[-1], task.private_params["older_number"])
        return out


class TripWeather(Variant):
    name = "trip_weather"
    tools = ("trips_list", "weather_forecast", "maps_route", "calendar_list_events", "trips_cancel")

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        return {"city": rng.choice(travel.CITIES)}, {"answer_type": "int", "offset": rng.randint(1, 6),
                                                     "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        city = task.public_params["city"]
        world.table("trips").rows.clear()  # the seeded trip could be to the same city
        start = world.now.date() + timedelta(days=task.private_params["offset"])
        trips = [(city, start)] + [(c, world.now.date() + timedelta(days=rng.randint(1, 30)))
                                   for c in rng.sample([c for c in travel.CITIES if c != city],
                                                       self.level(task, "noise"))]
        rng.shuffle(trips)
        for c, day in trips:
            world.table("trips").insert({"id": world.next_id("trip"), "city": c, "start": day.isoformat(),
                                         "end": (day + timedelta(days=rng.randint(2, 5))).isoformat(),
                                         "hotel": f"Hotel {c} Central"})

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        city = task.public_params["city"]
        start = next(r["start"] for r in world.table("trips").rows.values() if r["city"] == city)
        return {"start": start, "expected_answer": travel.forecast(world, city, start)["high_c"]}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, city = task.private_params, task.public_params["city"]
        return [call("trips_list"), call("weather_forecast", city=city, date=p["start"]),
                finish(answer=p["expected_answer"], summary=f"High of {p['expected_answer']} C.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        return answer_requirements(task.private_params["expected_answer"], "int")


VARIANTS = (SpendCategory(), MissedCaller(), TripWeather())
