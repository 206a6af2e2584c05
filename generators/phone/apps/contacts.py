"""Contacts: search, list (paginated), get, create, update, delete, sync.

``last_viewed`` and ``updated_at`` are incidental: opening a contact is not a change.
"""

from __future__ import annotations

import random
from typing import Any

from generators.phone import seeddata
from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "contacts"
NEEDS = ("permission:contacts",)
FIELDS = ("first_name", "last_name", "phone", "email", "company", "favorite")
_PAGE = {
    "page": {"type": "integer", "minimum": 1, "description": "1-based page number (default 1)"},
    "page_size": {"type": "integer", "minimum": 1, "maximum": 50, "description": "rows per page (default 10)"},
}


def install(world: World) -> None:
    """Add the (empty) contacts table."""
    world.add_table("contacts", key="id", incidental=("last_viewed", "updated_at"), app=APP)


def add_contact(world: World, first: str, last: str, *, phone: str = "", email: str = "",
                company: str = "", favorite: bool = False) -> dict[str, Any]:
    """Insert a contact with a fresh id (used by world builders and by contacts_create)."""
    row = {"id": world.next_id("c"), "first_name": first, "last_name": last, "phone": phone, "email": email,
           "company": company, "favorite": favorite, "last_viewed": None, "updated_at": world.now.isoformat()}
    return world.table("contacts").insert(row)


def add_random_contact(world: World, rng: random.Random, taken: set[tuple[str, str]]) -> dict[str, Any]:
    """A realistic noise contact whose full name is not in ``taken`` (which is updated)."""
    while True:
        first, last = rng.choice(seeddata.FIRST_NAMES), rng.choice(seeddata.LAST_NAMES)
        if (first, last) not in taken:
            break
    taken.add((first, last))
    company = rng.choice(seeddata.COMPANIES) if rng.random() < 0.6 else ""
    return add_contact(world, first, last, phone=seeddata.phone_number(rng),
                       email=seeddata.email_for(first, last, rng), company=company, favorite=rng.random() < 0.15)


def summary(row: dict[str, Any]) -> dict[str, Any]:
    """What list and search show for a contact."""
    return {"id": row["id"], "name": f"{row['first_name']} {row['last_name']}", "phone": row["phone"],
            "email": row["email"], "company": row["company"]}


def paginate(items: list[Any], page: int, page_size: int) -> dict[str, Any]:
    """One page of ``items`` with the totals an agent needs to decide whether to read on."""
    start = (page - 1) * page_size
    return {"items": items[start:start + page_size], "page": page, "page_size": page_size,
            "total": len(items), "has_more": start + page_size < len(items)}


def _by_name(r: dict[str, Any]) -> tuple[str, str, str]:
    return r["last_name"], r["first_name"], r["id"]


def _sorted_rows(world: World) -> list[dict[str, Any]]:
    return sorted(world.table("contacts").readable().values(), key=_by_name)


def _row(world: World, contact_id: str) -> dict[str, Any]:
    row = world.table("contacts").get(contact_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no contact with id {contact_id!r}",
                         hint="find the id with contacts_search or contacts_list")
    return row


@tool("contacts_search", APP, "read",
      "Search contacts by name, phone, email or company (case-insensitive substring). Paginated.",
      params(["query"], query={"type": "string"}, **_PAGE), NEEDS)
def search(world: World, query: str, page: int = 1, page_size: int = 10) -> dict[str, Any]:
    q = query.strip().lower()
    if not q:
        raise PhoneError("INVALID_ARGUMENT", "query is empty", hint="search for part of a name, number or email")
    digits = "".join(ch for ch in q if ch.isdigit())
    by_digits = len(digits) >= 4  # a number typed in any format
    hits = [r for r in world.table("contacts").readable().values()
            if q in f"{r['first_name']} {r['last_name']} {r['email']} {r['company']}".lower() or q in r["phone"].lower()
            or (by_digits and digits in "".join(ch for ch in r["phone"] if ch.isdigit()))]
    hits.sort(key=_by_name)
    return paginate([summary(r) for r in hits], page, page_size)


@tool("contacts_list", APP, "read", "List all contacts sorted by last name. Paginated.",
      params(favorites_only={"type": "boolean"}, **_PAGE), NEEDS)
def list_contacts(world: World, favorites_only: bool = False, page: int = 1, page_size: int = 10) -> dict[str, Any]:
    rows = [summary(r) for r in _sorted_rows(world) if r["favorite"] or not favorites_only]
    return paginate(rows, page, page_size)


@tool("contacts_get", APP, "read", "Get one contact with all its fields.",
      params(["contact_id"], contact_id={"type": "string"}), NEEDS)
def get(world: World, contact_id: str) -> dict[str, Any]:
    row = _row(world, contact_id)
    row["last_viewed"] = world.now.isoformat()
    return dict(row)


_EDITABLE = {
    "first_name": {"type": "string"}, "last_name": {"type": "string"}, "phone": {"type": "string"},
    "email": {"type": "string"}, "company": {"type": "string"}, "favorite": {"type": "boolean"},
}


@tool("contacts_create", APP, "write", "Create a contact. Returns it with its new id.",
      params(["first_name", "last_name"], **_EDITABLE), NEEDS)
def create(world: World, first_name: str, last_name: str, phone: str = "", email: str = "",
           company: str = "", favorite: bool = False) -> dict[str, Any]:
    if not first_name.strip() or not last_name.strip():
        raise PhoneError("INVALID_ARGUMENT", "first_name and last_name must not be empty")
    if not phone and not email:
        raise PhoneError("INVALID_ARGUMENT", "a contact needs a phone or an email", hint="pass phone or email")
    return dict(add_contact(world, first_name.strip(), last_name.strip(), phone=phone, email=email,
                            company=company, favorite=favorite))


@tool("contacts_update", APP, "write", "Change fields of a contact; only the fields given are changed.",
      params(["contact_id"], contact_id={"type": "string"}, **_EDITABLE), NEEDS)
def update(world: World, contact_id: str, **changes: Any) -> dict[str, Any]:
    if not changes:
        raise PhoneError("INVALID_ARGUMENT", "nothing to change", hint=f"pass one or more of {list(FIELDS)}")
    row = _row(world, contact_id)
    row.update(changes)
    row["updated_at"] = world.now.isoformat()
    return dict(row)


@tool("contacts_delete", APP, "write", "Delete a contact permanently.",
      params(["contact_id"], contact_id={"type": "string"}), NEEDS, sensitive="deletes")
def delete(world: World, contact_id: str) -> dict[str, Any]:
    row = _row(world, contact_id)
    del world.table("contacts").rows[contact_id]
    return {"deleted": contact_id, "name": f"{row['first_name']} {row['last_name']}"}


@tool("contacts_sync", APP, "meta", "Sync contacts with the cloud account.", params(), NEEDS + ("network",))
def sync(world: World) -> dict[str, Any]:
    return {"synced": len(world.table("contacts").readable()), "at": world.now.isoformat()}
