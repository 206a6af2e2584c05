"""A policy that plays a fixed list of actions, through the collector's policy interface."""

from __future__ import annotations

from generators.collect import Turn


class FixedActions:
    """Plays ``actions`` in order, one per turn (a test's hand-made trajectory)."""

    name, version, model = "fixed", "0", ""
    max_invalid_replies, max_steps = 3, None

    def __init__(self, actions):
        self.actions = actions

    def begin(self, task, episode_id, rollout):
        return self

    async def act(self, steps):
        return Turn(action=self.actions[len(steps)].model_copy(deep=True))
