"""Cascade step 6: PII in free text, and the scrubber exports apply.

Kinds: emails, phone numbers (North American with or without separators, ``+15551234567``,
international ``+44 20 7946 0958``), card numbers (Luhn-checked), account numbers (IBAN or
"account ... 12345678"), street addresses (``221B Baker Street``, ``12 main street``). Each
value becomes a placeholder that is consistent within one record (the same number is
``<PHONE_1>`` in the instruction, the call's arguments and the tool result, however each
writes it), so a scrubbed trajectory still makes sense.

Scrubbing works on parsed values: a string that holds JSON text (a call's arguments, a tool
result) is parsed, every string inside it is scrubbed, and it is serialised again, so escapes
(``\\n``, ``\\t``, ``\\u00e9``) neither hide a value nor get broken by a placeholder. Which kinds
are scrubbed is configurable; the export manifest counts replacements.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from curation.marking import marks_frame

CHECK = "pii"

_NB = r"(?<![0-9A-Za-z_+])"  # not inside a longer token (ASCII only: a value may follow CJK text directly)
_NA = r"(?![0-9A-Za-z_])"
_SUFFIX = r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Way|Court|Ct|Place|Pl"
PATTERNS: dict[str, re.Pattern[str]] = {
    "email": re.compile(r"[\w.+-]+(?:'[\w.+-]+)*@[\w-]+(?:\.[\w-]+)+"),
    "card": re.compile(_NB + r"(?:\d[ -]?){12,18}\d" + _NA),
    "account": re.compile(_NB + r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?" + _NA
                          + r"|(?i:account(?: number| no\.?| #)?:?\s*)\d{6,17}" + _NA),
    "phone": re.compile(
        r"(?:(?<![0-9+])\+\d{1,3}[ .-]?\(?\d{1,4}\)?(?:[ .-]?\d{2,4}){2,4}"  # +44 20 7946 0958, +15551234567
        r"|" + _NB + r"\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4})" + _NA  # North American: (555) 123-4567, 555.123.4567, 5551234567
    ),
    "address": re.compile(
        _NB + r"\d{1,5}[A-Za-z]?[ \t]+(?:"
        r"(?:[A-Z][a-z]+[ \t]){1,3}(?:" + _SUFFIX + r")"  # 221B Baker Street, 12 Elm Ave
        r"|(?:[a-z]+[ \t]){1,2}(?i:street|avenue|road|boulevard|lane|drive)"  # 12 main street
        r")(?![A-Za-z])\.?"
    ),
}
ORDER = ("email", "card", "account", "phone", "address")
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


def value_key(kind: str, value: str) -> str:
    """What makes two spellings one value: a phone's last ten digits (``+1 555 123 4567`` is
    ``5551234567``), else its letters and digits, case folded."""
    if kind == "phone":
        digits = re.sub(r"\D", "", value)
        return digits[-10:]
    return re.sub(r"\W", "", value).lower()


def json_container(text: str) -> Any:
    """The object or array ``text`` holds as JSON, else None (plain text, or nesting too deep to parse)."""
    if not text or text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


@dataclass
class Scrubber:
    """Replaces PII of ``kinds`` with placeholders consistent within one record."""

    kinds: tuple[str, ...] = ORDER
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(ORDER)
        if unknown:
            raise ValueError(f"unknown PII kinds: {', '.join(sorted(unknown))}")
        rest = tuple(k for k in self.kinds if k != "card")
        # cards first and on their own: a digit run that fails Luhn must not hide the phone inside it
        self.card = PATTERNS["card"] if "card" in self.kinds else None
        self.pattern = _combined(rest) if rest else None

    def record(self) -> RecordScrub:
        """A scrubber for one record (its own placeholder numbering)."""
        return RecordScrub(self)


class RecordScrub:
    def __init__(self, parent: Scrubber):
        self.parent = parent
        self.seen: dict[tuple[str, str], str] = {}
        self.next: Counter = Counter()
        self.replaced = 0

    def text(self, text: str) -> str:
        """``text`` with every PII value replaced; JSON text is scrubbed as the values it holds."""
        if not text or not isinstance(text, str) or not self.parent.kinds or not _MAYBE.search(text):
            return text
        parsed = json_container(text)
        if parsed is not None:
            before = self.replaced
            scrubbed = self.value(parsed)
            if self.replaced == before:
                return text  # nothing found: the text stays as written
            try:
                return json.dumps(scrubbed, ensure_ascii=False)
            except RecursionError:
                pass  # too deep to write again: scrubbed as plain text below
        if self.parent.card is not None:
            text = self.parent.card.sub(lambda m: self._placeholder("card", m.group(0)), text)
        if self.parent.pattern is not None:
            text = self.parent.pattern.sub(lambda m: self._placeholder(m.lastgroup, m.group(0)), text)
        return text

    def _placeholder(self, kind: str, value: str) -> str:
        if kind == "card" and not luhn_ok(value):
            return value
        key = (kind, value_key(kind, value))
        if key not in self.seen:
            self.next[kind] += 1
            self.seen[key] = f"<{kind.upper()}_{self.next[kind]}>"
        self.parent.counts[kind] += 1
        self.replaced += 1
        return self.seen[key]

    def value(self, value: Any) -> Any:
        """Scrub every string (and object key) inside a JSON-like value; any depth (no recursion)."""
        if isinstance(value, str):
            return self.text(value)
        if not isinstance(value, (dict, list)):
            return value
        root: Any = {} if isinstance(value, dict) else [None] * len(value)
        stack = [(value, root)]
        while stack:
            src, dst = stack.pop()
            for k, v in (src.items() if isinstance(src, dict) else enumerate(src)):
                if isinstance(v, (dict, list)):
                    new: Any = {} if isinstance(v, dict) else [None] * len(v)
                    stack.append((v, new))
                else:
                    new = self.text(v) if isinstance(v, str) else v
                if isinstance(dst, dict):
                    key = self.text(k) if isinstance(k, str) else k
                    while key in dst:  # two spellings of one value as keys: both kept
                        key = f"{key}'"
                    dst[key] = new
                else:
                    dst[k] = new
        return root


def plain_text(text: str) -> str:
    """The strings ``text`` holds when it is JSON text (one per line), else ``text`` itself."""
    parsed = json_container(text)
    if parsed is None:
        return text
    out, stack = [], [parsed]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out += [k for k in v]
            stack += list(v.values())
        elif isinstance(v, list):
            stack += v
        elif isinstance(v, str):
            out.append(v)
    return "\n".join(out)


def pii_counts(texts: pd.Series, kinds: tuple[str, ...] = ORDER) -> pd.DataFrame:
    """Per text, how many values of each kind it holds (cards counted when Luhn-valid; JSON text
    by the strings it holds).

    Each distinct text is searched once (steps repeat the same calls), and only when it holds a
    digit or an @, which every kind needs."""
    codes, distinct = pd.factorize(texts.fillna(""), sort=False)
    counts = np.zeros((len(distinct), len(kinds)), dtype=np.int64)
    for i, text in enumerate(distinct.tolist()):
        if _MAYBE.search(text):
            plain = plain_text(text)
            counts[i] = [_count(kind, plain) for kind in kinds]
    return pd.DataFrame(counts[codes] if len(texts) else np.zeros((0, len(kinds)), dtype=np.int64),
                        columns=list(kinds), index=texts.index)


def _count(kind: str, text: str) -> int:
    found = [m.group(0) for m in PATTERNS[kind].finditer(text)]
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
