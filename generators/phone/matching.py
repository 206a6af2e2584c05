"""How a checked value is compared with what an agent wrote: exact, normalised, fuzzy, contains."""

from __future__ import annotations

import difflib
import functools
import re
from typing import Any

PHONE_FORMATTING = re.compile(r"[\s().+-]")  # what people type around a number's digits
PHONE_LIKE = re.compile(r"[+\d][\d\s().-]{5,}")


def _normalised_text(value: str, phone: bool) -> str:
    # a check normalises the same expected values at every step: short texts are remembered
    return _remembered(value, phone) if len(value) <= 200 else _folded(value, phone)


def _folded(value: str, phone: bool) -> str:
    s = " ".join(value.strip().casefold().split())
    if phone or PHONE_LIKE.fullmatch(s):
        return PHONE_FORMATTING.sub("", s)
    return s


_remembered = functools.lru_cache(maxsize=32768)(_folded)


def normalise(value: Any, field: str = "") -> Any:
    """A value as people mean it: case and spacing ignored; phone numbers without their formatting.

    Only formatting (spaces, dashes, dots, parentheses, a plus) leaves a phone number: a
    letter stays, so ``415-555-01O1`` (a letter O) never matches ``415-555-0101``.
    """
    if isinstance(value, str):
        return _normalised_text(value, field == "phone")
    if isinstance(value, list):
        return [normalise(v, field) for v in value]
    return value


FUZZY_RATIO = 0.85  # close enough for a title or a name typed by a person, not for a number


def same(expected: Any, actual: Any, match: str, field: str = "") -> bool:
    """Whether ``actual`` matches ``expected`` under a match kind.

    exact: equal; normalised: equal after case, spacing and phone-digit folding;
    fuzzy: normalised strings at least FUZZY_RATIO alike; contains: the normalised
    expected text appears inside the actual text (a code inside a message).
    """
    if match == "exact":
        return expected == actual
    if match != "contains" and expected == actual:  # equal values normalise alike (the common case: no folding)
        return True
    a, b = normalise(expected, field), normalise(actual, field)
    if match == "contains":
        return isinstance(a, str) and isinstance(b, str) and a in b
    if match == "fuzzy" and isinstance(a, str) and isinstance(b, str):
        return a == b or difflib.SequenceMatcher(None, a, b).ratio() >= FUZZY_RATIO
    return a == b


def fields_match(expected: dict[str, Any], row: dict[str, Any] | None, match: str,
                 per_field: dict[str, str] | None = None) -> bool:
    """Whether every expected field of a row matches (``per_field`` overrides the match kind)."""
    per_field = per_field or {}
    return row is not None and all(same(v, row.get(k), per_field.get(k, match), k) for k, v in expected.items())


def args_match(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Whether a call's arguments include every expected argument (normalised)."""
    return all(same(v, actual.get(k), "normalised", k) for k, v in expected.items())
