"""Ids derived from content, so every stage is idempotent."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import orjson

# what json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False) builds,
# made once: the C encoder itself (json.JSONEncoder.encode makes a new one per call, which cost more than
# encoding a small value; the phone encodes a few rows a step); no check for circular values, no JSON anyway
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
try:
    from json.encoder import c_make_encoder, encode_basestring

    _C_ENCODE = c_make_encoder(None, str, encode_basestring, None, ":", ",", True, False, True)
except (ImportError, TypeError):  # another Python's json: the plain way
    _C_ENCODE = None


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the same value, the same text."""
    return "".join(_C_ENCODE(value, 0)) if _C_ENCODE is not None else _CANONICAL.encode(value)


# orjson writes plain data as canonical_json does (every string, every int it takes, every float json writes
# without an exponent: tests/test_storage.py compares them), several times faster; what it refuses (a type of
# its own, a subclass, a key that is no string, an int beyond 64 bits) raises, and json writes it instead
_PLAIN = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | \
    orjson.OPT_PASSTHROUGH_SUBCLASS
# what orjson's text holds where it wrote a float that json writes with an exponent (orjson writes 1e-05 as
# 1e-5 or 0.00001, 1e+16 as 1e+16): a superset found by C's substring search, then the value decides
_EXPONENT_MARKS = (b"e-", b"e+", b"0.0000")


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _odd_float(value: Any) -> bool:
    """Whether ``value`` holds a float that json writes with an exponent, or NaN or Infinity."""
    if isinstance(value, float):
        return not math.isfinite(value) or (value != 0.0 and not 1e-4 <= abs(value) < 1e16)
    if isinstance(value, dict):
        return any(map(_odd_float, value.values()))
    if isinstance(value, list | tuple):
        return any(map(_odd_float, value))
    return False


def plain_json(value: Any) -> str:
    """``canonical_json(value)``, the same text, faster for plain data (the phone's rows: dicts with string
    keys, lists, strings, numbers, booleans, None; a plain Enum member is none: orjson writes its value)."""
    try:
        out = orjson.dumps(value, default=_refuse, option=_PLAIN)
    except TypeError:  # orjson.JSONEncodeError included
        return canonical_json(value)
    if (_EXPONENT_MARKS[0] in out or _EXPONENT_MARKS[1] in out or _EXPONENT_MARKS[2] in out) and _odd_float(value):
        return canonical_json(value)
    # orjson writes NaN and Infinity as null, json as NaN and Infinity: a null that reads back as no None
    # (a NaN never equals itself) is one of them
    if b"null" in out and orjson.loads(out) != value:
        return canonical_json(value)
    return out.decode()


def digest(value: Any, length: int = 16) -> str:
    """A short hex digest of a value's canonical JSON."""
    text = value if isinstance(value, str) else canonical_json(value)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=32).hexdigest()[:length]


def task_id(family: str, template: str, seed: int, difficulty: int = 1) -> str:
    """Task id from family, template, seed and difficulty (the same seed at another
    difficulty builds another world, so it is another task)."""
    return f"t-{family.lower()}-{digest([family, template, seed, difficulty], 12)}"


def episode_id(task: str, policy: str, rollout: int) -> str:
    """Episode id from task id, policy and rollout index."""
    return f"e-{digest([task, policy, rollout], 16)}"


SHARD_SIZE = 25  # episodes per committed shard: a round's default (round.shard_size) and an eval's


def shard_keys(n: int, size: int = SHARD_SIZE) -> list[str]:
    """The keys of the shards ``n`` items are cut into, ``size`` at a time, in order."""
    return [f"s{i:05d}" for i in range((n + size - 1) // size)]


def shard_span(key: str, size: int = SHARD_SIZE) -> slice:
    """Which items shard ``key`` (one of :func:`shard_keys`) holds."""
    i = int(key[1:])
    return slice(i * size, (i + 1) * size)
