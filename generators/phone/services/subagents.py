"""Sub-agents: GUI, QA, automation and vision agents the planner delegates to.

A session is started with an instruction and structured inputs
(``start_subagent``), then run by its id (``run_subagent``); ``get_subagent_result``
reads it back. A run returns the sub-agent's result; what the sub-agent did on the way
(its sub-trace) goes to the world's event log, from which the environment records each
of its steps as a step of its own with the actor ``subagent:<name>`` (see
:func:`subagent_steps`): the planner delegated that work, it did not take those steps. Failures are typed and come with a hint: the GUI agent cannot
operate every app (``UNSUPPORTED_APP``), the vision agent needs a photo that exists
(``ARTIFACT_NOT_FOUND``), the QA agent answers only from its knowledge base
(``NOT_FOUND`` otherwise, never a guess). Automations fire when the virtual clock
passes their time.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from generators.phone.services.memory import words
from generators.phone.timeparse import parse_time
from generators.phone.tools import META_SCHEMAS, TOOLS, PhoneError, call_tool, params, tool
from generators.phone.world import DUE_HOOKS, World

APP = "agents"
AGENTS = ("gui", "qa", "automation", "vision")
INPUTS: dict[str, tuple[str, ...]] = {"gui": ("app", "setting", "value"), "qa": ("question",),
                                     "automation": ("at", "tool", "arguments"), "vision": ("file_id",)}


def install(world: World) -> None:
    """Add the sessions, knowledge base, GUI settings and automations tables."""
    world.add_table("agent_sessions", key="id", app=APP)
    world.add_table("kb", key="id", app=APP)
    world.add_table("ui_settings", key="id", app=APP, unordered=("options",))
    world.add_table("automations", key="id", app=APP)


def add_kb(world: World, topic: str, answer: str) -> dict[str, Any]:
    """A fact the QA agent knows: it answers a question that names every word of ``topic``."""
    return world.table("kb").insert({"id": world.next_id("kb"), "topic": topic, "answer": answer})


def add_ui_setting(world: World, app: str, setting: str, value: str, options: list[str]) -> dict[str, Any]:
    """A setting only the GUI agent can reach (no tool covers it)."""
    return world.table("ui_settings").insert({"id": f"{app}.{setting}", "app": app, "setting": setting,
                                              "value": value, "options": list(options)})


@tool("start_subagent", APP, "write",
      "Start a sub-agent session. gui: inputs {app, setting, value} (settings no tool covers); qa: {question} "
      "(answers from its knowledge base only); automation: {at, tool, arguments} (runs a tool at a time); "
      "vision: {file_id} (reads a photo). Then run it with run_subagent(session_id).",
      params(["agent", "instruction", "inputs"], agent={"type": "string", "enum": list(AGENTS)},
             instruction={"type": "string"}, inputs={"type": "object"}))
def start(world: World, agent: str, instruction: str, inputs: dict[str, Any]) -> dict[str, Any]:
    missing = [k for k in INPUTS[agent] if k not in inputs]
    extra = sorted(set(inputs) - set(INPUTS[agent]))
    if missing or extra:
        raise PhoneError("INVALID_ARGUMENT", f"the {agent} agent takes inputs {list(INPUTS[agent])}"
                         + (f"; missing {missing}" if missing else "") + (f"; unknown {extra}" if extra else ""),
                         hint=f"inputs={{{', '.join(repr(k) + ': ...' for k in INPUTS[agent])}}}")
    row = {"id": world.next_id("sa"), "agent": agent, "instruction": instruction, "inputs": dict(inputs),
           "status": "ready", "result": None, "error": ""}
    world.table("agent_sessions").insert(row)
    return {"session_id": row["id"], "status": "ready"}


def _session(world: World, session_id: str, reading: bool = False) -> dict[str, Any]:
    """The session (``reading``: only to read it, so a table still shared with the kept world is not copied)."""
    table = world.table("agent_sessions")
    row = table.peek(session_id) if reading else table.get(session_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no sub-agent session {session_id!r}", hint="start one with start_subagent")
    return row


def _gui(world: World, inputs: dict[str, Any], trace: list[dict[str, Any]]) -> dict[str, Any]:
    rows = world.table("ui_settings").rows
    apps = sorted({r["app"] for r in rows.values()})
    app, setting, value = str(inputs["app"]), str(inputs["setting"]), inputs["value"]
    trace.append({"op": "open_app", "app": app, "ok": app in apps})
    if app not in apps:
        raise PhoneError("UNSUPPORTED_APP", f"the GUI agent cannot operate the {app!r} app",
                         hint=f"it operates: {', '.join(apps)}; for other apps use their own tools")
    row = rows.get(f"{app}.{setting}")
    trace.append({"op": "find_setting", "setting": setting, "ok": row is not None})
    if row is None:
        have = sorted(r["setting"] for r in rows.values() if r["app"] == app)
        raise PhoneError("NOT_FOUND", f"{app} has no setting {setting!r}", hint=f"{app} settings: {', '.join(have)}")
    if value not in row["options"]:
        raise PhoneError("INVALID_ARGUMENT", f"{app}.{setting} cannot be {value!r}",
                         hint=f"options: {', '.join(row['options'])}")
    trace.append({"op": "set", "setting": setting, "value": value, "ok": True})
    row["value"] = value
    return {"app": app, "setting": setting, "value": value}


def _qa(world: World, inputs: dict[str, Any], trace: list[dict[str, Any]]) -> dict[str, Any]:
    asked = words(inputs["question"])
    hits = sorted((r for r in world.table("kb").readable().values() if words(r["topic"]) <= asked),
                  key=lambda r: (-len(words(r["topic"])), r["id"]))
    trace.append({"op": "lookup", "question": inputs["question"], "ok": bool(hits)})
    if not hits:
        raise PhoneError("NOT_FOUND", "the knowledge base has no answer to this question",
                         hint="do not guess: tell the user it is not known")
    return {"answer": hits[0]["answer"], "source": hits[0]["id"]}


def _automation(world: World, inputs: dict[str, Any], trace: list[dict[str, Any]]) -> dict[str, Any]:
    at = when(str(inputs["at"]), world.now)
    name, args = inputs["tool"], inputs["arguments"]
    if name not in TOOLS or name in META_SCHEMAS or TOOLS[name].app in (APP, "skills"):
        raise PhoneError("INVALID_ARGUMENT", f"an automation cannot run {name!r}", hint="name a phone tool")
    if not isinstance(args, dict):
        raise PhoneError("INVALID_ARGUMENT", "automation arguments must be an object")
    if at <= world.now:
        raise PhoneError("INVALID_ARGUMENT", f"{at:%Y-%m-%d %H:%M} is not in the future",
                         hint=f"it is now {world.now:%Y-%m-%d %H:%M}")
    row = {"id": world.next_id("au"), "at": at.isoformat(timespec="minutes"), "tool": name, "arguments": dict(args),
           "status": "scheduled", "fired_at": "", "error": ""}
    world.table("automations").insert(row)
    _reschedule(world)
    trace.append({"op": "schedule", "at": row["at"], "tool": name, "ok": True})
    return {"automation_id": row["id"], "at": row["at"]}


def when(text: str, now: datetime) -> datetime:
    """The moment ``text`` names: an ISO date-time, 'in N minutes|hours', or a clock time today."""
    s = text.strip().lower()
    m = re.fullmatch(r"in (\d{1,4}) (minute|minutes|min|hour|hours)", s)
    if m:
        n = int(m.group(1))
        return now + (timedelta(hours=n) if m.group(2).startswith("hour") else timedelta(minutes=n))
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        pass
    hhmm = parse_time(s)
    return now.replace(hour=int(hhmm[:2]), minute=int(hhmm[3:]), second=0, microsecond=0)


def _vision(world: World, inputs: dict[str, Any], trace: list[dict[str, Any]]) -> dict[str, Any]:
    row = world.table("files").peek(str(inputs["file_id"]))
    trace.append({"op": "open_photo", "file_id": inputs["file_id"], "ok": row is not None and row["kind"] == "photo"})
    if row is None or row["kind"] != "photo":
        raise PhoneError("ARTIFACT_NOT_FOUND", f"no photo with id {inputs['file_id']!r}",
                         hint="find the photo's id with files_search or files_list(kind='photo')")
    return {"file_id": row["id"], "text": row["text"]}


RUNNERS = {"gui": _gui, "qa": _qa, "automation": _automation, "vision": _vision}


@tool("run_subagent", APP, "write", "Run a started sub-agent session; returns its result and sub-trace.",
      params(["session_id"], session_id={"type": "string"}))
def run(world: World, session_id: str) -> dict[str, Any]:
    row = _session(world, session_id)
    if row["status"] != "ready":
        raise PhoneError("INVALID_ARGUMENT", f"session {session_id} already ran ({row['status']})",
                         hint="read it with get_subagent_result, or start a new session")
    trace: list[dict[str, Any]] = []
    actor = f"subagent:{row['agent']}"
    try:
        result = RUNNERS[row["agent"]](world, row["inputs"], trace)
    except PhoneError as e:
        row.update(status="failed", error=e.code)
        world.log("subagent", actor=actor, session=session_id, ok=False, code=e.code, trace=trace)
        raise
    row.update(status="done", result=result)
    world.log("subagent", actor=actor, session=session_id, ok=True, trace=trace)
    return {"session_id": session_id, "status": "done", "result": result}


@tool("get_subagent_result", APP, "read", "Read a sub-agent session: status, result or error.",
      params(["session_id"], session_id={"type": "string"}))
def get_result(world: World, session_id: str) -> dict[str, Any]:
    row = _session(world, session_id, reading=True)
    return {"session_id": session_id, "agent": row["agent"], "status": row["status"], "result": row["result"],
            "error": row["error"]}


def _reschedule(world: World) -> None:
    due = [r["at"] for r in world.table("automations").readable().values() if r["status"] == "scheduled"]
    world.next_due = datetime.fromisoformat(min(due)) if due else None


def fire_due(world: World) -> None:
    """Run every automation whose time the clock has passed, oldest first (a DUE_HOOK)."""
    if "automations" not in world.tables:
        return
    world.next_due = None  # the tool calls below advance the clock too
    due = sorted((r for r in world.table("automations").rows.values()
                  if r["status"] == "scheduled" and datetime.fromisoformat(r["at"]) <= world.now),
                 key=lambda r: (r["at"], r["id"]))
    for row in due:
        reply = call_tool(world, row["tool"], row["arguments"])
        row.update(status="fired" if reply["ok"] else "failed", fired_at=world.now.isoformat(timespec="minutes"),
                   error="" if reply["ok"] else reply["error"]["code"])
        world.log("automation", actor="subagent:automation", automation=row["id"], ok=reply["ok"],
                  tool=row["tool"], arguments=row["arguments"], code=row["error"])
    world.wide = True
    _reschedule(world)


DUE_HOOKS.append(fire_due)


def subagent_steps(events: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any], bool, str]]:
    """The sub-agents' own steps in ``events`` (a slice of the world's log), in order:
    ``(actor, operation, arguments, ok, error code)``. A run's operations come from its sub-trace
    (its failing operation carries the run's error code); a fired automation is one step, the
    tool it ran."""
    out: list[tuple[str, str, dict[str, Any], bool, str]] = []
    for ev in events:
        if ev["kind"] == "subagent":
            agent = ev["actor"].split(":", 1)[-1]
            trace = ev.get("trace") or [{"op": "start", "ok": ev.get("ok", True)}]  # refused before its first op
            for i, op in enumerate(trace):
                args = {k: v for k, v in op.items() if k not in ("op", "ok")}
                failed = not op.get("ok", True) or (i == len(trace) - 1 and not ev.get("ok", True))
                out.append((ev["actor"], f"{agent}.{op['op']}", args, not failed, ev.get("code", "") if failed else ""))
        elif ev["kind"] == "automation" and "tool" in ev:
            out.append((ev["actor"], ev["tool"], dict(ev.get("arguments") or {}), bool(ev["ok"]), ev.get("code", "")))
    return out
