"""Memories a memory family plants: the target among its distractors.

The distractors are the ones that trip real agents: the same key about someone else
(a relationship's preference), the user's own superseded value, and a similar key
with another meaning. Difficulty adds them one by one.
"""

from __future__ import annotations

import random
from datetime import timedelta

from generators.phone.services.memory import add_memory
from generators.phone.world import World

FILLER = [("profile", "home city", "Lisbon"), ("preference", "seat on trains", "window"),
          ("relationship", "sister", "Mara"), ("routine", "gym days", "Tuesday and Thursday"),
          ("episodic", "last dentist visit", "January 12"), ("preference", "tea", "green, no sugar"),
          ("profile", "shoe size", "42"), ("routine", "bedtime", "23:00")]


def plant(world: World, rng: random.Random, *, type: str, key: str, value: str, old_value: str, other: str,
          other_value: str, similar_key: str, similar_value: str, level: int) -> str:
    """Add the target record and, by ``level``, its distractors plus filler; returns the target's id."""
    ago = lambda days: (world.now - timedelta(days=days)).isoformat(timespec="minutes")  # noqa: E731
    for t, k, v in rng.sample(FILLER, 3):
        add_memory(world, t, k, v, at=ago(rng.randint(20, 90)))
    old = None
    if level >= 2:  # the user's own earlier value, since replaced
        old = add_memory(world, type, key, old_value, at=ago(60), status="superseded")
    target = add_memory(world, type, key, value, at=ago(10), supersedes=old["id"] if old else "")
    if old:
        old["superseded_by"] = target["id"]
    add_memory(world, "relationship" if type != "routine" else type, key, other_value, subject=other, at=ago(5))
    if level >= 3:  # a similar key with another meaning
        add_memory(world, type, similar_key, similar_value, at=ago(3))
    return target["id"]
