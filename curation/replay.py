"""Cascade step 2: replay. Re-execute the recorded actions in a fresh world built from
the task's seed; the final state hash must equal the recorded one.

Catches corrupted or hand-edited episodes. Replays are memoised on (task, actions):
rollouts that did exactly the same thing replay once. External imports have no seed to
replay from and are marked ``not_replayable`` (routing sends them to people).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from curation.marking import marks_frame
from generators.phone.env import replay_final_hash
from warehouse.contract import Action, TaskSpec
from warehouse.ids import digest

CHECK = "replay"

ReplayFn = Callable[[TaskSpec, list[tuple[str, str, dict]]], str]


def replay_hash(task: TaskSpec, actions: list[tuple[str, str, dict]]) -> str:
    """Final state hash after applying ``actions`` ((kind, tool, arguments)) to a fresh world,
    through the phone's own step function (see ``generators.phone.env.replay_final_hash``)."""
    return replay_final_hash(task, [Action.model_construct(kind=kind, tool=tool, arguments=args)
                                    for kind, tool, args in actions])


def replay_marks(
    episodes: pd.DataFrame,
    steps: pd.DataFrame,
    args: list[dict],
    tasks: Mapping[str, TaskSpec],
    skip: set[str],
    replay: ReplayFn = replay_hash,
) -> pd.DataFrame:
    """A ``replay`` mark per episode: match, mismatch, not_replayable or skipped."""
    starts = np.searchsorted(steps["episode_id"].to_numpy(), episodes["episode_id"].to_numpy(), side="left")
    ends = np.searchsorted(steps["episode_id"].to_numpy(), episodes["episode_id"].to_numpy(), side="right")
    kinds, tools = steps["action_kind"].tolist(), steps["action_tool"].fillna("").tolist()
    memo: dict[str, str] = {}  # actions digest -> final hash, for the task being replayed
    n = len(episodes)
    mark, passed, reason = [""] * n, [False] * n, [""] * n
    detail: list[dict | None] = [None] * n
    eids, tids = episodes["episode_id"].to_numpy(), episodes["task_id"].to_numpy()
    sources, recorded_hashes = episodes["source"].to_numpy(), episodes["final_state_hash"].to_numpy()
    current, task = None, None
    # task by task, so each task is built once and memo and task are dropped after it
    for i in np.argsort(tids.astype(str), kind="stable"):
        eid, tid, recorded = eids[i], tids[i], recorded_hashes[i]
        if sources[i] == "external":
            mark[i], passed[i], reason[i] = "not_replayable", True, "external import: no seed to rebuild its world from"
            continue
        if tid != current:
            current, memo = tid, {}
            task = tasks.get(tid) if tid is not None else None
        if eid in skip or task is None:
            mark[i], reason[i] = "skipped", "schema check failed: nothing sound to replay"
            continue
        actions = [(kinds[j], tools[j], args[j]) for j in range(starts[i], ends[i])]
        key = digest(actions, 24)
        got = memo.get(key)
        if got is None:
            try:
                got = memo[key] = replay(task, actions)
            except Exception as exc:  # a replay crash is a finding about this episode, not a crash of the batch
                got = memo[key] = f"error: {type(exc).__name__}: {exc}"
        ok = got == recorded
        mark[i], passed[i] = ("match" if ok else "mismatch"), ok
        if not ok:
            reason[i] = f"replay ends in {got[:32]}, recorded {str(recorded)[:32]}"
            detail[i] = {"replayed": got, "recorded": recorded}
    return marks_frame(episodes, CHECK, mark, passed, reason, detail)
