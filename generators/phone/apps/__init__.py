"""The phone's apps. Importing this package registers every app's tools."""

from generators.phone.apps import calendar, contacts, device

__all__ = ["calendar", "contacts", "device"]
