"""Cascade step 2: replay. Re-execute the recorded actions in a fresh world built from
the task's seed; the final state hash must equal the recorded one.

Catches corrupted or hand-edited episodes. Replays are memoised on (task, actions):
rollouts that did exactly the same thing replay once. External imports have no seed to
replay from and are marked ``not_replayable`` (routing sends them to people).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import numpy as np
import pandas as pd

from curation.marking import marks_frame
from generators.phone.env import replay_final_hash
from generators.phone.families import get_family
from generators.phone.world import World
from warehouse.contract import Action, TaskSpec
from warehouse.ids import digest
from warehouse.parallel import map_chunks

CHECK = "replay"

ReplayFn = Callable[[TaskSpec, list[tuple[str, str, dict]]], str]


def replay_hash(task: TaskSpec, actions: list[tuple[str, str, dict]]) -> str:
    """Final state hash after applying ``actions`` ((kind, tool, arguments)) to a fresh world,
    through the phone's own step function (see ``generators.phone.env.replay_final_hash``)."""
    return replay_final_hash(task, [Action.model_construct(kind=kind, tool=tool, arguments=args)
                                    for kind, tool, args in actions], world=_fresh_world(task))


_built: tuple[TaskSpec, World] | None = None  # the task replayed last and its world, never changed


def _fresh_world(task: TaskSpec) -> World:
    """A copy of ``task``'s initial world, built here from its seed (not the collection's cached
    world, so that replay stays an independent check). Replays come task by task, so the one
    task built last is kept: a task's other rollouts replay from a copy (a tenth of a build)."""
    global _built
    built = _built
    if built is None or built[0] is not task:  # the same task object: the same world
        built = _built = (task, get_family(task.family).build_world(task))
    return built[1].copy()


PARALLEL_FROM = 2000  # distinct replays below which worker processes cost more than they save
CHUNK = 256  # replays a worker takes at a time


def replay_marks(
    episodes: pd.DataFrame,
    steps: pd.DataFrame,
    args: list[dict],
    tasks: Mapping[str, TaskSpec],
    skip: set[str],
    replay: ReplayFn = replay_hash,
    workers: int = 1,
) -> pd.DataFrame:
    """A ``replay`` mark per episode: match, mismatch, not_replayable or skipped.

    Each distinct (task, actions) replays once. With ``workers`` > 1 and at least
    :data:`PARALLEL_FROM` distinct replays, they are spread over that many processes."""
    starts = np.searchsorted(steps["episode_id"].to_numpy(), episodes["episode_id"].to_numpy(), side="left")
    ends = np.searchsorted(steps["episode_id"].to_numpy(), episodes["episode_id"].to_numpy(), side="right")
    kinds, tools = steps["action_kind"].tolist(), steps["action_tool"].fillna("").tolist()
    n = len(episodes)
    mark, passed, reason = [""] * n, [False] * n, [""] * n
    detail: list[dict | None] = [None] * n
    eids, tids = episodes["episode_id"].to_numpy(), episodes["task_id"].to_numpy()
    sources, recorded_hashes = episodes["source"].to_numpy(), episodes["final_state_hash"].to_numpy()
    jobs: dict[tuple[str, str], tuple[TaskSpec, list]] = {}  # (task, actions digest) -> what to replay
    keys: list[tuple[str, str] | None] = [None] * n
    for i in range(n):
        eid, tid = eids[i], tids[i]
        if sources[i] == "external":
            mark[i], passed[i], reason[i] = "not_replayable", True, "external import: no seed to rebuild its world from"
            continue
        task = tasks.get(tid) if tid is not None else None
        if eid in skip or task is None:
            mark[i], reason[i] = "skipped", "schema check failed: nothing sound to replay"
            continue
        actions = [(kinds[j], tools[j], args[j]) for j in range(starts[i], ends[i])]
        keys[i] = (str(tid), digest(actions, 24))
        jobs.setdefault(keys[i], (task, actions))
    hashes = _replayed(jobs, replay, workers)
    for i, key in enumerate(keys):
        if key is None:
            continue
        got, recorded = hashes[key], recorded_hashes[i]
        ok = got == recorded
        mark[i], passed[i] = ("match" if ok else "mismatch"), ok
        if not ok:
            reason[i] = f"replay ends in {got[:32]}, recorded {str(recorded)[:32]}"
            detail[i] = {"replayed": got, "recorded": recorded}
    return marks_frame(episodes, CHECK, mark, passed, reason, detail)


def _replayed(jobs: dict[tuple[str, str], tuple[TaskSpec, list]], replay: ReplayFn,
              workers: int) -> dict[tuple[str, str], str]:
    """The final hash (or ``error: ...``) of each job, in worker processes when it pays."""
    keys = sorted(jobs)  # task by task: a chunk rebuilds few distinct worlds
    hashes = map_chunks(partial(_replay_chunk, replay=replay), [jobs[k] for k in keys], workers=workers,
                        chunk=CHUNK, least=PARALLEL_FROM)
    return dict(zip(keys, hashes, strict=True))


def _replay_chunk(work: list[tuple[TaskSpec, list]], replay: ReplayFn) -> list[str]:
    out = []
    for task, actions in work:
        try:
            out.append(replay(task, actions))
        except Exception as exc:  # a replay crash is a finding about this episode, not a crash of the batch
            out.append(f"error: {type(exc).__name__}: {exc}")
    return out
