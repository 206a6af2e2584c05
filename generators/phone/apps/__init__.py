"""The phone's apps, one module each. Importing this package registers every app's tools.

``install_all`` adds every app's tables to a world; device settings and denied
permissions come from the task. Apps with everyday contents (photos, songs, orders,
spending) are seeded from the world's seed with a generator of their own, so adding
an app never shifts the rows a family draws.
"""

from __future__ import annotations

import random
from typing import Any

from generators.phone.apps import (
    calendar,
    calls,
    clock,
    contacts,
    device,
    files,
    mail,
    media,
    messages,
    notes,
    shop,
    travel,
    wallet,
)
from generators.phone.services import install_services
from generators.phone.world import World
from warehouse.ids import digest

CONTENT_APPS = (contacts, calls, calendar, clock, messages, mail, notes, files, wallet, shop, travel, media)
SEEDED_APPS = (calls, files, wallet, shop, travel, media)


def install_all(world: World, settings: dict[str, Any] | None = None, denied: tuple[str, ...] = (),
                seeded: bool = True) -> None:
    """Install the device and every content app on ``world``; seed everyday contents unless told not to."""
    device.install(world, settings, denied)
    for app in CONTENT_APPS:
        app.install(world)
    install_services(world)
    if seeded:
        for app in SEEDED_APPS:
            app.seed(world, random.Random(int(digest([world.seed, app.__name__], 12), 16)))


__all__ = ["calendar", "calls", "clock", "contacts", "device", "files", "install_all", "mail", "media", "messages",
           "notes", "shop", "travel", "wallet"]
