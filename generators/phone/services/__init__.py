"""The phone's agent services: memory, skills and sub-agents (the simulated user is in ``user``).

Importing this package registers their tools. ``install_services`` adds their tables
to a world; families then seed what a task needs (memories, skills, a knowledge base).
"""

from __future__ import annotations

from generators.phone.services import memory, skills, subagents
from generators.phone.world import World


def install_services(world: World, skill_names: tuple[str, ...] | list[str] | None = None) -> None:
    """Add memory, the skills (all curated ones unless ``skill_names`` says which) and the sub-agents."""
    memory.install(world)
    skills.install(world, tuple(skills.CURATED) if skill_names is None else tuple(skill_names))
    subagents.install(world)


__all__ = ["install_services", "memory", "skills", "subagents"]
