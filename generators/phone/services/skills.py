"""Skills: curated procedures that unlock gated tools, macros, and skills an agent writes.

A skill has a description, the tools it gates, a procedure with pre- and
postconditions, and optionally a macro (tool calls with ``{param}`` placeholders)
that ``run_skill`` executes as one step with its own sub-trace. A gated tool called
before its skill is loaded fails with ``SKILL_NOT_LOADED``. ``save_skill`` stores an
agent-authored macro; the verifier re-runs it on a fresh, held-out instance.

Whether a skill is loaded is incidental state: loading changes what the agent may
call, not what the phone holds.
"""

from __future__ import annotations

import re
from typing import Any

from generators.phone.apps.messages import send as send_message
from generators.phone.apps.wallet import CATEGORIES, add_expense
from generators.phone.tools import META_SCHEMAS, TOOLS, PhoneError, call_tool, params, requirement_check, tool
from generators.phone.world import World

APP = "skills"
TABLE = "skills"
_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
SERVICE_TOOLS = ("list_skills", "load_skill", "run_skill", "save_skill")

CURATED: dict[str, dict[str, Any]] = {
    "group_messaging": {
        "description": "Send the same text to several contacts at once.",
        "gated_tools": ["messages_send_bulk"],
        "preconditions": ["the SMS permission is granted and the phone is online",
                          "every recipient's contact id was looked up (never guessed)"],
        "procedure": ["look up each recipient with contacts_search", "call messages_send_bulk once with all the ids "
                      "and the text"],
        "postconditions": ["one outgoing message per recipient, same text"],
    },
    "expense_logging": {
        "description": "Record several cash expenses from a receipt or a list in one go.",
        "gated_tools": ["expenses_add_batch"],
        "preconditions": ["each item has an amount and one of the wallet's categories"],
        "procedure": ["read the items (a photo's text, a note or the user)", "call expenses_add_batch with every "
                      "item"],
        "postconditions": ["one cash transaction per item"],
    },
    "trip_packing": {
        "description": "Make a packing list for a trip from the forecast and the trip's length.",
        "gated_tools": [],
        "preconditions": ["the trip is booked"],
        "procedure": ["read the trip with trips_list", "check weather_forecast for each day", "create a note "
                      "'Packing list' with one line per item"],
        "postconditions": ["a packing-list note exists"],
    },
    "contact_cleanup": {
        "description": "Merge duplicate contacts and fill in missing fields.",
        "gated_tools": [],
        "preconditions": ["the contacts permission is granted"],
        "procedure": ["list contacts", "for each pair with the same name and number, keep the newer one"],
        "postconditions": ["no two contacts share a name and a number"],
    },
    "quick_todo": {
        "description": "Add one to-do with a title; run it once per item.",
        "gated_tools": [],
        "preconditions": [],
        "procedure": ["run_skill quick_todo with the task, once per item, in the order given"],
        "postconditions": ["one to-do per item"],
        "macro": [{"tool": "todos_create", "arguments": {"title": "{task}"}}],
        "parameters": ["task"],
    },
    "focus_mode": {
        "description": "Quiet the phone for focused work: do-not-disturb on, media volume down.",
        "gated_tools": [],
        "preconditions": [],
        "procedure": ["run_skill focus_mode with the media volume wanted"],
        "postconditions": ["do-not-disturb is on", "the media volume is the level asked"],
        "macro": [{"tool": "device_set_do_not_disturb", "arguments": {"enabled": True}},
                  {"tool": "device_set_volume", "arguments": {"stream": "media", "level": "{level}"}}],
        "parameters": ["level"],
    },
}


def install(world: World, names: tuple[str, ...] | list[str] = tuple(CURATED)) -> None:
    """Add the skills table with the curated skills ``names``."""
    table = world.add_table(TABLE, key="name", incidental=("loaded",), app=APP)
    for name in names:
        spec = CURATED[name]
        table.insert({"name": name, "source": "curated", "macro": [], "parameters": [], **spec, "loaded": False})


