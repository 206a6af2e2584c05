"""Function schemas for imported conversations: given ones (a record's ``tools`` or a ``--tools``
file) checked and normalised, and, for a called tool no one described, one inferred from the
arguments of every call to it seen in the file. Pure.

An inferred schema names each argument seen with its JSON type(s); an argument is required
when every call gave it. It says nothing the calls did not show (no descriptions, no enums).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any


class BadToolSchemas(ValueError):
    """The given tool schemas are not OpenAI function schemas; the message says where."""


def normalised_schemas(value: Any, where: str = "tools") -> dict[str, dict[str, Any]]:
    """Name -> ``{"type": "function", "function": {...}}`` from a list of OpenAI tools (or of bare
    function objects, or ``{"tools": [...]}``). BadToolSchemas says what is wrong and where."""
    if isinstance(value, dict) and isinstance(value.get("tools"), list):
        value = value["tools"]
    if not isinstance(value, list) or not value:
        raise BadToolSchemas(f"{where}: expected a non-empty JSON list of OpenAI function schemas")
    out: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(value):
        fn = item.get("function") if isinstance(item, dict) and "function" in item else item
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise BadToolSchemas(f"{where}: item {i + 1} is not a function schema (no function name)")
        params = fn.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, dict):
            raise BadToolSchemas(f"{where}: item {i + 1} ({fn['name']}): parameters is not a JSON object")
        out[fn["name"]] = {"type": "function", "function": {**fn, "parameters": params}}
    return out


def json_type(value: Any) -> str:
    """The JSON type name of a parsed JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_schema(types: Counter, items: Counter) -> dict[str, Any]:
    names = set(types)
    if {"integer", "number"} <= names:  # 3 and 2.5 for one argument: a number
        names.discard("integer")
    ordered = sorted(names)
    schema: dict[str, Any] = {"type": ordered[0] if len(ordered) == 1 else ordered}
    if "array" in names and items:
        item_names = set(items)
        if {"integer", "number"} <= item_names:
            item_names.discard("integer")
        item_list = sorted(item_names)
        schema["items"] = {"type": item_list[0] if len(item_list) == 1 else item_list}
    return schema


class SchemaInference:
    """Schemas inferred from calls seen one at a time (an import streams its records)."""

    def __init__(self) -> None:
        self.n_calls: Counter = Counter()
        self.present: dict[str, Counter] = defaultdict(Counter)
        self.types: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        self.items: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))

    def add(self, name: str, args: dict[str, Any]) -> None:
        self.n_calls[name] += 1
        for key, value in args.items():
            self.present[name][key] += 1
            self.types[name][key][json_type(value)] += 1
            if isinstance(value, list):
                self.items[name][key].update(json_type(v) for v in value)

    def schemas(self) -> dict[str, dict[str, Any]]:
        """Name -> an OpenAI function schema for every tool seen."""
        out = {}
        for name in sorted(self.n_calls):
            present = self.present[name]
            props = {k: _type_schema(self.types[name][k], self.items[name][k]) for k in sorted(present)}
            required = [k for k in sorted(present) if present[k] == self.n_calls[name]]
            out[name] = {"type": "function", "function": {
                "name": name,
                "description": f"(schema inferred from {self.n_calls[name]} call(s): the source gave no tool list)",
                "parameters": {"type": "object", "properties": props, "required": required},
            }}
        return out

