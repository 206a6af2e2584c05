"""Noise rows shared by families: realistic rows that must stay exactly as they were."""

from __future__ import annotations

import random
from datetime import timedelta

from generators.phone import seeddata
from generators.phone.apps.calendar import add_event
from generators.phone.apps.contacts import add_random_contact
from generators.phone.apps.mail import add_mail
from generators.phone.apps.messages import add_message
from generators.phone.apps.notes import add_note
from generators.phone.world import World


def contacts(world: World, rng: random.Random, n: int, taken: set[tuple[str, str]]) -> list[str]:
    """``n`` noise contacts with names not in ``taken``; their ids."""
    return [add_random_contact(world, rng, taken)["id"] for _ in range(n)]


def messages(world: World, rng: random.Random, contact_ids: list[str], n: int) -> None:
    """``n`` older messages spread over the given contacts' threads."""
    for _ in range(n if contact_ids else 0):
        at = (world.now - timedelta(hours=rng.randint(2, 24 * 14))).isoformat(timespec="minutes")
        add_message(world, rng.choice(contact_ids), rng.choice(seeddata.MESSAGE_TEXTS),
                    incoming=rng.random() < 0.6, at=at)


def events(world: World, rng: random.Random, n: int, days: tuple[int, int] = (-1, 7)) -> None:
    """``n`` events on days in the given offset range, 07:00 to 19:00."""
    for _ in range(n):
        day = world.now.date() + timedelta(days=rng.randint(*days))
        slot = rng.randrange(14, 38)
        start, end = f"{slot // 2:02d}:{30 * (slot % 2):02d}", f"{slot // 2 + 1:02d}:{30 * (slot % 2):02d}"
        add_event(world, rng.choice(seeddata.EVENT_TITLES), day.isoformat(), start, end,
                  rng.choice(seeddata.LOCATIONS))


def notes(world: World, rng: random.Random, n: int) -> None:
    """``n`` notes in existing folders."""
    folders = sorted(world.table("folders").rows)
    for _ in range(n):
        add_note(world, rng.choice(seeddata.NOTE_TITLES), rng.choice(seeddata.MESSAGE_TEXTS), rng.choice(folders))


def mails(world: World, rng: random.Random, n: int) -> None:
    """``n`` ordinary inbox mails from the last two weeks."""
    subjects = ["Your receipt", "Newsletter: spring picks", "Team offsite", "Invoice #{}", "Re: weekend plans"]
    for _ in range(n):
        first, last = rng.choice(seeddata.FIRST_NAMES), rng.choice(seeddata.LAST_NAMES)
        at = (world.now - timedelta(hours=rng.randint(3, 24 * 14))).isoformat(timespec="minutes")
        add_mail(world, seeddata.email_for(first, last, rng), rng.choice(subjects).format(rng.randint(1000, 9999)),
                 rng.choice(seeddata.MESSAGE_TEXTS), at=at)
