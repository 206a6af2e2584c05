"""Tools: a registry, argument checking, typed errors, OpenAI function schemas.

Apps register tools with :func:`tool`. :func:`call_tool` is the only way an actor
touches the world; it never raises: every problem comes back as a typed error with a
hint, because an agent learns from the hint and a crash teaches it nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Literal

from generators.phone.arguments import check_arguments
from generators.phone.arguments import cut as _cut
from generators.phone.world import MissingTableError, World

ToolKind = Literal["read", "write", "meta"]
Result = dict[str, Any]


class PhoneError(Exception):
    """A typed tool error raised inside a tool function and returned by call_tool."""

    def __init__(self, code: str, message: str, *, retryable: bool = False, hint: str = ""):
        super().__init__(message)
        self.code, self.message, self.retryable, self.hint = code, message, retryable, hint

    def as_dict(self) -> dict[str, Any]:
        """The error in the wire form of a tool reply."""
        return {"code": self.code, "message": _cut(self.message), "retryable": self.retryable, "hint": _cut(self.hint)}


@dataclass(frozen=True)
class Tool:
    """One tool: name, owning app, kind, description, JSON-schema parameters, needs, function, and
    ``sensitive``: the side effect that needs a person's eyes ("spends money", "places an order",
    "sends to new recipients", "deletes", "grants a permission"), or "" for none."""

    name: str
    app: str
    kind: ToolKind
    description: str
    parameters: dict[str, Any]
    requires: tuple[str, ...]
    fn: Callable[..., Any]
    sensitive: str = ""


TOOLS: dict[str, Tool] = {}
# requirement prefix ("permission", "network", later "skill") -> check(world, arg) raising PhoneError
REQUIREMENT_CHECKS: dict[str, Callable[[World, str], None]] = {}


def params(required: Collection[str] = (), **properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON-schema object for tool parameters."""
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def tool(name: str, app: str, kind: ToolKind, description: str, parameters: dict[str, Any] | None = None,
         requires: tuple[str, ...] = (), sensitive: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``fn(world, **args)`` as a tool (``sensitive``: see :class:`Tool`)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in TOOLS:
            raise ValueError(f"tool {name!r} registered twice")
        TOOLS[name] = Tool(name, app, kind, description, parameters or params(), tuple(requires), fn, sensitive)
        return fn

    return register


def requirement_check(prefix: str) -> Callable[[Callable[[World, str], None]], Callable[[World, str], None]]:
    """Decorator registering the check for requirements named ``prefix`` or ``prefix:arg``."""

    def register(fn: Callable[[World, str], None]) -> Callable[[World, str], None]:
        REQUIREMENT_CHECKS[prefix] = fn
        return fn

    return register


def _error(code: str, message: str, hint: str = "", retryable: bool = False) -> Result:
    return {"ok": False, "error": PhoneError(code, message, retryable=retryable, hint=hint).as_dict()}


def _check_requirements(world: World, t: Tool) -> None:
    for need in t.requires:
        prefix, _, arg = need.partition(":")
        check = REQUIREMENT_CHECKS.get(prefix)
        if check is not None:  # an uninstalled service cannot block a tool
            check(world, arg)


def call_tool(world: World, name: str, args: Any, allowed: Collection[str] | None = None) -> Result:
    """Run a tool on the world: ``{"ok": True, "data": ...}`` or ``{"ok": False, "error": {...}}``.

    ``allowed`` limits the call to the tools a task exposes. Every call, good or bad,
    advances the virtual clock by one tick and is logged. Never raises.
    """
    world.advance()
    if not isinstance(name, str) or name not in TOOLS or (allowed is not None and name not in allowed):
        pool = sorted(allowed if allowed is not None else TOOLS)
        close = difflib.get_close_matches(str(name), pool, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"available tools: {', '.join(pool)}"
        world.log("tool_call", tool=str(name), ok=False, code="UNKNOWN_TOOL")
        return _error("UNKNOWN_TOOL", f"no tool named {name!r} is available", hint)
    t = TOOLS[name]
    problem = check_arguments(name, t.parameters, args if args is not None else {})
    if problem:
        world.log("tool_call", tool=name, ok=False, code="INVALID_ARGUMENT")
        return _error("INVALID_ARGUMENT", problem[0], f"expected {problem[1]}")
    try:
        _check_requirements(world, t)
        fault = world.take_fault(name) if world.faults else None
        if fault is not None:  # a transient failure of the service: nothing happened, retrying works
            raise PhoneError(fault["code"], fault.get("message", f"{name} timed out; nothing was changed"),
                             retryable=True, hint="retry the same call")
        data = t.fn(world, **(args or {}))
    except PhoneError as e:
        world.log("tool_call", tool=name, ok=False, code=e.code)
        return {"ok": False, "error": e.as_dict()}
    except MissingTableError as e:
        world.log("tool_call", tool=name, ok=False, code="UNSUPPORTED_APP")
        return _error("UNSUPPORTED_APP", f"the {t.app} app is not installed on this phone ({e.args[0]})",
                      "use a tool of an installed app")
    except Exception as e:  # a tool bug must not end the episode; report it as a harness fault
        world.log("tool_call", tool=name, ok=False, code="INTERNAL")
        return _error("INTERNAL", f"{type(e).__name__}: {e}", "this is a fault of the phone, not the caller", True)
    world.log("tool_call", tool=name, ok=True)
    return {"ok": True, "data": data}


META_SCHEMAS: dict[str, dict[str, Any]] = {
    "finish": {
        "description": "End the task. Report the status, the answer if one was asked for, a short summary, "
        "and claims tying each stated fact to the call that returned it.",
        "parameters": params(
            ["status"],
            status={"type": "string", "enum": ["completed", "needs_user", "infeasible", "partial"]},
            answer={"description": "the answer, typed (number, string, list) when the task asks a question"},
            summary={"type": "string"},
            claims={"type": "array", "items": {"type": "object"},
                    "description": "[{\"fact\": str, \"call_id\": str}]"},
        ),
    },
    "ask_user": {
        "description": "Ask the user a question when something needed is missing or ambiguous.",
        "parameters": params(["question"], question={"type": "string"},
                             options={"type": "array", "items": {"type": "string"}}),
    },
}


def openai_tool_schemas(names: Collection[str]) -> list[dict[str, Any]]:
    """OpenAI function-calling schemas for ``names``, with finish and ask_user always last."""
    out = []
    for n in names:
        if n in META_SCHEMAS:
            continue
        t = TOOLS[n]
        function = {"name": n, "description": t.description, "parameters": t.parameters}
        out.append({"type": "function", "function": function})
    for n, meta in META_SCHEMAS.items():
        out.append({"type": "function", "function": {"name": n, **meta}})
    return out


def tool_kind(name: str) -> ToolKind:
    """The kind of a tool; finish, ask_user and unknown names count as meta."""
    t = TOOLS.get(name)
    return t.kind if t else "meta"
