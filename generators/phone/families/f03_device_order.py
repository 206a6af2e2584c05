"""F03: several device changes, in the order the user gave.

Order matters physically too: airplane mode switches Wi-Fi and Bluetooth off, so
"airplane mode, then Wi-Fi on" ends differently from the reverse.
"""

from __future__ import annotations

import random
from functools import cache
from itertools import permutations, product
from typing import Any

from generators.phone.apps.device import DEFAULTS
from generators.phone.families.base import Family, call, finish
from generators.phone.world import World
from warehouse.contract import Action, Requirement, TaskSpec

EITHER = "on or off"  # a switch people ask to turn on or off, as it suits them: only the words say which
# per scenario, the changes people ask for (in any order, any 2, 3 or all 4 of them); levels are (low, high) ranges
SCENARIOS: dict[str, list[tuple[str, Any]]] = {
    "flight": [("airplane_mode", True), ("wifi", EITHER), ("bluetooth", EITHER), ("brightness", (30, 60))],
    "meeting": [("do_not_disturb", True), ("volume_ring", (0, 0)), ("bluetooth", EITHER), ("brightness", (20, 45))],
    "bedtime": [("brightness", (5, 25)), ("do_not_disturb", True), ("volume_alarm", (80, 100)), ("wifi", False)],
    "drive": [("bluetooth", True), ("do_not_disturb", EITHER), ("volume_media", (60, 90)), ("brightness", (75, 100))],
    # the alarm stream in a train scenario: its sets never fit inside bedtime's (dev) or cinema's (test)
    "nap": [("volume_alarm", (70, 100)), ("volume_ring", (0, 0)), ("do_not_disturb", True), ("brightness", (5, 25))],
    "cinema": [("mobile_data", False), ("do_not_disturb", True), ("volume_ring", (0, 0)), ("brightness", (5, 20))],
    "saver": [("battery_saver", True), ("flashlight", False), ("brightness", (10, 30)), ("bluetooth", False)],
}
SPLITS = {"flight": "train", "meeting": "train", "drive": "train", "nap": "train", "bedtime": "dev",
          "cinema": "test", "saver": "challenge"}


def _asks(spec: Any) -> tuple[Any, ...]:
    """What a change can set, as far as telling tasks apart goes: a switch's value (or either), or any level."""
    return ("level",) if isinstance(spec, tuple) else (True, False) if spec == EITHER else (spec,)


@cache
def orders(variant: str, count: int) -> tuple[tuple[tuple[int, Any], ...], ...]:
    """The ways to ask for ``count`` of ``variant``'s changes that no scenario of another split could ask
    for too: (index into the scenario, the switch's value or "level") per change, in the order asked. A
    set of changes that fits inside another split's scenario (the same switches the same way, levels of
    the same settings) is left out, so no task crosses a split however its changes are ordered."""
    changes = SCENARIOS[variant]
    others = [{(name, kind) for name, spec in SCENARIOS[v] for kind in _asks(spec)}
              for v in SCENARIOS if SPLITS[v] != SPLITS[variant]]
    return tuple(asked for order in permutations(range(len(changes)), count)
                 for asked in product(*[[(i, kind) for kind in _asks(changes[i][1])] for i in order])
                 if not any({(changes[i][0], kind) for i, kind in asked} <= other for other in others))


def action_for(setting: str, value: Any) -> Action:
    """The tool call that sets one device setting."""
    if setting.startswith("volume_"):
        return call("device_set_volume", stream=setting.removeprefix("volume_"), level=value)
    if setting == "brightness":
        return call("device_set_brightness", level=value)
    return call(f"device_set_{setting}", enabled=value)


class DeviceOrder(Family):
    """Make 2 to 4 settings changes in a stated order."""

    id = "F03"
    title = "several device changes in a required order"
    tags = ("device", "ordering")
    templates = tuple(f"{v}.{w}" for v in SCENARIOS for w in ("direct", "casual", "terse"))
    tools = ("device_get_settings", "device_check_connectivity", "device_set_wifi", "device_set_bluetooth",
             "device_set_airplane_mode", "device_set_mobile_data", "device_set_do_not_disturb",
             "device_set_volume", "device_set_brightness", "device_set_battery_saver", "device_set_flashlight", "alarms_list", "alarms_create")
    splits = SPLITS
    knobs = {"horizon": "changes 2/3/4"}
    # 1: a scenario's later changes came in an order of the seed's; 2: any of its changes in any order;
    # 3: train scenarios ask for some switches on or off; 4: the nap scenario (train) sets the alarm volume
    revision = 4

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        changes, initial = [], {}
        # no fixed first change to learn a scenario by: the user's words are all that say which comes first
        possible = orders(variant, 1 + levels["horizon"])
        for i, kind in possible[rng.randrange(len(possible))]:
            setting, spec = SCENARIOS[variant][i]
            if kind == "level":
                value = rng.randint(*spec)
                # start far enough away that the change is visible, inside 0..100
                initial[setting] = value + 30 if value <= 50 else value - 30
            else:
                value, initial[setting] = kind, not kind
            changes.append({"setting": setting, "value": value})
        if initial.get("wifi") is False and any(c["setting"] == "airplane_mode" for c in changes):
            initial["mobile_data"] = True  # so the phone is online before the flight
        return {"changes": changes}, {"variant": variant, "device_settings": {**DEFAULTS, **initial},
                                      "user_facts": {}}

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        pass  # the device table is built from device_settings by build_world

    def solve(self, task: TaskSpec) -> list[Action]:
        steps = [action_for(c["setting"], c["value"]) for c in task.public_params["changes"]]
        return steps + [finish(summary="Done, in the order you asked.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        device = [c for c in changes if c["table"] == "device"]
        order = [{"tool": a.tool, "arguments": a.arguments} for a in self.solve(task) if a.kind == "tool_call"]
        return [
            Requirement(id="final_settings", kind="state_diff", description="every setting ends as asked",
                        weight=2.0, params={"table": "device", "match": "exact",
                                            "updated": [{"key": c["key"], "fields": {"value": c["after"]["value"]}}
                                                        for c in device]}),
            Requirement(id="in_order", kind="order", description="the changes were made in the order asked",
                        params={"sequence": order}),
            Requirement(id="no_collateral", kind="allowed_changes", description="no other setting changed",
                        noop_passes=True, params={"allow": [{"table": "device", "keys": [c["key"] for c in device]}]}),
        ]