@requirement_check("skill")
def _skill_loaded(world: World, name: str) -> None:
    table = world.tables.get(TABLE)
    row = table.peek(name) if table else None
    if row is not None and not row["loaded"]:
        raise PhoneError("SKILL_NOT_LOADED", f"this tool is gated by the skill {name!r}, which is not loaded",
                         hint=f"call load_skill(name={name!r}) first and follow its procedure")


def _row(world: World, name: str, reading: bool = False) -> dict[str, Any]:
    """The skill (``reading``: only to read it, so a table still shared with the kept world is not copied)."""
    table = world.table(TABLE)
    row = table.peek(name) if reading else table.get(name)
    if row is None:
        known = ", ".join(sorted(table.readable()))
        raise PhoneError("NOT_FOUND", f"no skill {name!r}", hint=f"skills: {known}")
    return row


def _summary(r: dict[str, Any]) -> dict[str, Any]:
    return {"name": r["name"], "description": r["description"], "gated_tools": r["gated_tools"],
            "runnable": bool(r["macro"]), "source": r["source"], "loaded": r["loaded"]}


@tool("list_skills", APP, "meta", "List the skills available on this phone: what each is for and what it unlocks.")
def list_skills(world: World) -> dict[str, Any]:
    return {"items": [_summary(r) for _, r in sorted(world.table(TABLE).readable().items())]}


@tool("load_skill", APP, "meta", "Load a skill: unlocks its gated tools and returns its procedure.",
      params(["name"], name={"type": "string"}))
def load_skill(world: World, name: str) -> dict[str, Any]:
    row = _row(world, name, reading=True)
    if not row["loaded"]:  # the table is copied only to change it
        _row(world, name)["loaded"] = True
    return {k: row[k] for k in ("name", "gated_tools", "preconditions", "procedure", "postconditions", "parameters")}


def fill(value: Any, arguments: dict[str, Any]) -> Any:
    """A macro argument with its ``{param}`` placeholders replaced; a lone placeholder keeps the value's type."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole:
            return arguments[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(arguments[m.group(1)]), value)
    if isinstance(value, list):
        return [fill(v, arguments) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, arguments) for k, v in value.items()}
    return value


def run_macro(world: World, row: dict[str, Any], arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Execute a skill's macro on ``world``: its sub-trace; PhoneError at the first failing step."""
    missing = [p for p in row["parameters"] if p not in arguments]
    if missing:
        raise PhoneError("INVALID_ARGUMENT", f"skill {row['name']} needs arguments {missing}",
                         hint=f"pass arguments={{{', '.join(repr(p) + ': ...' for p in row['parameters'])}}}")
    trace = []
    world.wide = True  # a macro may change any app's tables
    for n, step in enumerate(row["macro"]):
        args = fill(step["arguments"], arguments)
        reply = call_tool(world, step["tool"], args)
        trace.append({"actor": f"skill:{row['name']}", "tool": step["tool"], "arguments": args, "ok": reply["ok"],
                      **({"result": reply["data"]} if reply["ok"] else {"error": reply["error"]})})
        if not reply["ok"]:
            err = reply["error"]
            raise PhoneError("SKILL_STEP_FAILED", f"step {n + 1} ({step['tool']}) failed: {err['code']}: "
                             f"{err['message']}", hint=err.get("hint", ""))
    return trace


@tool("run_skill", APP, "write", "Run a runnable skill (a macro) with its arguments; returns the sub-trace.",
      params(["name"], name={"type": "string"}, arguments={"type": "object"}))
