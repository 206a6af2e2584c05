"""The reference policy: a family's reference solution followed exactly.

The scripted policy with no mistakes. Its episodes are *reference demonstrations* (a share
of a failure curriculum, see generators.batch_plan): they show what the model fails to do,
and are marked by their policy name so that nothing measures them as the model's attempts.
"""

from __future__ import annotations

from generators.policies.scripted import ScriptedPolicy
from warehouse.contract import REFERENCE_POLICY


class ReferencePolicy(ScriptedPolicy):
    """:class:`ScriptedPolicy` with every mistake rate at zero, under the name ``reference``."""

    name = REFERENCE_POLICY
    version = "0.1"

    def __init__(self, error_rates: dict[str, float] | None = None, seed: int = 0):
        super().__init__({}, seed)  # whatever rates are passed: a reference never errs
