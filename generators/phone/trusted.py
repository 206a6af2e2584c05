"""Contract records built from values the phone typed itself, at the cost of a dict.

``Model.model_construct`` walks every field's aliases and defaults in Python, about 15 us
a record here; a step builds two or three. :func:`trusted` sets the same ``__dict__`` and
fields-set directly. It takes every field (so no default is needed) and is only for the
plain records it checks on first use: no aliases, no private attributes, no post-init,
extra fields not kept.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_setattr = object.__setattr__
_new = object.__new__  # what ``cls.__new__`` is for a plain record (checked), without looking it up
_FIELDS: dict[type, tuple[tuple[str, ...], frozenset[str]]] = {}


def _fields(cls: type[BaseModel]) -> tuple[tuple[str, ...], frozenset[str]]:
    fields = _FIELDS.get(cls)
    if fields is None:
        plain = (cls.__new__ is object.__new__ and not cls.__pydantic_post_init__ and not cls.__private_attributes__
                 and cls.model_config.get("extra") != "allow"
                 and all(f.alias is None and f.validation_alias is None for f in cls.model_fields.values()))
        if not plain:
            raise TypeError(f"{cls.__name__} is not a plain record: build it with model_construct")
        fields = _FIELDS[cls] = (tuple(cls.model_fields), frozenset(cls.model_fields))
    return fields


def trusted(cls: type[M], **values: Any) -> M:
    """``cls.model_construct(**values)`` for a plain record given every field (fastest in field order)."""
    order, names = _FIELDS.get(cls) or _fields(cls)
    if tuple(values) != order:
        if values.keys() != names:
            raise TypeError(f"{cls.__name__} needs exactly its fields {', '.join(order)}, got {', '.join(values)}")
        values = {f: values[f] for f in order}  # model_construct leaves __dict__ in field order
    m = _new(cls)
    _setattr(m, "__dict__", values)
    _setattr(m, "__pydantic_fields_set__", set(names))
    _setattr(m, "__pydantic_extra__", None)
    _setattr(m, "__pydantic_private__", None)
    return m
