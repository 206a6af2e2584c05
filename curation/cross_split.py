"""Near duplicates across splits, against every earlier round.

The near-duplicate step compares a round with the episodes the last ``near_dup_history_rounds``
rounds kept. A test episode that repeats a training episode of any earlier round, however old,
puts a training task in the test set, so this check reaches every round: each episode still
passing is compared with the earlier rounds' kept episodes of *other* splits beyond that window
(those inside it were compared already), and one found is marked a near duplicate of it.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from curation.near_dup import CallSignatures, NearDupConfig, near_duplicate_marks_with_history
from curation.semantic import Embed


def split_column(frame: pd.DataFrame) -> pd.Series:
    """An episode frame's split (its task's when the episode row has none)."""
    split = frame["split"] if "split" in frame else pd.Series([None] * len(frame), index=frame.index)
    if "task_split" in frame:
        split = split.fillna(frame["task_split"])
    return split.fillna("train").astype(str)


def cross_split_marks(near: pd.DataFrame, episodes: pd.DataFrame, calls: CallSignatures, eligible: np.ndarray,
                     task_success_rate: pd.Series, config: NearDupConfig, prior_episodes: pd.DataFrame,
                     prior_calls: CallSignatures, embed: Embed | None = None) -> pd.DataFrame:
    """``near`` (marks in the order of ``episodes``) with every still-passing episode that nearly
    repeats an earlier episode of another split (``prior_*``) marked a near duplicate of it."""
    if prior_episodes.empty or episodes.empty:
        return near
    near = near.copy()
    splits, prior_splits = split_column(episodes).to_numpy(), split_column(prior_episodes).to_numpy()
    still = near["passed"].to_numpy(dtype=bool) & eligible
    for split in sorted(set(splits[still])):
        pick = still & (splits == split)
        other = prior_splits != split
        if not other.any():
            continue
        ep = episodes.loc[pick].reset_index(drop=True)
        anchors = prior_episodes.loc[other].reset_index(drop=True)
        marks = near_duplicate_marks_with_history(
            ep, calls.take(np.flatnonzero(pick)), np.ones(len(ep), dtype=bool), task_success_rate, config, anchors,
            prior_calls.take(np.flatnonzero(other)), embed)
        anchor_split = dict(zip(anchors["episode_id"], split_column(anchors), strict=True))
        rows = {e: i for i, e in enumerate(near["episode_id"])}
        cols = [near.columns.get_loc(c) for c in ("mark", "passed", "reason", "detail")]
        for _, m in marks.iterrows():
            target = json.loads(m["detail"] or "{}").get("duplicate_of") if m["mark"] == "near_duplicate" else None
            if target not in anchor_split:  # only a repeat of an earlier episode of another split counts here
                continue
            i = rows[m["episode_id"]]
            near.iloc[i, cols] = [
                "near_duplicate", False, f"{m['reason']} in split {anchor_split[target]} (an earlier round)", m["detail"]]
    return near
