"""Dates and times as people and agents write them, resolved on the virtual clock."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from generators.phone.tools import PhoneError

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
DATE_HINT = "use YYYY-MM-DD, 'today', 'tomorrow', 'yesterday', a weekday ('friday', 'next monday') or 'in N days'"
TIME_HINT = "use 24-hour HH:MM (e.g. 07:30) or '7:30 am'"


def resolve_date(text: str, now: datetime) -> date:
    """The date ``text`` names, relative to ``now``; PhoneError INVALID_ARGUMENT otherwise.

    A bare weekday means its next occurrence after today (today's own weekday means
    today a week on would surprise people, so it means today).
    """
    s = " ".join(str(text).strip().lower().split())
    today = now.date()
    if s in ("today", "tonight"):
        return today
    if s == "tomorrow":
        return today + timedelta(days=1)
    if s == "yesterday":
        return today - timedelta(days=1)
    m = re.fullmatch(r"in (\d{1,3}) days?", s)
    if m:
        return today + timedelta(days=int(m.group(1)))
    m = re.fullmatch(r"(next |this |on )?(" + "|".join(WEEKDAYS) + r")", s)
    if m:
        ahead = (WEEKDAYS.index(m.group(2)) - today.weekday()) % 7
        if m.group(1) == "next " and ahead == 0:
            ahead = 7
        return today + timedelta(days=ahead)
    try:
        return date.fromisoformat(s)
    except ValueError:
        raise PhoneError("INVALID_ARGUMENT", f"cannot read date {text!r}", hint=DATE_HINT) from None


def parse_time(text: str) -> str:
    """``HH:MM`` (24-hour) for ``text`` such as '07:30', '7:30 am', '9pm'; PhoneError otherwise."""
    s = str(text).strip().lower().replace(".", "")
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?", s)
    if not m:
        raise PhoneError("INVALID_ARGUMENT", f"cannot read time {text!r}", hint=TIME_HINT)
    hour, minute, half = int(m.group(1)), int(m.group(2) or 0), m.group(3)
    if half:
        if not 1 <= hour <= 12:
            raise PhoneError("INVALID_ARGUMENT", f"hour {hour} is not valid with {half}", hint=TIME_HINT)
        hour = hour % 12 + (12 if half == "pm" else 0)
    elif m.group(2) is None:  # a bare number like "9" is ambiguous
        raise PhoneError("INVALID_ARGUMENT", f"ambiguous time {text!r}", hint=TIME_HINT)
    if hour > 23 or minute > 59:
        raise PhoneError("INVALID_ARGUMENT", f"time {text!r} is out of range", hint=TIME_HINT)
    return f"{hour:02d}:{minute:02d}"
