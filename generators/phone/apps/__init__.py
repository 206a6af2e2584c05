"""The phone's apps. Importing this package registers every app's tools.

``install_all`` adds every app's tables to a world; device settings and denied
permissions come from the task, the rest starts empty and is filled by a family.
"""

from __future__ import annotations

from typing import Any

from generators.phone.apps import calendar, contacts, device, mail, messages, notes
from generators.phone.world import World

CONTENT_APPS = (contacts, calendar, messages, mail, notes)


def install_all(world: World, settings: dict[str, Any] | None = None, denied: tuple[str, ...] = ()) -> None:
    """Install the device and every content app on ``world``."""
    device.install(world, settings, denied)
    for app in CONTENT_APPS:
        app.install(world)


__all__ = ["calendar", "contacts", "device", "install_all", "mail", "messages", "notes"]
