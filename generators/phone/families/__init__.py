"""Task families by id. ``get_family`` is the one way to look a family up."""

from __future__ import annotations

from warehouse.contract import Split

from generators.phone.families.base import SPLITS, Family, UnknownKnobError, hashed_split
from generators.phone.families.f01_crud import ContactCrud
from generators.phone.families.f02_query import QueryAggregate
from generators.phone.families.f03_device_order import DeviceOrder
from generators.phone.families.f04_recover import RecoverPrerequisite
from generators.phone.families.f05_ask_or_decline import AskOrDecline
from generators.phone.families.f06_carry_over import CarryOver

FAMILIES: dict[str, Family] = {f.id: f for f in (ContactCrud(), QueryAggregate(), DeviceOrder(), RecoverPrerequisite(),
                                                  AskOrDecline(), CarryOver())}


def split_for_template(family_id: str, template: str) -> Split:
    """The split of a task: its family's declared split for the template's variant, else a hash of
    the variant (imported conversations). Never depends on the wording or the seed."""
    family = FAMILIES.get(family_id)
    return family.split_of(template) if family is not None else hashed_split(family_id, template)


class UnknownFamilyError(KeyError):
    """No family has this id."""


def get_family(family_id: str) -> Family:
    """The family with this id (e.g. "F01"); UnknownFamilyError lists the known ids."""
    try:
        return FAMILIES[family_id]
    except KeyError:
        raise UnknownFamilyError(f"unknown family {family_id!r}; known: {', '.join(sorted(FAMILIES))}") from None


__all__ = ["FAMILIES", "SPLITS", "Family", "UnknownFamilyError", "UnknownKnobError", "get_family", "split_for_template"]
