"""F02: answer a question by querying and aggregating rows; the answer is typed."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.calendar import add_event
from generators.phone.apps.contacts import add_random_contact
from generators.phone.families import f02_apps
from generators.phone.families.base import Family, call, finish
from generators.phone.timeparse import WEEKDAYS, resolve_date
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

NOISE_EVENTS_PER_DAY = {1: 1, 2: 2, 3: 3}
NOISE_CONTACTS = {1: 10, 2: 20, 3: 35}
ANSWER_TYPES = {"count_day": "int", "first_start": "time", "company_count": "int"}


class QueryAggregate(Family):
    """Read, count or find the earliest; change nothing."""

    id = "F02"
    title = "query and aggregate, answer typed"
    tags = ("query", "aggregation")
    templates = tuple(f"{v}.{w}" for v in ("count_day", "first_start", "company_count")
                      for w in ("direct", "casual", "terse"))
    tools = ("calendar_list_events", "calendar_create_event", "calendar_update_event", "calendar_delete_event",
             "alarms_list", "contacts_search", "contacts_list", "contacts_get", "contacts_update",
             "device_get_settings")
    hard_claims = True  # an answer backed by a made-up fact is a failure
    splits = {"count_day": "train", "company_count": "train", "spend_category": "train", "first_start": "dev",
              "missed_caller": "test", "trip_weather": "challenge"}
    apart = f02_apps.VARIANTS  # the variants that put other apps to work
    knobs = {"noise": "events per other day 1/2/3, contacts 10/20/35", "targets": "more matching rows"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        private: dict[str, Any] = {"variant": variant, "answer_type": ANSWER_TYPES[variant], "user_facts": {}}
        if variant == "company_count":
            company = rng.choice(seeddata.COMPANIES)
            private["n_targets"] = rng.randint(1, 2 + 3 * levels["targets"])
            return {"company": company}, private
        offset = rng.randint(1, 5)
        day = (DEFAULT_START + timedelta(days=offset)).weekday()
        day_arg = "tomorrow" if offset == 1 else WEEKDAYS[day]
        private.update(day_arg=day_arg, n_targets=rng.randint(1, 2 + levels["targets"]))
        return {"day_phrase": "tomorrow" if offset == 1 else f"on {WEEKDAYS[day].capitalize()}"}, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p, d = task.private_params, self.level(task, "noise")
        if p["variant"] == "company_count":
            company, taken = task.public_params["company"], set()
            for _ in range(p["n_targets"]):
                row = add_random_contact(world, rng, taken)
                row["company"] = company
            for _ in range(NOISE_CONTACTS[d]):
                row = add_random_contact(world, rng, taken)
                if row["company"] == company:  # noise must not change the answer the params promise
                    row["company"] = rng.choice([c for c in seeddata.COMPANIES if c != company])
            return
        target = resolve_date(p["day_arg"], world.now)
        for offset in range(-1, 8):
            day = world.now.date() + timedelta(days=offset)
            count = p["n_targets"] if day == target else rng.randint(0, NOISE_EVENTS_PER_DAY[d])
            slots = sorted(rng.sample(range(14, 38), count))  # half-hour slots from 07:00 to 18:30
            for slot in slots:
                start = f"{slot // 2:02d}:{30 * (slot % 2):02d}"
                end = f"{slot // 2 + 1:02d}:{30 * (slot % 2):02d}"
                add_event(world, rng.choice(seeddata.EVENT_TITLES), day.isoformat(), start, end,
                          rng.choice(seeddata.LOCATIONS))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        p = task.private_params
        if p["variant"] == "company_count":
            rows = world.table("contacts").rows.values()
            return {"expected_answer": sum(r["company"] == task.public_params["company"] for r in rows)}
        day = resolve_date(p["day_arg"], world.now).isoformat()
        starts = sorted(r["start"] for r in world.table("events").rows.values() if r["date"] == day)
        return {"expected_answer": len(starts) if p["variant"] == "count_day" else starts[0], "date": day}

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        if p["variant"] == "company_count":
            read = call("contacts_search", query=task.public_params["company"], page_size=50)
        else:
            read = call("calendar_list_events", date=p["day_arg"])
        return [read, finish(answer=p["expected_answer"], summary=f"The answer is {p['expected_answer']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        return [
            Requirement(id="answer", kind="answer", description="the typed answer is right", weight=2.0,
                        params={"expected": p["expected_answer"], "type": p["answer_type"]}),
            Requirement(id="read_only", kind="allowed_changes", description="a question changes nothing",
                        noop_passes=True, params={"allow": []}),
        ]
