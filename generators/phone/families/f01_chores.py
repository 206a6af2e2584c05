"""F01 chores across the apps: remove or change exactly one row found by its name, among
others like it (timers, alarms, notes, to-dos, files, trips, events, mails, texts).

Each chore is data (a ``Chore``): the table, how a row is added, the read call that finds
it, the write and what the write changes. One ``ChoreVariant`` class runs them all: the
target hides among rows of the same kind, every other row of them is a minefield.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps import files, travel
from generators.phone.apps.calendar import add_alarm, add_event
from generators.phone.apps.mail import add_mail
from generators.phone.apps.messages import add_message
from generators.phone.apps.notes import add_note, add_todo
from generators.phone.families.base import Variant, call, finish
from generators.phone.world import World
from warehouse.contract import Action, Requirement, TaskSpec

Adder = Callable[[World, random.Random, str], str]  # adds a row named by the label, returns its id


def _timer(world: World, rng: random.Random, label: str) -> str:
    minutes = rng.choice([5, 10, 20, 30, 45])
    return world.table("timers").insert({"id": world.next_id("tm"), "label": label, "minutes": minutes,
                                         "ends_at": (world.now + timedelta(minutes=minutes)).isoformat()})["id"]


def _alarm(world: World, rng: random.Random, label: str) -> str:
    return add_alarm(world, f"{rng.randint(5, 9):02d}:{rng.choice(['00', '15', '30', '45'])}", label)["id"]


def _note(world: World, rng: random.Random, label: str) -> str:
    return add_note(world, label, rng.choice(seeddata.MESSAGE_TEXTS))["id"]


def _todo(world: World, rng: random.Random, label: str) -> str:
    return add_todo(world, label, (world.now.date() + timedelta(days=rng.randint(0, 9))).isoformat())["id"]


def _file(world: World, rng: random.Random, label: str) -> str:
    return files.add_file(world, label, "Downloads", "document", f"{label} contents")["id"]


def _trip(world: World, rng: random.Random, label: str) -> str:
    day = world.now.date() + timedelta(days=rng.randint(3, 40))
    return world.table("trips").insert({"id": world.next_id("trip"), "city": label, "start": day.isoformat(),
                                        "end": (day + timedelta(days=3)).isoformat(),
                                        "hotel": f"Hotel {label} Central"})["id"]


def _event(world: World, rng: random.Random, label: str) -> str:
    day = world.now.date() + timedelta(days=rng.randint(1, 6))
    slot = rng.randrange(16, 34)
    start, end = f"{slot // 2:02d}:{30 * (slot % 2):02d}", f"{slot // 2 + 1:02d}:{30 * (slot % 2):02d}"
    return add_event(world, label, day.isoformat(), start, end, rng.choice(seeddata.LOCATIONS))["id"]


def _mail(world: World, rng: random.Random, label: str) -> str:
    first, last = rng.choice(seeddata.FIRST_NAMES), rng.choice(seeddata.LAST_NAMES)
    at = (world.now - timedelta(hours=rng.randint(2, 200))).isoformat(timespec="minutes")
    return add_mail(world, seeddata.email_for(first, last, rng), label, rng.choice(seeddata.MESSAGE_TEXTS), at=at)["id"]


def _text(world: World, rng: random.Random, label: str) -> str:
    at = (world.now - timedelta(hours=rng.randint(2, 200))).isoformat(timespec="minutes")
    return add_message(world, f"c-{rng.randint(900, 999):04d}", label, at=at)["id"]


@dataclass(frozen=True)
class Chore:
    """One kind of chore: remove (``change`` None) or change one row of ``table``."""

    name: str
    table: str
    id_arg: str
    write: str
    look: Callable[[str], Action]
    labels: tuple[str, ...]
    add: Adder
    change: Callable[[random.Random], dict[str, Any]] | None = None  # the write's other arguments
    after: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # fields after the write (default: ``change``)
    neighbours: tuple[str, ...] = ()
    clear: bool = False  # start the table empty (its seeded rows could share a label)


def _hhmm(rng: random.Random) -> str:
    return f"{rng.randint(5, 10):02d}:{rng.choice(['05', '20', '40', '50'])}"


ALARM_LABELS = ("Gym", "Pills", "School run", "Wake up", "Standup", "Bins out", "Plants")
TIMER_LABELS = ("Pasta", "Laundry", "Tea", "Parking", "Oven", "Nap", "Eggs")
TODO_LABELS = ("Renew passport", "Book dentist", "Pay water bill", "Return library books", "Call plumber",
               "Buy birthday card", "Fix bike light")
FILE_LABELS = ("Flight itinerary.pdf", "Gym membership.pdf", "Warranty TV.pdf", "Meeting slides.pptx",
               "Wedding guest list.xlsx", "Old resume.docx", "Car loan.pdf")
MAIL_SUBJECTS = ("Your order has shipped", "Weekly newsletter", "Invoice 2291", "Team offsite agenda",
                 "Password reset", "Dinner on Friday?", "Your parking permit")
CHORES = (
    Chore("cancel_timer", "timers", "timer_id", "timers_cancel", lambda lab: call("timers_list", query=lab), TIMER_LABELS,
          _timer, neighbours=("timers_list", "timers_start", "alarms_list", "alarms_delete")),
    Chore("delete_alarm", "alarms", "alarm_id", "alarms_delete", lambda lab: call("alarms_list", query=lab), ALARM_LABELS,
          _alarm, neighbours=("alarms_list", "alarms_update", "alarms_create", "timers_cancel")),
    Chore("change_alarm", "alarms", "alarm_id", "alarms_update", lambda lab: call("alarms_list", query=lab), ALARM_LABELS,
          _alarm, change=lambda rng: {"time": _hhmm(rng)},
          neighbours=("alarms_list", "alarms_delete", "alarms_create", "timers_start")),
    Chore("delete_note", "notes", "note_id", "notes_delete", lambda lab: call("notes_search", query=lab),
          tuple(seeddata.NOTE_TITLES), _note, neighbours=("notes_search", "notes_list", "notes_get", "notes_update")),
    Chore("edit_note", "notes", "note_id", "notes_update", lambda lab: call("notes_search", query=lab),
          tuple(seeddata.NOTE_TITLES), _note,
          change=lambda rng: {"body": f"{rng.choice(seeddata.REQUESTS)} (updated {rng.randint(2, 28)} March)"},
          neighbours=("notes_search", "notes_get", "notes_delete", "notes_create")),
    Chore("complete_todo", "todos", "todo_id", "todos_complete", lambda lab: call("todos_list", query=lab), TODO_LABELS, _todo,
          after=lambda change: {"done": True}, neighbours=("todos_list", "todos_create", "notes_search")),
    Chore("delete_file", "files", "file_id", "files_delete", lambda lab: call("files_search", query=lab),
          FILE_LABELS, _file, neighbours=("files_search", "files_list", "files_move")),
    Chore("move_file", "files", "file_id", "files_move", lambda lab: call("files_search", query=lab), FILE_LABELS,
          _file, change=lambda rng: {"folder": rng.choice(["Work", "Archive", "Taxes", "Travel"])},
          neighbours=("files_search", "files_list", "files_delete")),
    Chore("cancel_trip", "trips", "trip_id", "trips_cancel", lambda lab: call("trips_list", city=lab), tuple(travel.CITIES),
          _trip, neighbours=("trips_list", "weather_forecast", "maps_route"), clear=True),
    Chore("cancel_event", "events", "event_id", "calendar_delete_event",
          lambda lab: call("calendar_list_events", query=lab), tuple(seeddata.EVENT_TITLES), _event,
          neighbours=("calendar_list_events", "calendar_update_event", "calendar_create_event")),
    Chore("move_event", "events", "event_id", "calendar_update_event",
          lambda lab: call("calendar_list_events", query=lab), tuple(seeddata.EVENT_TITLES), _event,
          change=lambda rng: {"start": f"{rng.randint(13, 17):02d}:{rng.choice(['00', '30'])}"},
          neighbours=("calendar_list_events", "calendar_delete_event", "calendar_create_event")),
    Chore("archive_mail", "mails", "mail_id", "mail_archive", lambda lab: call("mail_search", query=lab),
          MAIL_SUBJECTS, _mail, after=lambda change: {"folder": "archive"},
          neighbours=("mail_search", "mail_list", "mail_read", "mail_send")),
    Chore("delete_text", "messages", "message_id", "messages_delete",
          lambda lab: call("messages_search", query=lab), tuple(seeddata.MESSAGE_TEXTS), _text,
          neighbours=("messages_search", "messages_list", "messages_send")),
)


class ChoreVariant(Variant):
    """Runs one ``Chore``: find the row by its label among others, then remove or change only it
    (``rows=2``: two rows named by their labels, each found and changed in the order asked: a task
    with two writes holds their order, or the generation gate's swapped reference would pass)."""

    def __init__(self, chore: Chore, rows: int = 1, name: str = ""):
        self.chore, self.rows, self.name = chore, rows, name or chore.name
        self.tools = (chore.write, *chore.neighbours)

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        c = self.chore
        labels = rng.sample(c.labels, min(self.rows + 2 * levels["noise"], len(c.labels)))
        change = c.change(rng) if c.change else {}
        public = {"label": labels[0], **({"second": labels[1]} if self.rows == 2 else {}), **change}
        return public, {"labels": labels, "change": change, "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        c, labels = self.chore, list(task.private_params["labels"])
        if c.clear:
            world.table(c.table).rows.clear()
        rng.shuffle(labels)  # where the target sits says nothing
        for label in labels:
            c.add(world, rng, label)

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        c, p = self.chore, task.private_params
        field = {"timers": "label", "alarms": "label", "notes": "title", "todos": "title", "files": "name",
                 "trips": "city", "events": "title", "mails": "subject", "messages": "text"}[c.table]
        ids = {r[field]: k for k, r in world.table(c.table).rows.items() if r[field] in p["labels"]}
        targets = {"target_ids": [ids[lab] for lab in p["labels"][:2]]} if self.rows == 2 else {}
        return {"target_id": ids[p["labels"][0]], **targets,
                "decoy_ids": sorted(ids[lab] for lab in p["labels"][self.rows:])}

    def _targets(self, task: TaskSpec) -> list[tuple[str, str]]:
        """(label, row id) of each row to change, in the order asked."""
        p = task.private_params
        return list(zip(p["labels"], p.get("target_ids") or [p["target_id"]], strict=False))[: self.rows]

    def solve(self, task: TaskSpec) -> list[Action]:
        c, p = self.chore, task.private_params
        steps = [step for label, target in self._targets(task)
                 for step in (c.look(label), call(c.write, **{c.id_arg: target}, **p["change"]))]
        said = " and ".join(label for label, _ in self._targets(task))
        return [*steps, finish(summary=f"Done: {said}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        c, p = self.chore, task.private_params
        targets = [target for _, target in self._targets(task)]
        if c.change is None and c.after is None:
            want: dict[str, Any] = {"removed": targets}
            op = "removed"
        else:
            fields = c.after(p["change"]) if c.after else p["change"]
            want, op = {"updated": [{"key": target, "fields": fields} for target in targets]}, "updated"
        return [
            Requirement(id="target_changed", kind="state_diff", weight=2.0, description=f"the row is {op} as asked",
                        params={"table": c.table, **want}),
            Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, description="no other row changed",
                        params={"allow": [{"table": c.table, "keys": targets, "ops": [op]}]}),
        ] + [Requirement(id=f"spare_{d}", kind="forbidden", noop_passes=True, description=f"never touch {d}",
                         params={"tool": c.write, "arguments": {c.id_arg: d}}) for d in p["decoy_ids"]] + (
            [Requirement(id="in_order", kind="order", description="the rows were changed in the order asked",
                         params={"sequence": [{"tool": a.tool, "arguments": a.arguments} for a in self.solve(task)
                                              if a.tool == c.write]})] if self.rows > 1 else [])

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        out = [a.model_copy(deep=True) for a in actions]  # the row next to it in the list
        out[1].arguments[self.chore.id_arg] = rng.choice(task.private_params["decoy_ids"])
        return out


BY_NAME = {c.name: c for c in CHORES}
# two rows of a chore whose one-row variant is held out: its tools are trained, the variant is not
PAIRS = (("complete_two_todos", "complete_todo"), ("archive_two_mails", "archive_mail"))
VARIANTS = (*(ChoreVariant(c) for c in CHORES), *(ChoreVariant(BY_NAME[one], 2, name) for name, one in PAIRS))
