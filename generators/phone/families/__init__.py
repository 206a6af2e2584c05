"""Task families: what every family shares (``base``), one module per family, the registry by id.

``from generators.phone.families import get_family`` reads the registry (:mod:`.registry`)."""

from __future__ import annotations

from generators.phone.families.base import SPLITS, Family, UnknownKnobError
from generators.phone.families.registry import FAMILIES, UnknownFamilyError, get_family, split_for_template

__all__ = ["FAMILIES", "SPLITS", "Family", "UnknownFamilyError", "UnknownKnobError", "get_family", "split_for_template"]
