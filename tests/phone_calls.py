"""Plausible and hostile tool calls for the phone's tests: arguments that name a world's own keys and values,
sometimes a hostile value (empty, huge, of the wrong type), sometimes a required one left out."""

from __future__ import annotations

import random
from typing import Any

from generators.phone.tools import TOOLS
from warehouse.contract import Action

HOSTILE: list[Any] = ["", "x" * 300, -1, 0, 10**9, 2.5, None, True, [], {}, "2026-02-30", "nobody@nowhere"]


def values_for(name: str, world: Any, app: str, rng: random.Random) -> list[Any]:
    """Plausible values of an argument: keys and same-named fields of the app's rows."""
    out: list[Any] = []
    for table in world.tables.values():
        rows = table.readable()  # not table.rows: looking must not copy a table still shared with the kept world
        if table.app != app or not rows:
            continue
        row = rows[rng.choice(sorted(rows))]
        out.append(row[table.key])
        if name in row:
            out.append(row[name])
    return out


def plausible_arguments(tool: str, world: Any, reference: list[Action], rng: random.Random) -> Any:
    """Arguments for a call of ``tool``: often the reference's (one perhaps changed), else drawn per parameter."""
    schema = TOOLS[tool].parameters
    props, required = schema.get("properties", {}), schema.get("required", [])
    borrowed = [a.arguments for a in reference if a.kind == "tool_call" and a.tool == tool]
    if borrowed and rng.random() < 0.4:  # a call of the reference, perhaps with one argument changed
        args = dict(rng.choice(borrowed))
        if args and rng.random() < 0.5:
            key = rng.choice(sorted(args))
            args[key] = rng.choice(values_for(key, world, TOOLS[tool].app, rng) + HOSTILE)
        return args
    args = {}
    for name, prop in props.items():
        if name not in required and rng.random() < 0.5:
            continue
        if name in required and rng.random() < 0.03:  # a required argument left out
            continue
        plausible = values_for(name, world, TOOLS[tool].app, rng)
        if "enum" in prop:
            plausible += list(prop["enum"])
        kind = prop.get("type")
        plausible += {"integer": [1, 2, 3], "number": [5.0, 12.5], "boolean": [True, False], "array": [[]],
                      "string": ["x"]}.get(kind, [])
        pool = plausible if plausible and rng.random() < 0.9 else HOSTILE
        args[name] = rng.choice(pool)
    if rng.random() < 0.02:
        args["no_such_argument"] = 1
    return args
