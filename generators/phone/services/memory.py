"""Memory: typed records about the user that persist across the sessions of a scenario.

A record has a type (profile, preference, routine, relationship, episodic,
prospective), a subject (``user`` or the person it is about), a key and a value, a
status (active, superseded, deleted), where it came from and when. Nothing is ever
removed: deleting leaves a tombstone, superseding keeps the old record with a pointer
to its successor, so a memory diff shows exactly what an agent changed.

Search is deterministic and deliberately honest about distractors: a superseded
record, a similar key and someone else's preference can all rank near the right one;
each hit says its status and subject. What memory returns is evidence, never
permission to act.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "memory"
TABLE = "memories"
TYPES = ["profile", "preference", "routine", "relationship", "episodic", "prospective"]
STATUSES = ("active", "superseded", "deleted")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and the my me i of for to in on at is what which who how do does usual usually".split())


def install(world: World) -> None:
    """Add the memories table."""
    world.add_table(TABLE, key="id", app=APP)


def add_memory(world: World, type: str, key: str, value: str, *, subject: str = "user", source: str = "user_said",
               at: str = "", due: str = "", status: str = "active", supersedes: str = "") -> dict[str, Any]:
    """Insert a memory record (used by families to seed memory, and by ``memory_add``)."""
    stamp = at or world.now.isoformat(timespec="minutes")
    row = {"id": world.next_id("m"), "type": type, "subject": subject, "key": key, "value": value,
           "status": status, "source": source, "created_at": stamp, "updated_at": stamp, "due": due,
           "supersedes": supersedes, "superseded_by": ""}
    return world.table(TABLE).insert(row)


def words(text: str) -> frozenset[str]:
    """The content words of a text, lowercased (what search matches on)."""
    text = str(text)
    # a search reads every record's key, subject and value: the same short texts again and again
    return _remembered_words(text) if len(text) <= 200 else _words(text)


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


_remembered_words = functools.lru_cache(maxsize=32768)(_words)


def rank(rows: list[dict[str, Any]], query: str) -> list[tuple[int, dict[str, Any]]]:
    """(score, row) for rows matching ``query``, best first; ties: active first, newer first, then id.

    Score: 3 per query word in the key, 2 per word in the subject, 1 per word in the value.
    """
    q = words(query)
    scored = []
    for r in rows:
        s = 3 * len(q & words(r["key"])) + 2 * len(q & words(r["subject"])) + len(q & words(r["value"]))
        if s:
            scored.append((s, r))
    # sorted twice (stable): by id, then by the real keys, so "newer first" needs no negation of a string
    scored.sort(key=lambda sr: sr[1]["id"])
    scored.sort(key=lambda sr: sr[1]["updated_at"], reverse=True)
    scored.sort(key=lambda sr: (-sr[0], sr[1]["status"] != "active", sr[1]["subject"] != "user"))
    return scored


def _view(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in ("id", "type", "subject", "key", "value", "status", "updated_at", "due",
                              "superseded_by") if r[k] != "" or k in ("value", "status")}


def _row(world: World, memory_id: str, reading: bool = False) -> dict[str, Any]:
    """The record (``reading``: only to read it, so a table still shared with the kept world is not copied)."""
    table = world.table(TABLE)
    row = table.peek(memory_id) if reading else table.get(memory_id)
    if row is None or row["status"] == "deleted":
        raise PhoneError("NOT_FOUND", f"no memory {memory_id!r}", hint="find the id with memory_search")
    return row


@tool("memory_search", APP, "read",
      "Search what you remember about the user and the people around them. Hits are ranked; each says its type, "
      "subject (whose it is) and status (active, or superseded by a newer record).",
      params(["query"], query={"type": "string"}, type={"type": "string", "enum": TYPES},
             limit={"type": "integer", "minimum": 1, "maximum": 20}))
def search(world: World, query: str, type: str | None = None, limit: int = 5) -> dict[str, Any]:
    rows = [r for r in world.table(TABLE).readable().values()
            if r["status"] != "deleted" and (type is None or r["type"] == type)]
    hits = rank(rows, query)
    return {"items": [{**_view(r), "score": s} for s, r in hits[:limit]], "total": len(hits)}


@tool("memory_get", APP, "read", "Get one memory record by id.", params(["memory_id"], memory_id={"type": "string"}))
def get(world: World, memory_id: str) -> dict[str, Any]:
    return _view(_row(world, memory_id, reading=True))


@tool("memory_add", APP, "write", "Remember something new about the user (or someone they know).",
      params(["type", "key", "value"], type={"type": "string", "enum": TYPES}, key={"type": "string"},
             value={"type": "string"}, subject={"type": "string", "description": "'user' or the person's name"},
             due={"type": "string", "description": "for a prospective intent: when (ISO date or time)"}))
def add(world: World, type: str, key: str, value: str, subject: str = "user", due: str = "") -> dict[str, Any]:
    if not key.strip() or not value.strip():
        raise PhoneError("INVALID_ARGUMENT", "key and value must not be empty")
    if type == "prospective" and not due.strip():
        raise PhoneError("INVALID_ARGUMENT", "a prospective intent needs 'due'", hint="pass due as an ISO date")
    return _view(add_memory(world, type, key.strip(), value.strip(), subject=subject.strip() or "user",
                            source="agent", due=due.strip()))


@tool("memory_update", APP, "write",
      "Change a remembered value. In place by default; keep_history=true supersedes the record with a new one "
      "and keeps the old one as superseded.",
      params(["memory_id", "value"], memory_id={"type": "string"}, value={"type": "string"},
             keep_history={"type": "boolean"}))
def update(world: World, memory_id: str, value: str, keep_history: bool = False) -> dict[str, Any]:
    row = _row(world, memory_id)
    if row["status"] != "active":
        raise PhoneError("INVALID_ARGUMENT", f"memory {memory_id} is {row['status']}",
                         hint=f"update the active record {row['superseded_by']}" if row["superseded_by"] else "")
    if not value.strip():
        raise PhoneError("INVALID_ARGUMENT", "value must not be empty", hint="use memory_delete to forget")
    stamp = world.now.isoformat(timespec="minutes")
    if not keep_history:
        row.update(value=value.strip(), updated_at=stamp, source="agent")
        return _view(row)
    new = add_memory(world, row["type"], row["key"], value.strip(), subject=row["subject"], source="agent",
                     due=row["due"], supersedes=memory_id)
    row.update(status="superseded", superseded_by=new["id"], updated_at=stamp)
    return _view(new)


@tool("memory_delete", APP, "write", "Forget a memory record (it stays as a deleted tombstone).",
      params(["memory_id"], memory_id={"type": "string"}))
def delete(world: World, memory_id: str) -> dict[str, Any]:
    row = _row(world, memory_id)
    row.update(status="deleted", updated_at=world.now.isoformat(timespec="minutes"))
    return {"deleted": memory_id}


@tool("memory_list_intents", APP, "read", "List the user's open prospective intents (things to do later), by due time.")
def list_intents(world: World) -> dict[str, Any]:
    rows = [r for r in world.table(TABLE).readable().values() if r["type"] == "prospective" and r["status"] == "active"]
    return {"items": [_view(r) for r in sorted(rows, key=lambda r: (r["due"], r["id"]))]}
