"""Episodes start from a family's cached world: whatever one episode does to its world, the next
episode of the same task starts exactly where a fresh build from the seed starts."""

from __future__ import annotations

import copy

import pytest

from generators.phone.env import PhoneEnv
from generators.phone.families import FAMILIES
from tests.test_phone_copies import fingerprint


def _trace(env: PhoneEnv, actions) -> list:
    """What an episode shows step by step: each feedback and verification, and the hash after it."""
    out = []
    for action in actions:
        feedback, verification, done = env.step(action)
        out.append((feedback.model_dump(), verification.model_dump(), env.state_hash()))
        if done:
            break
    return out


@pytest.mark.parametrize("fid", sorted(FAMILIES))
def test_an_episode_that_wrecks_its_world_leaves_the_next_episode_of_the_seed_clean(fid):
    family = FAMILIES[fid]
    task = family.make_task(3, 2)
    actions = family.reference_actions(task)
    fresh = PhoneEnv(task, family)
    fresh.reset(fresh=True)  # built from the seed, no cache
    expected_world, expected_hash = copy.deepcopy(fingerprint(fresh.world)), fresh.state_hash()
    expected = _trace(fresh, actions)

    first = PhoneEnv(task, family)
    first.reset()
    assert fingerprint(first.world) == expected_world
    assert _trace(first, actions) == expected
    world = first.world  # then wreck it: every table's rows changed in place, added, removed
    for table in world.tables.values():
        for row in table.rows.values():
            for k in list(row):
                if k != table.key:
                    row[k] = "wrecked"
        table.rows.pop(next(iter(table.rows), None), None)
        table.insert({table.key: "leaked"})
    world.counters["leak"], world.faults[:] = 1, [{"tool": "x", "code": "TIMEOUT", "times": 9}]
    world.events.append({"kind": "leaked"})
    world.rng.random()

    second = PhoneEnv(task, family)
    second.reset()
    assert fingerprint(second.world) == expected_world
    assert second.state_hash() == expected_hash
    assert _trace(second, actions) == expected
