"""Cascade step 4a: exact duplicates, vectorised.

Key: normalised intent, the planner's calls with normalised arguments, and the final
state digest (:func:`curation.signatures.exact_keys`). The first episode with a key,
earlier rounds first, owns it; the others are marked duplicates of the owner.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from curation.marking import marks_frame

CHECK = "exact_duplicate"


def exact_duplicate_marks(episodes: pd.DataFrame, keys: np.ndarray, prior: dict[str, str]) -> pd.DataFrame:
    """An ``exact_duplicate`` mark per episode (``prior``: key -> owner from earlier rounds)."""
    frame = pd.DataFrame({"key": keys, "eid": episodes["episode_id"].to_numpy()})
    first = frame.groupby("key", sort=False)["eid"].transform("first").to_numpy()
    owner = np.array([prior.get(k, f) for k, f in zip(keys, first)], dtype=object)
    dup = owner != frame["eid"].to_numpy()
    return marks_frame(
        episodes, CHECK,
        np.where(dup, "duplicate", "unique"), ~dup,
        [f"same intent, calls and final state as {o}" if d else "" for o, d in zip(owner, dup)],
        [{"key": k, "duplicate_of": o if d else None} for k, o, d in zip(keys, owner, dup)],
    )
