"""Files and gallery: folders of documents and photos; photos carry pre-baked OCR text.

Reading a photo's text needs the storage permission, as a real gallery would.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone.apps.contacts import paginate
from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "files"
NEEDS = ("permission:storage",)
KINDS = ["photo", "document", "audio"]
_PAGE = {"page": {"type": "integer", "minimum": 1}, "page_size": {"type": "integer", "minimum": 1, "maximum": 50}}
PHOTO_TEXTS = [
    ("receipt_{n}.jpg", "CAFE RIO  Total 14.20  Card ****{d}"), ("whiteboard_{n}.jpg", "Q3 goals: ship v2, hire 2"),
    ("parking_{n}.jpg", "Level P3, spot {d}"), ("wifi_{n}.jpg", "Network: Home5G  Password: sunflower{d}"),
    ("ticket_{n}.jpg", "Gate B{d}  Seat 14C  Boarding 09:40"), ("sunset_{n}.jpg", ""), ("dog_{n}.jpg", ""),
]
DOCS = ["Lease.pdf", "CV_2026.docx", "Tax return 2025.pdf", "Insurance card.pdf", "Recipe book.pdf"]


def install(world: World) -> None:
    """Add the files table."""
    world.add_table("files", key="id", incidental=("opened_at",), app=APP)


def add_file(world: World, name: str, folder: str, kind: str, text: str = "", at: str = "") -> dict[str, Any]:
    """Insert a file (``text`` is a photo's OCR text or a document's contents)."""
    row = {"id": world.next_id("f"), "name": name, "folder": folder, "kind": kind, "text": text,
           "created_at": at or world.now.isoformat(timespec="minutes"), "opened_at": None}
    return world.table("files").insert(row)


def seed(world: World, rng: random.Random) -> None:
    """A realistic camera roll and documents folder."""
    for n in range(rng.randint(6, 10)):
        name, text = rng.choice(PHOTO_TEXTS)
        at = (world.now - timedelta(days=rng.randint(0, 60), minutes=rng.randint(0, 1440))).isoformat(timespec="minutes")
        add_file(world, name.format(n=1000 + n), "Camera", "photo", text.format(d=rng.randint(10, 99)), at)
    for name in rng.sample(DOCS, 3):
        add_file(world, name, "Documents", "document", f"{name} contents")


def _row(world: World, file_id: str, reading: bool = False) -> dict[str, Any]:
    """The file (``reading``: only to read it, so a table still shared with the kept world is not copied)."""
    table = world.table("files")
    row = table.peek(file_id) if reading else table.get(file_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no file with id {file_id!r}", hint="find the id with files_list or files_search")
    return row


def _view(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in ("id", "name", "folder", "kind", "created_at")}


@tool("files_list", APP, "read", "List files newest first, optionally in one folder or of one kind. Paginated.",
      params(folder={"type": "string"}, kind={"type": "string", "enum": KINDS}, **_PAGE), NEEDS)
def list_files(world: World, folder: str | None = None, kind: str | None = None, page: int = 1,
               page_size: int = 10) -> dict[str, Any]:
    rows = sorted(world.table("files").readable().values(), key=lambda r: (r["created_at"], r["id"]), reverse=True)
    hits = [_view(r) for r in rows if (folder is None or r["folder"] == folder) and (kind is None or r["kind"] == kind)]
    return paginate(hits, page, page_size)


@tool("files_search", APP, "read", "Search files by name (substring). Paginated.",
      params(["query"], query={"type": "string"}, **_PAGE), NEEDS)
def search_files(world: World, query: str, page: int = 1, page_size: int = 10) -> dict[str, Any]:
    q = query.strip().lower()
    rows = sorted(world.table("files").readable().values(), key=lambda r: r["id"])
    return paginate([_view(r) for r in rows if q and q in r["name"].lower()], page, page_size)


@tool("photos_read_text", APP, "read", "Read the text in a photo (OCR).", params(["file_id"], file_id={"type": "string"}),
      NEEDS)
def read_text(world: World, file_id: str) -> dict[str, Any]:
    row = _row(world, file_id, reading=True)
    if row["kind"] != "photo":
        raise PhoneError("INVALID_ARGUMENT", f"{row['name']} is a {row['kind']}, not a photo", hint="pick a photo")
    _row(world, file_id)["opened_at"] = world.now.isoformat()  # the table is copied only now, to change it
    return {"file_id": file_id, "text": row["text"]}


@tool("files_move", APP, "write", "Move a file to another folder (created if needed).",
      params(["file_id", "folder"], file_id={"type": "string"}, folder={"type": "string"}), NEEDS)
def move(world: World, file_id: str, folder: str) -> dict[str, Any]:
    if not folder.strip():
        raise PhoneError("INVALID_ARGUMENT", "folder is empty")
    row = _row(world, file_id)
    row["folder"] = folder.strip()
    return _view(row)


@tool("files_delete", APP, "write", "Delete a file.", params(["file_id"], file_id={"type": "string"}), NEEDS, sensitive="deletes")
def delete(world: World, file_id: str) -> dict[str, Any]:
    row = _row(world, file_id)
    del world.table("files").rows[file_id]
    return {"deleted": file_id, "name": row["name"]}
