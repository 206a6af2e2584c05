"""The cascade's steps by name, in order, and the ones that gate an episode out.

A module of its own so that reading a round's funnel (``flywheel status``) does not import
the cascade itself (pandas, the phone, the judges: a second of start-up)."""

GATING = ("schema", "replay", "exact_duplicate", "near_duplicate", "selection")
STEPS = ("verified", "schema", "replay", "heuristics", "exact_duplicate", "near_duplicate", "selection", "pii", "judges",
         "routing")
