"""Mail: folders, search, read, send (needs a network), attachments by name.

``read`` is incidental. An attachment is ``{"name", "text"}``: its text stands in
for the file's contents, so a task can carry a fact out of an attachment.
"""

from __future__ import annotations

from typing import Any

from generators.phone.apps.contacts import paginate
from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "mail"
FOLDERS = ["inbox", "sent", "archive"]
_PAGE = {"page": {"type": "integer", "minimum": 1}, "page_size": {"type": "integer", "minimum": 1, "maximum": 50}}


def install(world: World) -> None:
    """Add the (empty) mails table."""
    world.add_table("mails", key="id", incidental=("read",), app=APP, unordered=("attachments",))


def add_mail(world: World, sender: str, subject: str, body: str, *, to: str = "me@phone.local",
             folder: str = "inbox", at: str = "", attachments: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """Insert a mail with a fresh id."""
    row = {"id": world.next_id("mail"), "folder": folder, "sender": sender, "to": to, "subject": subject,
           "body": body, "at": at or world.now.isoformat(timespec="minutes"),
           "attachments": list(attachments or []), "read": folder != "inbox"}
    return world.table("mails").insert(row)


def _header(r: dict[str, Any]) -> dict[str, Any]:
    return {"id": r["id"], "folder": r["folder"], "from": r["sender"], "to": r["to"], "subject": r["subject"],
            "at": r["at"], "attachments": [a["name"] for a in r["attachments"]]}


def _row(world: World, mail_id: str, reading: bool = False) -> dict[str, Any]:
    """The mail (``reading``: only to read it, so a table still shared with the kept world is not copied)."""
    table = world.table("mails")
    row = table.peek(mail_id) if reading else table.get(mail_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no mail with id {mail_id!r}", hint="find the id with mail_search or mail_list")
    return row


def _newest(world: World) -> list[dict[str, Any]]:
    return sorted(world.table("mails").readable().values(), key=lambda r: (r["at"], r["id"]), reverse=True)


@tool("mail_list", APP, "read", "List mail headers in a folder, newest first. Paginated.",
      params(folder={"type": "string", "enum": FOLDERS}, **_PAGE))
def list_mail(world: World, folder: str = "inbox", page: int = 1, page_size: int = 10) -> dict[str, Any]:
    return paginate([_header(r) for r in _newest(world) if r["folder"] == folder], page, page_size)


@tool("mail_search", APP, "read", "Search mail by sender, subject or body text (substring), newest first. Paginated.",
      params(["query"], query={"type": "string"}, **_PAGE))
def search_mail(world: World, query: str, page: int = 1, page_size: int = 10) -> dict[str, Any]:
    q = query.strip().lower()
    if not q:
        raise PhoneError("INVALID_ARGUMENT", "query is empty", hint="search for a sender, a subject word or a phrase")
    hits = [_header(r) for r in _newest(world) if q in f"{r['sender']} {r['subject']} {r['body']}".lower()]
    return paginate(hits, page, page_size)


@tool("mail_read", APP, "read", "Read one mail: headers, body and attachment names.",
      params(["mail_id"], mail_id={"type": "string"}))
def read(world: World, mail_id: str) -> dict[str, Any]:
    row = _row(world, mail_id, reading=True)
    if not row["read"]:  # the table is copied only to change it
        _row(world, mail_id)["read"] = True
    return {**_header(row), "body": row["body"]}


@tool("mail_open_attachment", APP, "read", "Open an attachment of a mail and return its text.",
      params(["mail_id", "name"], mail_id={"type": "string"}, name={"type": "string"}))
def open_attachment(world: World, mail_id: str, name: str) -> dict[str, Any]:
    row = _row(world, mail_id, reading=True)
    for a in row["attachments"]:
        if a["name"] == name:
            return {"mail_id": mail_id, "name": name, "text": a["text"]}
    raise PhoneError("NOT_FOUND", f"mail {mail_id} has no attachment {name!r}",
                     hint=f"attachments: {[a['name'] for a in row['attachments']]}")


@tool("mail_send", APP, "write", "Send a mail.",
      params(["to", "subject", "body"], to={"type": "string"}, subject={"type": "string"}, body={"type": "string"}),
      ("network",), sensitive="sends to new recipients")
def send(world: World, to: str, subject: str, body: str) -> dict[str, Any]:
    if "@" not in to:
        raise PhoneError("INVALID_ARGUMENT", f"{to!r} is not an email address", hint="look the address up in contacts")
    return _header(add_mail(world, "me@phone.local", subject, body, to=to, folder="sent"))


@tool("mail_archive", APP, "write", "Move a mail to the archive folder.", params(["mail_id"], mail_id={"type": "string"}))
def archive(world: World, mail_id: str) -> dict[str, Any]:
    row = _row(world, mail_id)
    row["folder"] = "archive"
    return _header(row)
