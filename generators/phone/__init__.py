"""The simulated phone: world, tools, apps, verifier, task families, environment.

The public API other layers use (curation replays, the CLI, exports):
``World``, ``call_tool``, ``openai_tool_schemas``, ``PhoneEnv``, ``FAMILIES``,
``get_family``, ``evaluate``, ``gate_reason`` and ``scenario_gate_reason`` (the generation gate),
``render_step`` (screens).

Layout: ``world`` (tables, clock, fault plan, hash, diff), ``tools`` (registry, typed
errors), ``apps/`` (one module per app), ``verifier`` + ``checks_calls`` + ``matching``
(requirement kinds, apart from the apps), ``env`` (one episode), ``families/`` (F01-F06,
noise rows, mutants), ``gate`` (the generation gate and its report), ``screens`` (SVG).
"""

from generators.phone import apps  # noqa: F401  (registers every app's tools)
from generators.phone.env import ENV_VERSION, PhoneEnv
from generators.phone.families import FAMILIES, Family, UnknownFamilyError, get_family, split_for_template
from generators.phone.gate import gate_reason, scenario_gate_reason
from generators.phone.screens import render_step
from generators.phone.tools import TOOLS, PhoneError, Tool, call_tool, openai_tool_schemas
from generators.phone.verifier import StepVerifier, evaluate
from generators.phone.world import World, diff_snapshots

__all__ = [
    "ENV_VERSION", "FAMILIES", "TOOLS", "Family", "PhoneEnv", "PhoneError", "StepVerifier", "Tool",
    "UnknownFamilyError", "World", "call_tool", "diff_snapshots", "evaluate", "gate_reason", "get_family",
    "openai_tool_schemas", "render_step", "scenario_gate_reason", "split_for_template",
]
