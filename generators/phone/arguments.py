"""Tool arguments checked against a tool's JSON-schema parameters: the problem an agent is told, or None.

A tool's parameters are compiled once into what a valid call needs (the names allowed and required,
and per argument the Python types that need no further look); a call that passes is done in a few
dict lookups. Anything else goes through the full check, which alone words the problem, so the
compiled path can only ever agree with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

MESSAGE_LIMIT = 400  # an error echoing a 10 kB argument would flood the agent's context


def cut(text: str) -> str:
    """``text`` cut to MESSAGE_LIMIT characters, saying how long it was."""
    return text if len(text) <= MESSAGE_LIMIT else f"{text[:MESSAGE_LIMIT]}... ({len(text)} characters)"


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    # bool is an int in Python, but not in JSON
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _shown(value: Any) -> str:
    """A value as an error message shows it, cut short."""
    return cut(repr(value))


def _check_value(name: str, value: Any, schema: dict[str, Any]) -> str | None:
    """A problem with one argument value, or None."""
    kind = schema.get("type")
    if kind and not _JSON_TYPES[kind](value):
        return f"'{name}' must be of type {kind}, got {type(value).__name__} {_shown(value)}"
    if isinstance(value, float) and not math.isfinite(value):  # JSON has no NaN or infinity; a balance must not either
        return f"'{name}' must be a finite number, got {value!r}"
    if "enum" in schema and value not in schema["enum"]:
        return f"'{name}' must be one of {schema['enum']}, got {_shown(value)}"
    if "minimum" in schema and value < schema["minimum"]:
        return f"'{name}' must be >= {schema['minimum']}, got {value!r}"
    if "maximum" in schema and value > schema["maximum"]:
        return f"'{name}' must be <= {schema['maximum']}, got {value!r}"
    if kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            problem = _check_value(f"{name}[{i}]", item, schema["items"])
            if problem:
                return problem
    return None


# per JSON type, the Python types whose values need no look beyond their type (a float may be
# infinite, a bool is an int in Python: both take the full check)
_PLAIN_TYPES = {"string": frozenset([str]), "integer": frozenset([int]), "boolean": frozenset([bool]),
                "array": frozenset([list]), "object": frozenset([dict])}
_PLAIN_KEYS = frozenset(["type", "description"])  # an enum, a bound or an item schema: the full check
# name -> (the parameters compiled, which are kept so that their id cannot be reused, and what they compile to)
Compiled = tuple[frozenset[str], tuple[str, ...], dict[str, frozenset[type]], dict[str, Any]]
_COMPILED: dict[str, tuple[dict[str, Any], Compiled]] = {}


def _compiled(name: str, parameters: dict[str, Any]) -> Compiled:
    """(the argument names allowed, those required, per plain argument the types that pass outright,
    per argument its schema)."""
    hit = _COMPILED.get(name)
    if hit is None or hit[0] is not parameters:
        props = parameters.get("properties", {})
        plain = {k: _PLAIN_TYPES[v["type"]] for k, v in props.items()
                 if isinstance(v, dict) and v.keys() <= _PLAIN_KEYS and v.get("type") in _PLAIN_TYPES}
        hit = _COMPILED[name] = (parameters, (frozenset(props), tuple(parameters.get("required", [])), plain, props))
    return hit[1]


def arguments_pass(name: str, parameters: dict[str, Any], args: Any) -> bool:
    """True only when :func:`check_arguments` finds nothing wrong, decided from the compiled parameters;
    False also when it cannot tell at once (the full check then decides)."""
    hit = _COMPILED.get(name)  # the compiled parameters, looked up here: a call of _compiled costs more than a check
    compiled = hit[1] if hit is not None and hit[0] is parameters else _compiled(name, parameters)
    allowed, required, plain, props = compiled
    if type(args) is not dict or not allowed.issuperset(args):
        return False
    for k in required:
        if k not in args:
            return False
    for k, v in args.items():
        types = plain.get(k)
        if types is None:
            if _check_value(k, v, props[k]) is not None:
                return False
        elif type(v) not in types:
            return False
    return True


def check_arguments(name: str, parameters: dict[str, Any], args: Any) -> tuple[str, str] | None:
    """(message, hint) describing what is wrong with ``args`` for a tool's ``parameters``, or None."""
    if arguments_pass(name, parameters, args):
        return None
    props, required = parameters.get("properties", {}), parameters.get("required", [])
    problem = _argument_problem(name, props, required, args)
    if problem is None:
        return None
    signature = ", ".join(f"{k}: {v.get('type', 'any')}" + ("" if k in required else "?") for k, v in props.items())
    return problem, f"{name}({signature})"


def _argument_problem(name: str, props: dict[str, Any], required: list[str], args: Any) -> str | None:
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    unknown = args.keys() - props.keys()
    if unknown:
        return f"unknown argument(s) {sorted(unknown)} for {name}"
    missing = [k for k in required if k not in args]
    if missing:
        return f"missing required argument(s) {missing} for {name}"
    for k, v in args.items():
        problem = _check_value(k, v, props[k])
        if problem:
            return problem
    return None


