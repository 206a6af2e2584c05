"""Messages: conversations with contacts; sending needs the SMS permission and a network.

``read`` is incidental: opening a thread is not a change.
"""

from __future__ import annotations

from typing import Any

from generators.phone.apps.contacts import paginate
from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "messages"
NEEDS = ("permission:sms",)
_PAGE = {"page": {"type": "integer", "minimum": 1}, "page_size": {"type": "integer", "minimum": 1, "maximum": 50}}


def install(world: World) -> None:
    """Add the (empty) messages table."""
    world.add_table("messages", key="id", incidental=("read",), app=APP)


def add_message(world: World, contact_id: str, text: str, *, incoming: bool = True, at: str = "") -> dict[str, Any]:
    """Insert a message in a contact's thread with a fresh id."""
    row = {"id": world.next_id("m"), "contact_id": contact_id, "direction": "in" if incoming else "out",
           "text": text, "at": at or world.now.isoformat(timespec="minutes"), "read": not incoming}
    return world.table("messages").insert(row)


def _contact_name(world: World, contact_id: str) -> str:
    row = world.tables["contacts"].peek(contact_id) if "contacts" in world.tables else None
    return f"{row['first_name']} {row['last_name']}" if row else contact_id


def _view(world: World, r: dict[str, Any]) -> dict[str, Any]:
    return {"id": r["id"], "contact_id": r["contact_id"], "contact": _contact_name(world, r["contact_id"]),
            "direction": r["direction"], "text": r["text"], "at": r["at"]}


@tool("messages_list", APP, "read", "List messages newest first, optionally only one contact's thread. Paginated.",
      params(contact_id={"type": "string"}, **_PAGE), NEEDS)
def list_messages(world: World, contact_id: str | None = None, page: int = 1, page_size: int = 10) -> dict[str, Any]:
    table = world.table("messages")
    rows = sorted(table.readable().values(), key=lambda r: (r["at"], r["id"]), reverse=True)
    hits = [r for r in rows if contact_id is None or r["contact_id"] == contact_id]
    for r in hits[(page - 1) * page_size: page * page_size]:
        if not r["read"]:  # the table is copied only when a message is shown for the first time
            table.rows[r["id"]]["read"] = True
    return paginate([_view(world, r) for r in hits], page, page_size)


@tool("messages_search", APP, "read", "Search messages by text or by the contact's name (substring). Paginated.",
      params(["query"], query={"type": "string"}, **_PAGE), NEEDS)
def search_messages(world: World, query: str, page: int = 1, page_size: int = 10) -> dict[str, Any]:
    q = query.strip().lower()
    if not q:
        raise PhoneError("INVALID_ARGUMENT", "query is empty", hint="search for a word or a name")
    rows = sorted(world.table("messages").readable().values(), key=lambda r: (r["at"], r["id"]), reverse=True)
    hits = [_view(world, r) for r in rows if q in r["text"].lower() or q in _contact_name(world, r["contact_id"]).lower()]
    return paginate(hits, page, page_size)


@tool("messages_send", APP, "write", "Send a text message to a contact (by contact id).",
      params(["contact_id", "text"], contact_id={"type": "string"}, text={"type": "string"}), NEEDS + ("network",), sensitive="sends to new recipients")
def send(world: World, contact_id: str, text: str) -> dict[str, Any]:
    if "contacts" in world.tables and world.table("contacts").peek(contact_id) is None:
        raise PhoneError("NOT_FOUND", f"no contact with id {contact_id!r}", hint="find the id with contacts_search")
    if not text.strip():
        raise PhoneError("INVALID_ARGUMENT", "text is empty", hint="write the message text")
    return _view(world, add_message(world, contact_id, text.strip(), incoming=False))


@tool("messages_delete", APP, "write", "Delete one message.", params(["message_id"], message_id={"type": "string"}),
      NEEDS, sensitive="deletes")
def delete(world: World, message_id: str) -> dict[str, Any]:
    if world.table("messages").get(message_id) is None:
        raise PhoneError("NOT_FOUND", f"no message with id {message_id!r}", hint="find the id with messages_list")
    del world.table("messages").rows[message_id]
    return {"deleted": message_id}
