"""Notes and to-dos: notes live in folders that must exist; to-dos have a due date."""

from __future__ import annotations

from typing import Any

from generators.phone.apps.contacts import paginate
from generators.phone.timeparse import resolve_date
from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "notes"
_PAGE = {"page": {"type": "integer", "minimum": 1}, "page_size": {"type": "integer", "minimum": 1, "maximum": 50}}
_DATE = {"type": "string", "description": "YYYY-MM-DD or relative: today, tomorrow, friday, in 3 days"}


def install(world: World) -> None:
    """Add the notes, folders and to-dos tables, with the default Notes folder."""
    world.add_table("notes", key="id", incidental=("updated_at",), app=APP)
    folders = world.add_table("folders", key="name", app=APP)
    if "Notes" not in folders.rows:
        folders.insert({"name": "Notes"})
    world.add_table("todos", key="id", incidental=("updated_at",), app=APP)


def add_note(world: World, title: str, body: str, folder: str = "Notes") -> dict[str, Any]:
    """Insert a note with a fresh id (the folder must exist)."""
    row = {"id": world.next_id("n"), "title": title, "body": body, "folder": folder,
           "updated_at": world.now.isoformat()}
    return world.table("notes").insert(row)


def add_todo(world: World, title: str, due: str = "", done: bool = False) -> dict[str, Any]:
    """Insert a to-do with a fresh id."""
    row = {"id": world.next_id("td"), "title": title, "due": due, "done": done, "updated_at": world.now.isoformat()}
    return world.table("todos").insert(row)


def _folder(world: World, name: str) -> str:
    for existing in world.table("folders").readable():
        if existing.casefold() == name.strip().casefold():
            return existing
    raise PhoneError("NOT_FOUND", f"no folder named {name!r}",
                     hint=f"folders: {sorted(world.table('folders').readable())}; create one with notes_create_folder")


@tool("notes_list", APP, "read", "List notes (title, folder, first line), optionally in one folder. Paginated.",
      params(folder={"type": "string"}, **_PAGE))
def list_notes(world: World, folder: str | None = None, page: int = 1, page_size: int = 10) -> dict[str, Any]:
    name = _folder(world, folder) if folder else None
    rows = sorted(world.table("notes").readable().values(), key=lambda r: (r["folder"], r["title"], r["id"]))
    hits = [{"id": r["id"], "title": r["title"], "folder": r["folder"], "preview": r["body"].split("\n")[0][:60]}
            for r in rows if name is None or r["folder"] == name]
    return paginate(hits, page, page_size)


@tool("notes_search", APP, "read", "Search notes by title or body (substring). Paginated.",
      params(["query"], query={"type": "string"}, **_PAGE))
def search_notes(world: World, query: str, page: int = 1, page_size: int = 10) -> dict[str, Any]:
    q = query.strip().lower()
    rows = sorted(world.table("notes").readable().values(), key=lambda r: (r["title"], r["id"]))
    return paginate([dict(r) for r in rows if q in f"{r['title']} {r['body']}".lower()], page, page_size)


@tool("notes_get", APP, "read", "Get one note with its full body.", params(["note_id"], note_id={"type": "string"}))
def get_note(world: World, note_id: str) -> dict[str, Any]:
    row = world.table("notes").peek(note_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no note with id {note_id!r}", hint="find the id with notes_search")
    return dict(row)


@tool("notes_list_folders", APP, "read", "List note folders.")
def list_folders(world: World) -> dict[str, Any]:
    return {"items": sorted(world.table("folders").readable())}


@tool("notes_create_folder", APP, "write", "Create a note folder.", params(["name"], name={"type": "string"}))
def create_folder(world: World, name: str) -> dict[str, Any]:
    clean = name.strip()
    if not clean:
        raise PhoneError("INVALID_ARGUMENT", "folder name is empty")
    if any(f.casefold() == clean.casefold() for f in world.table("folders").rows):
        raise PhoneError("ALREADY_EXISTS", f"folder {clean!r} exists", hint="use it as it is")
    return world.table("folders").insert({"name": clean})


@tool("notes_create", APP, "write", "Create a note in a folder (default 'Notes'). The folder must exist.",
      params(["title", "body"], title={"type": "string"}, body={"type": "string"}, folder={"type": "string"}))
def create_note(world: World, title: str, body: str, folder: str = "Notes") -> dict[str, Any]:
    return dict(add_note(world, title.strip(), body, _folder(world, folder)))


@tool("notes_update", APP, "write", "Change a note's title, body or folder; only the fields given change.",
      params(["note_id"], note_id={"type": "string"}, title={"type": "string"}, body={"type": "string"},
             folder={"type": "string"}))
def update_note(world: World, note_id: str, title: str | None = None, body: str | None = None,
                folder: str | None = None) -> dict[str, Any]:
    row = world.table("notes").get(note_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no note with id {note_id!r}", hint="find the id with notes_search")
    new_folder = _folder(world, folder) if folder is not None else row["folder"]
    row.update({k: v for k, v in (("title", title), ("body", body)) if v is not None}, folder=new_folder,
               updated_at=world.now.isoformat())
    return dict(row)


@tool("notes_delete", APP, "write", "Delete a note.", params(["note_id"], note_id={"type": "string"}), sensitive="deletes")
def delete_note(world: World, note_id: str) -> dict[str, Any]:
    if world.table("notes").get(note_id) is None:
        raise PhoneError("NOT_FOUND", f"no note with id {note_id!r}", hint="find the id with notes_search")
    del world.table("notes").rows[note_id]
    return {"deleted": note_id}


@tool("todos_list", APP, "read", "List to-dos by due date; open ones only unless include_done; optionally by title.",
      params(include_done={"type": "boolean"}, query={"type": "string"}))
def list_todos(world: World, include_done: bool = False, query: str | None = None) -> dict[str, Any]:
    q = (query or "").strip().lower()
    rows = sorted(world.table("todos").readable().values(), key=lambda r: (r["due"] or "9999", r["id"]))
    return {"items": [{k: r[k] for k in ("id", "title", "due", "done")} for r in rows
                      if (include_done or not r["done"]) and q in r["title"].lower()]}


@tool("todos_create", APP, "write", "Add a to-do, optionally with a due date.",
      params(["title"], title={"type": "string"}, due=_DATE))
def create_todo(world: World, title: str, due: str | None = None) -> dict[str, Any]:
    day = resolve_date(due, world.now).isoformat() if due else ""
    return dict(add_todo(world, title.strip(), day))


@tool("todos_complete", APP, "write", "Mark a to-do done.", params(["todo_id"], todo_id={"type": "string"}))
def complete_todo(world: World, todo_id: str) -> dict[str, Any]:
    row = world.table("todos").get(todo_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no to-do with id {todo_id!r}", hint="find the id with todos_list")
    row.update(done=True, updated_at=world.now.isoformat())
    return dict(row)
