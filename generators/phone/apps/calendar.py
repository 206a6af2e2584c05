"""Calendar and clock: events and alarms. Relative dates resolve on the virtual clock."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from generators.phone.apps.contacts import paginate
from generators.phone.timeparse import parse_time, resolve_date
from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "calendar"
NEEDS = ("permission:calendar",)
_DATE = {"type": "string", "description": "YYYY-MM-DD or relative: today, tomorrow, friday, next monday, in 3 days"}
_TIME = {"type": "string", "description": "HH:MM (24-hour) or '7:30 pm'"}
_PAGE = {"page": {"type": "integer", "minimum": 1}, "page_size": {"type": "integer", "minimum": 1, "maximum": 50}}


def install(world: World) -> None:
    """Add the (empty) events and alarms tables."""
    world.add_table("events", key="id", incidental=("updated_at",), app=APP)
    world.add_table("alarms", key="id", incidental=("updated_at",), app="clock")


def add_event(world: World, title: str, day: str, start: str, end: str, location: str = "") -> dict[str, Any]:
    """Insert an event (``day`` ISO, times HH:MM) with a fresh id."""
    row = {"id": world.next_id("ev"), "title": title, "date": day, "start": start, "end": end,
           "location": location, "updated_at": world.now.isoformat()}
    return world.table("events").insert(row)


def add_alarm(world: World, time: str, label: str = "", enabled: bool = True) -> dict[str, Any]:
    """Insert an alarm with a fresh id."""
    row = {"id": world.next_id("al"), "time": time, "label": label, "enabled": enabled,
           "updated_at": world.now.isoformat()}
    return world.table("alarms").insert(row)


def _end_after(start: str, minutes: int) -> str:
    t = datetime(2000, 1, 1, int(start[:2]), int(start[3:])) + timedelta(minutes=minutes)
    return "23:59" if t.day > 1 else t.strftime("%H:%M")  # events do not run past midnight


def _row(world: World, table: str, key: str) -> dict[str, Any]:
    row = world.table(table).get(key)
    if row is None:
        lister = "calendar_list_events" if table == "events" else "alarms_list"
        raise PhoneError("NOT_FOUND", f"no {table[:-1]} with id {key!r}", hint=f"find the id with {lister}")
    return row


@tool("calendar_list_events", APP, "read",
      "List events sorted by date and start time, optionally on one date, in a date range, or matching a "
      "title query. Paginated.",
      params(date=_DATE, start_date=_DATE, end_date=_DATE, query={"type": "string"}, **_PAGE), NEEDS)
def list_events(world: World, date: str | None = None, start_date: str | None = None,
                end_date: str | None = None, query: str = "", page: int = 1, page_size: int = 10) -> dict[str, Any]:
    lo = hi = resolve_date(date, world.now).isoformat() if date else None
    if start_date:
        lo = resolve_date(start_date, world.now).isoformat()
    if end_date:
        hi = resolve_date(end_date, world.now).isoformat()
    rows = sorted(world.table("events").readable().values(), key=lambda r: (r["date"], r["start"], r["id"]))
    hits = [
        {k: r[k] for k in ("id", "title", "date", "start", "end", "location")}
        for r in rows
        if (lo is None or r["date"] >= lo) and (hi is None or r["date"] <= hi) and query.lower() in r["title"].lower()
    ]
    return paginate(hits, page, page_size)


@tool("calendar_create_event", APP, "write", "Create an event. Give an end time or a duration (default 60 min).",
      params(["title", "date", "start"], title={"type": "string"}, date=_DATE, start=_TIME, end=_TIME,
             duration_minutes={"type": "integer", "minimum": 1, "maximum": 1440}, location={"type": "string"}), NEEDS)
def create_event(world: World, title: str, date: str, start: str, end: str | None = None,
                 duration_minutes: int = 60, location: str = "") -> dict[str, Any]:
    day, begin = resolve_date(date, world.now).isoformat(), parse_time(start)
    finish = parse_time(end) if end else _end_after(begin, duration_minutes)
    if finish <= begin:
        raise PhoneError("INVALID_ARGUMENT", f"end {finish} is not after start {begin}")
    return dict(add_event(world, title.strip(), day, begin, finish, location))


@tool("calendar_update_event", APP, "write", "Change an event; only the fields given are changed.",
      params(["event_id"], event_id={"type": "string"}, title={"type": "string"}, date=_DATE, start=_TIME,
             end=_TIME, location={"type": "string"}), NEEDS)
def update_event(world: World, event_id: str, title: str | None = None, date: str | None = None,
                 start: str | None = None, end: str | None = None, location: str | None = None) -> dict[str, Any]:
    row = _row(world, "events", event_id)
    new = dict(row)
    if title is not None:
        new["title"] = title
    if date is not None:
        new["date"] = resolve_date(date, world.now).isoformat()
    if start is not None:
        length = _minutes(row["end"]) - _minutes(row["start"])
        new["start"] = parse_time(start)
        new["end"] = _end_after(new["start"], length)  # moving an event keeps its length
    if end is not None:
        new["end"] = parse_time(end)
    if location is not None:
        new["location"] = location
    if new["end"] <= new["start"]:
        raise PhoneError("INVALID_ARGUMENT", f"end {new['end']} is not after start {new['start']}")
    new["updated_at"] = world.now.isoformat()
    row.update(new)
    return dict(row)


def _minutes(hhmm: str) -> int:
    return int(hhmm[:2]) * 60 + int(hhmm[3:])


@tool("calendar_delete_event", APP, "write", "Delete an event.", params(["event_id"], event_id={"type": "string"}),
      NEEDS, sensitive="deletes")
def delete_event(world: World, event_id: str) -> dict[str, Any]:
    row = _row(world, "events", event_id)
    del world.table("events").rows[event_id]
    return {"deleted": event_id, "title": row["title"], "date": row["date"]}


@tool("alarms_list", "clock", "read", "List alarms sorted by time, optionally those whose label contains a word.",
      params(query={"type": "string"}))
def list_alarms(world: World, query: str | None = None) -> dict[str, Any]:
    q = (query or "").strip().lower()
    rows = sorted(world.table("alarms").readable().values(), key=lambda r: (r["time"], r["id"]))
    return {"items": [{k: r[k] for k in ("id", "time", "label", "enabled")} for r in rows if q in r["label"].lower()]}


@tool("alarms_create", "clock", "write", "Create an alarm.",
      params(["time"], time=_TIME, label={"type": "string"}))
def create_alarm(world: World, time: str, label: str = "") -> dict[str, Any]:
    return dict(add_alarm(world, parse_time(time), label))


@tool("alarms_update", "clock", "write", "Change an alarm's time, label or whether it is on.",
      params(["alarm_id"], alarm_id={"type": "string"}, time=_TIME, label={"type": "string"},
             enabled={"type": "boolean"}))
def update_alarm(world: World, alarm_id: str, time: str | None = None, label: str | None = None,
                 enabled: bool | None = None) -> dict[str, Any]:
    row = _row(world, "alarms", alarm_id)
    new_time = parse_time(time) if time is not None else row["time"]  # parse before touching the row
    row.update(time=new_time, updated_at=world.now.isoformat())
    if label is not None:
        row["label"] = label
    if enabled is not None:
        row["enabled"] = enabled
    return dict(row)


@tool("alarms_delete", "clock", "write", "Delete an alarm.", params(["alarm_id"], alarm_id={"type": "string"}), sensitive="deletes")
def delete_alarm(world: World, alarm_id: str) -> dict[str, Any]:
    _row(world, "alarms", alarm_id)
    del world.table("alarms").rows[alarm_id]
    return {"deleted": alarm_id}
