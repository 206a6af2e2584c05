"""Ids derived from content, so every stage is idempotent."""

from __future__ import annotations

import hashlib
import json
from typing import Any


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
