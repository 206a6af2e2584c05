"""The families by id: ``get_family`` is the one way to look a family up, ``FAMILIES`` lists them all.

Its own module, apart from :mod:`generators.phone.families.base`: a family's module imports what a family is,
never the list of all of them."""

from __future__ import annotations

from generators.phone.families.base import Family, hashed_split
from generators.phone.families.f01_crud import ContactCrud
from generators.phone.families.f02_query import QueryAggregate
from generators.phone.families.f03_device_order import DeviceOrder
from generators.phone.families.f04_recover import RecoverPrerequisite
from generators.phone.families.f05_ask_or_decline import AskOrDecline
from generators.phone.families.f06_carry_over import CarryOver
from generators.phone.families.f07_memory_act import MemoryAct
from generators.phone.families.f08_memory_update import MemoryUpdate
from generators.phone.families.f09_remember_later import RememberLater
from generators.phone.families.f10_skill_use import SkillUse
from generators.phone.families.f11_skill_author import SkillAuthor
from generators.phone.families.f12_delegate import Delegate
from generators.phone.families.f13_errand import Errand
from warehouse.contract import Split

FAMILIES: dict[str, Family] = {f.id: f for f in (ContactCrud(), QueryAggregate(), DeviceOrder(), RecoverPrerequisite(),
                                                  AskOrDecline(), CarryOver(), MemoryAct(),
                                                  MemoryUpdate(), RememberLater(), SkillUse(),
                                                  SkillAuthor(), Delegate(), Errand())}


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

