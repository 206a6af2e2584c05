"""Arrow schemas derived from the contract, and rows to and from records.

Layout rule: a nested record (a model-typed field) is flattened one column per
leaf with a ``parent_`` prefix, so DuckDB can filter on ``action_tool`` or
``verification_label`` directly; scalars and lists of strings keep their native
Arrow types; anything free-form (dicts, ``Any``, lists of records, optional
records) is stored as canonical JSON text.
"""

from __future__ import annotations

import json
import types
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

import orjson
import pyarrow as pa
from pydantic import BaseModel

from warehouse import contract
from warehouse.ids import canonical_json

_SCALARS: dict[type, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    datetime: pa.timestamp("us", tz="UTC"),
}


@dataclass(frozen=True)
class Column:
    name: str  # flat column name
    path: tuple[str, ...]  # where the value lives in the nested record
    arrow: pa.DataType
    json: bool  # stored as JSON text


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _columns(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[Column]:
    cols: list[Column] = []
    for name, field in model.model_fields.items():
        path = prefix + (name,)
        flat = "_".join(path)
        annotation, optional = _unwrap_optional(field.annotation)
        if get_origin(annotation) is Literal:
            annotation = type(get_args(annotation)[0])
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and not optional:
            cols.extend(_columns(annotation, path))
        elif annotation in _SCALARS:
            cols.append(Column(flat, path, _SCALARS[annotation], False))
        elif get_origin(annotation) is list and get_args(annotation) == (str,):
            cols.append(Column(flat, path, pa.list_(pa.string()), False))
        else:
            cols.append(Column(flat, path, pa.string(), True))
    return cols


@dataclass(frozen=True)
class TableSpec:
    """One warehouse table: its record model, Arrow schema and key column."""

    name: str
    model: type[BaseModel]
    key: tuple[str, ...]

    @property
    def columns(self) -> list[Column]:
        return _cached_columns(self.model)

    @property
    def schema(self) -> pa.Schema:
        fields = [pa.field(c.name, c.arrow) for c in self.columns]
        return pa.schema(fields, metadata={"schema_version": contract.SCHEMA_VERSION, "table": self.name})


@cache
def _cached_columns(model: type[BaseModel]) -> list[Column]:
    return _columns(model)


TABLES: dict[str, TableSpec] = {
    "tasks": TableSpec("tasks", contract.TaskSpec, ("task_id",)),
    "episodes": TableSpec("episodes", contract.Episode, ("episode_id",)),
    "steps": TableSpec("steps", contract.Step, ("episode_id", "index")),
    "outcomes": TableSpec("outcomes", contract.Outcome, ("episode_id",)),
    "marks": TableSpec("marks", contract.CurationMark, ("episode_id", "check")),
    "feedback": TableSpec("feedback", contract.FeedbackRecord, ("batch", "task_id", "model")),
}


def _get(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        if data is None:
            return None
        data = data.get(part)
    return data


def to_row(table: TableSpec, record: BaseModel) -> dict[str, Any]:
    """Flatten a record into a row of ``table``'s schema."""
    data = record.model_dump(mode="python")
    row: dict[str, Any] = {}
    for col in table.columns:
        value = _get(data, col.path)
        if col.json:
            value = None if value is None else canonical_json(_jsonable(value))
        row[col.name] = value
    return row


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


# every ASCII digit made a 0: a run of 19 zeros in the text so mapped is a run of 19 digits in the text (UTF-8
# writes nothing else with the bytes of digits); a dozen times faster than a regular expression's search
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19


def has_long_digits(text: str) -> bool:
    """Whether ``text`` holds a run of 19 or more ASCII digits (lone surrogates allowed)."""
    return _LONG_DIGITS in text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO)


def read_json(text: str) -> Any:
    """``json.loads(text)``, the same value, faster: orjson reads it, and json what orjson refuses (NaN and
    Infinity, lone surrogates) or reads otherwise (an integer beyond 64 bits, which orjson makes a float:
    any run of 19 digits goes to json)."""
    if has_long_digits(text):
        return json.loads(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def from_row(table: TableSpec, row: dict[str, Any]) -> BaseModel:
    """Rebuild a record from a row of ``table``'s schema."""
    data: dict[str, Any] = {}
    for col in table.columns:
        if col.name not in row:
            continue
        value = row[col.name]
        if col.json and value is not None:
            value = read_json(value)
        node = data
        for part in col.path[:-1]:
            node = node.setdefault(part, {})
        node[col.path[-1]] = value
    return table.model.model_validate(data)


def to_table(table: TableSpec, records: list[BaseModel]) -> pa.Table:
    """Records to an Arrow table with ``table``'s schema."""
    rows = [to_row(table, r) for r in records]
    return pa.Table.from_pylist(rows, schema=table.schema)
