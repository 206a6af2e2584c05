"""Cascade step 6: PII in free text, and the scrubber exports apply.

Kinds: emails, phone numbers, card numbers (Luhn-checked), account numbers (IBAN or
"account ... 12345678"), street addresses. Each value becomes a placeholder that is
consistent within one record (the same number is ``<PHONE_1>`` in the instruction, the
call's arguments and the tool result), so a scrubbed trajectory still makes sense.
Which kinds are scrubbed is configurable; the export manifest counts replacements.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from curation.marking import marks_frame

CHECK = "pii"

PATTERNS: dict[str, re.Pattern[str]] = {
    "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    "card": re.compile(r"\b(?:\d[ -]?){12,18}\d\b"),
    "account": re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b|(?i:account(?: number| no\.?| #)?:?\s*)\d{6,17}\b"),
    "phone": re.compile(r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}\b"),
    "address": re.compile(
        r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Way|Court|Ct|Place|Pl)\b\.?"
    ),
}
ORDER = ("email", "card", "account", "phone", "address")  # cards before phones: a card holds phone-like runs
_MAYBE = re.compile(r"[\d@]")  # every kind holds a digit or an @: most strings are skipped at once


def _combined(kinds: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for all ``kinds`` (one pass per string), alternatives in ``ORDER``."""
    return re.compile("|".join(f"(?P<{k}>{PATTERNS[k].pattern})" for k in ORDER if k in kinds))


def luhn_ok(text: str) -> bool:
    digits = [int(c) for c in text if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


@dataclass
class Scrubber:
    """Replaces PII of ``kinds`` with placeholders consistent within one record."""

    kinds: tuple[str, ...] = ORDER
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(ORDER)
        if unknown:
            raise ValueError(f"unknown PII kinds: {', '.join(sorted(unknown))}")
        self.pattern = _combined(tuple(self.kinds)) if self.kinds else None

    def record(self) -> RecordScrub:
        """A scrubber for one record (its own placeholder numbering)."""
        return RecordScrub(self)


class RecordScrub:
    def __init__(self, parent: Scrubber):
        self.parent = parent
        self.seen: dict[tuple[str, str], str] = {}
        self.next: Counter = Counter()

    def text(self, text: str) -> str:
        """``text`` with every PII value replaced."""
        if not text or not isinstance(text, str) or self.parent.pattern is None or not _MAYBE.search(text):
            return text
        return self.parent.pattern.sub(lambda m: self._placeholder(m.lastgroup, m.group(0)), text)

    def _placeholder(self, kind: str, value: str) -> str:
        if kind == "card" and not luhn_ok(value):
            return value
        key = (kind, re.sub(r"\W", "", value).lower())
        if key not in self.seen:
            self.next[kind] += 1
            self.seen[key] = f"<{kind.upper()}_{self.next[kind]}>"
        self.parent.counts[kind] += 1
        return self.seen[key]

    def value(self, value: Any) -> Any:
        """Scrub every string inside a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value


def pii_counts(texts: pd.Series, kinds: tuple[str, ...] = ORDER) -> pd.DataFrame:
    """Per text, how many values of each kind it holds (cards counted when Luhn-valid).

    Each distinct text is searched once (steps repeat the same calls), and only when it holds a
    digit or an @, which every kind needs."""
    codes, distinct = pd.factorize(texts.fillna(""), sort=False)
    counts = np.zeros((len(distinct), len(kinds)), dtype=np.int64)
    for i, text in enumerate(distinct.tolist()):
        if _MAYBE.search(text):
            counts[i] = [_count(kind, text) for kind in kinds]
    return pd.DataFrame(counts[codes] if len(texts) else np.zeros((0, len(kinds)), dtype=np.int64),
                        columns=list(kinds), index=texts.index)


def _count(kind: str, text: str) -> int:
    found = PATTERNS[kind].findall(text)
    return sum(map(luhn_ok, found)) if kind == "card" else len(found)


def pii_marks(episodes: pd.DataFrame, steps: pd.DataFrame, kinds: tuple[str, ...] = ORDER) -> pd.DataFrame:
    """A ``pii`` mark per episode: found (with counts per kind) or none.

    It passes either way: exports scrub what it found. Free text = the instruction,
    the planner's arguments and its message text."""
    free = steps["action_arguments"].fillna("")
    per_step = pii_counts(free, kinds)
    per_step["episode_id"] = steps["episode_id"].to_numpy()
    by_ep = per_step.groupby("episode_id", sort=False).sum()
    instr = pii_counts(episodes["instruction"], kinds).set_index(episodes["episode_id"])
    total = instr.add(by_ep.reindex(instr.index).fillna(0), fill_value=0).astype(int)
    found = total.sum(axis=1).to_numpy() > 0
    details = [{k: int(v) for k, v in row.items() if v} or None for row in total.to_dict("records")]
    reasons = [", ".join(f"{k} {v}" for k, v in (d or {}).items()) for d in details]
    return marks_frame(episodes, CHECK, np.where(found, "found", "none"), True, reasons, details)