def run_skill(world: World, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    row = _row(world, name, reading=True)
    if not row["macro"]:
        raise PhoneError("INVALID_ARGUMENT", f"skill {name!r} is a procedure, not a macro",
                         hint=f"load_skill(name={name!r}) and follow its procedure")
    return {"skill": name, "trace": run_macro(world, row, dict(arguments or {}))}


def macro_problem(steps: Any, parameters: list[str]) -> str | None:
    """What is wrong with an authored macro, or None."""
    if not isinstance(steps, list) or not steps:
        return "steps must be a non-empty list of {tool, arguments}"
    for n, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("tool"), str) or not isinstance(
                step.get("arguments", {}), dict):
            return f"step {n + 1} must be {{'tool': str, 'arguments': object}}"
        name = step["tool"]
        if name not in TOOLS or name in META_SCHEMAS or name in SERVICE_TOOLS or TOOLS[name].app in ("agents",):
            return f"step {n + 1}: {name!r} is not a phone tool a skill may call"
        used = set(_PLACEHOLDER.findall(str(step.get("arguments", {}))))
        if used - set(parameters):
            return f"step {n + 1} uses undeclared parameters {sorted(used - set(parameters))}"
    return None


@tool("save_skill", APP, "write",
      "Save a new runnable skill: steps are tool calls whose arguments may hold {param} placeholders.",
      params(["name", "description", "steps"], name={"type": "string"}, description={"type": "string"},
             steps={"type": "array", "items": {"type": "object"}},
             parameters={"type": "array", "items": {"type": "string"}}))
def save_skill(world: World, name: str, description: str, steps: list[dict[str, Any]],
               parameters: list[str] | None = None) -> dict[str, Any]:
    name, parameters = name.strip(), list(parameters or [])
    if not re.fullmatch(r"[a-z][a-z0-9_]{2,40}", name):
        raise PhoneError("INVALID_ARGUMENT", f"skill name {name!r} must be snake_case, 3-41 characters")
    if world.table(TABLE).get(name) is not None:
        raise PhoneError("INVALID_ARGUMENT", f"a skill named {name!r} exists", hint="pick another name")
    problem = macro_problem(steps, parameters)
    if problem:
        raise PhoneError("INVALID_ARGUMENT", problem)
    macro = [{"tool": s["tool"], "arguments": dict(s.get("arguments", {}))} for s in steps]
    row = world.table(TABLE).insert({
        "name": name, "source": "agent", "description": description, "gated_tools": [], "preconditions": [],
        "procedure": [f"{s['tool']}" for s in macro], "postconditions": [], "macro": macro, "parameters": parameters,
        "loaded": True})
    return _summary(row)


# -- the tools two curated skills gate ----------------------------------------------------------------------------

@tool("messages_send_bulk", "messages", "write", "Send one text to several contacts (gated by group_messaging).",
      params(["contact_ids", "text"], contact_ids={"type": "array", "items": {"type": "string"}},
             text={"type": "string"}), ("skill:group_messaging", "permission:sms", "network"))
def send_bulk(world: World, contact_ids: list[str], text: str) -> dict[str, Any]:
    if not contact_ids or len(set(contact_ids)) != len(contact_ids):
        raise PhoneError("INVALID_ARGUMENT", "contact_ids must be distinct and not empty")
    for cid in contact_ids:  # all or nothing: check every id before sending any
        if world.table("contacts").peek(cid) is None:
            raise PhoneError("NOT_FOUND", f"no contact with id {cid!r}", hint="find the id with contacts_search")
    return {"sent": [send_message(world, cid, text)["id"] for cid in contact_ids]}


@tool("expenses_add_batch", "wallet", "write", "Record several cash expenses at once (gated by expense_logging).",
      params(["items"], items={"type": "array", "items": {"type": "object"}}), ("skill:expense_logging",))
def add_expense_batch(world: World, items: list[dict[str, Any]]) -> dict[str, Any]:
    if not items:
        raise PhoneError("INVALID_ARGUMENT", "items is empty")
    for n, item in enumerate(items):
        amount, category = item.get("amount"), item.get("category")
        if not isinstance(amount, int | float) or isinstance(amount, bool) or not 0 < amount < 1e6:
            raise PhoneError("INVALID_ARGUMENT", f"items[{n}].amount must be a positive number, got {amount!r}")
        if category not in CATEGORIES:
            raise PhoneError("INVALID_ARGUMENT", f"items[{n}].category must be one of {CATEGORIES}")
    return {"added": [add_expense(world, float(i["amount"]), i["category"], str(i.get("note", "")))["id"]
                      for i in items]}
