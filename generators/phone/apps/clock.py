"""Clock timers: they run on the virtual clock, so a timer set now is done after enough calls."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "clock"


def install(world: World) -> None:
    """Add the timers table."""
    world.add_table("timers", key="id", app=APP)


def _view(world: World, r: dict[str, Any]) -> dict[str, Any]:
    left = max(0, int((datetime.fromisoformat(r["ends_at"]) - world.now).total_seconds()))
    return {**r, "seconds_left": left, "done": left == 0}


@tool("timers_start", APP, "write", "Start a countdown timer.",
      params(["minutes"], minutes={"type": "integer", "minimum": 1, "maximum": 1440}, label={"type": "string"}))
def start(world: World, minutes: int, label: str = "") -> dict[str, Any]:
    row = {"id": world.next_id("tm"), "label": label, "minutes": minutes,
           "ends_at": (world.now + timedelta(minutes=minutes)).isoformat()}
    return _view(world, world.table("timers").insert(row))


@tool("timers_list", APP, "read", "List timers with the seconds left (0 when done), optionally by label.",
      params(query={"type": "string"}))
def list_timers(world: World, query: str | None = None) -> dict[str, Any]:
    q = (query or "").strip().lower()
    return {"items": [_view(world, r) for r in sorted(world.table("timers").readable().values(), key=lambda r: r["id"])
                      if q in r["label"].lower()]}


@tool("timers_cancel", APP, "write", "Cancel a timer.", params(["timer_id"], timer_id={"type": "string"}))
def cancel(world: World, timer_id: str) -> dict[str, Any]:
    if world.table("timers").get(timer_id) is None:
        raise PhoneError("NOT_FOUND", f"no timer {timer_id!r}", hint="find it with timers_list")
    del world.table("timers").rows[timer_id]
    return {"cancelled": timer_id}
