"""Calls: the call log and dialling. Dialling needs the phone permission."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.contacts import paginate
from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "phone"
_PAGE = {"page": {"type": "integer", "minimum": 1}, "page_size": {"type": "integer", "minimum": 1, "maximum": 50}}


def install(world: World) -> None:
    """Add the call log."""
    world.add_table("call_log", key="id", incidental=("seen",), app=APP)


def seed(world: World, rng: random.Random) -> None:
    """A few recent calls from numbers (contacts are added later by families)."""
    for _ in range(rng.randint(3, 7)):
        at = (world.now - timedelta(hours=rng.randint(1, 24 * 7))).isoformat(timespec="minutes")
        world.table("call_log").insert({"id": world.next_id("call"), "number": seeddata.phone_number(rng),
                                        "direction": rng.choice(["in", "out", "missed"]),
                                        "seconds": rng.randint(0, 900), "at": at, "seen": True})


@tool("calls_list", "phone", "read", "The call log, newest first; optionally only missed calls. Paginated.",
      params(missed_only={"type": "boolean"}, **_PAGE))
def list_calls(world: World, missed_only: bool = False, page: int = 1, page_size: int = 10) -> dict[str, Any]:
    rows = sorted(world.table("call_log").readable().values(), key=lambda r: (r["at"], r["id"]), reverse=True)
    hits = [{k: v for k, v in r.items() if k != "seen"} for r in rows if not missed_only or r["direction"] == "missed"]
    return paginate(hits, page, page_size)


@tool("calls_dial", "phone", "write", "Call a contact (by id) or a number.",
      params(contact_id={"type": "string"}, number={"type": "string"}), ("permission:phone",), sensitive="sends to new recipients")
def dial(world: World, contact_id: str | None = None, number: str | None = None) -> dict[str, Any]:
    if (contact_id is None) == (number is None):
        raise PhoneError("INVALID_ARGUMENT", "give exactly one of contact_id or number")
    if contact_id is not None:
        row = world.table("contacts").peek(contact_id)
        if row is None or not row["phone"]:
            raise PhoneError("NOT_FOUND", f"no contact {contact_id!r} with a phone number",
                             hint="find the id with contacts_search")
        number = row["phone"]
    entry = {"id": world.next_id("call"), "number": number, "direction": "out", "seconds": 0,
             "at": world.now.isoformat(timespec="minutes"), "seen": True}
    return dict(world.table("call_log").insert(entry))
