"""Cascade step 2: replay. Re-execute the recorded actions in a fresh world built from
the task's seed; the final state hash must equal the recorded one.

Catches corrupted or hand-edited episodes. Replays are memoised on (task, actions):
rollouts that did exactly the same thing replay once. External imports have no seed to
replay from and are marked ``not_replayable`` (routing sends them to people).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from functools import partial

import numpy as np
import pandas as pd

from curation.frame import TaskLookup
from curation.marking import marks_frame
from generators.phone.env import replay_actions
from generators.phone.families import get_family
from generators.phone.trusted import trusted
from generators.phone.world import World
from warehouse.contract import Action, TaskSpec
from warehouse.parallel import map_chunks, spreads

CHECK = "replay"

ReplayFn = Callable[[TaskSpec, list[tuple[str, str, dict]]], str]


def replay_hash(task: TaskSpec, actions: list[tuple[str, str, dict]]) -> str:
    """Final state hash after applying ``actions`` ((kind, tool, arguments)) to a fresh world,
    through the phone's own step function (see ``generators.phone.env.replay_actions``)."""
    built, known = _built_world(task)
    world = built.copy()
    replay_actions(task, [trusted(Action, kind=kind, tool=tool, arguments=args, call_id="", text="", raw="")
                          for kind, tool, args in actions], world)
    return world.state_hash(_table_digests(world, built, known))


# the task replayed last, its world as built (never changed) and the digests of that world's tables known so far
_built: tuple[TaskSpec, World, dict[str, str]] | None = None


def _built_world(task: TaskSpec) -> tuple[World, dict[str, str]]:
    """``task``'s initial world, built here from its seed (not the collection's cached world, so
    that replay stays an independent check), and its table digests known so far. Replays come
    task by task, so the one task built last is kept: a task's other rollouts replay from a copy
    (a tenth of a build)."""
    global _built
    built = _built
    if built is None or built[0] is not task:  # the same task object: the same world
        built = _built = (task, get_family(task.family).build_world(task), {})
    return built[1], built[2]


def _table_digests(world: World, built: World, known: dict[str, str]) -> dict[str, str]:
    """Each table's digest in ``world`` (a copy of ``built`` after a replay). A table the replay never
    used still shares the build's rows: its digest is the build's, computed once per task."""
    out = {}
    for name, table in world.tables.items():
        base = built.tables.get(name)
        if base is not None and table.shares(base.readable()):
            d = known.get(name)
            if d is None:
                d = known[name] = world.table_digest(name)
        else:
            d = world.table_digest(name)
        out[name] = d
    return out


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


NO_TEXT = "\x00"
PARALLEL_FROM = 2000  # distinct replays below which worker processes cost more than they save
CHUNK = 256  # replays a worker takes at a time


class ReplayPlan:
    """A ``replay`` mark per episode (match, mismatch, not_replayable or skipped), planned, then worked out.

    The plan: each episode's job (its task and actions), the distinct jobs (each replays once), and the
    marks of those it cannot replay. :meth:`hashes` does the work, in ``workers`` processes from
    :data:`PARALLEL_FROM` distinct jobs (it leaves this process idle: the caller may work meanwhile, in
    another thread); :meth:`marks` reads the result."""

    def __init__(self, episodes: pd.DataFrame, steps: pd.DataFrame, args: list[dict],
                 tasks: Mapping[str, TaskSpec], skip: set[str]):
        starts = np.searchsorted(steps["episode_id"].to_numpy(), episodes["episode_id"].to_numpy(), side="left")
        ends = np.searchsorted(steps["episode_id"].to_numpy(), episodes["episode_id"].to_numpy(), side="right")
        kinds, tools = steps["action_kind"].tolist(), steps["action_tool"].fillna("").tolist()
        # each step as recorded (kind, tool, argument text; no text is not the empty text): equal texts are the
        # same actions, so an episode's joined texts key its replay without encoding its parsed arguments again
        calls = [f"{k}\x1f{t}\x1f{NO_TEXT if a is None else a}" for k, t, a in
                 zip(kinds, tools, steps["action_arguments"].tolist(), strict=True)]
        n = len(episodes)
        self.episodes, self.tasks = episodes, tasks
        self.mark, self.passed, self.reason = [""] * n, [False] * n, [""] * n
        eids, tids = episodes["episode_id"].to_numpy(), episodes["task_id"].to_numpy()
        sources = episodes["source"].to_numpy()
        self.jobs: dict[tuple[str, str], list] = {}  # (task id, actions digest) -> the actions to replay
        self.keys: list[tuple[str, str] | None] = [None] * n
        for i in range(n):
            eid, tid = eids[i], tids[i]
            if sources[i] == "external":
                self.mark[i], self.passed[i] = "not_replayable", True
                self.reason[i] = "external import: no seed to rebuild its world from"
                continue
            if eid in skip or tid is None or tid not in tasks:
                self.mark[i], self.reason[i] = "skipped", "schema check failed: nothing sound to replay"
                continue
            lo, hi = starts[i], ends[i]
            key = self.keys[i] = (str(tid), _hash("\x1e".join(calls[lo:hi])))
            if key not in self.jobs:
                self.jobs[key] = [(kinds[j], tools[j], args[j]) for j in range(lo, hi)]

    def spreads(self, workers: int, executor: Executor | None = None) -> bool:
        """Whether :meth:`hashes` runs in worker processes (or ``executor``'s, a cluster's)."""
        return spreads(-(-len(self.jobs) // CHUNK), workers, _least_chunks(), executor)

    def hashes(self, replay: ReplayFn = replay_hash, workers: int = 1,
               executor: Executor | None = None) -> dict[tuple[str, str], str]:
        """Each job's final hash (or ``error: ...``)."""
        return _replayed(self.jobs, self.tasks, replay, workers, executor)

    def marks(self, hashes: dict[tuple[str, str], str]) -> pd.DataFrame:
        """The marks, given :meth:`hashes`."""
        mark, passed, reason = list(self.mark), list(self.passed), list(self.reason)
        detail: list[dict | None] = [None] * len(mark)
        recorded_hashes = self.episodes["final_state_hash"].to_numpy()
        for i, key in enumerate(self.keys):
            if key is None:
                continue
            got, recorded = hashes[key], recorded_hashes[i]
            ok = got == recorded
            mark[i], passed[i] = ("match" if ok else "mismatch"), ok
            if not ok:
                reason[i] = f"replay ends in {got[:32]}, recorded {str(recorded)[:32]}"
                detail[i] = {"replayed": got, "recorded": recorded}
        return marks_frame(self.episodes, CHECK, mark, passed, reason, detail)


def _replayed(jobs: dict[tuple[str, str], list], tasks: Mapping[str, TaskSpec], replay: ReplayFn,
              workers: int, executor: Executor | None = None) -> dict[tuple[str, str], str]:
    """The final hash (or ``error: ...``) of each job, in worker processes when it pays. A chunk
    carries its own tasks (as Arrow rows when ``tasks`` holds them so): building the specs is the
    workers' job too."""
    keys = sorted(jobs)  # task by task: a chunk rebuilds few distinct worlds
    chunks = [keys[i:i + CHUNK] for i in range(0, len(keys), CHUNK)]
    groups = [list(dict.fromkeys(tid for tid, _ in chunk)) for chunk in chunks]
    work = list(zip(_tasks_of(tasks, groups), [[(tid, jobs[tid, d]) for tid, d in chunk] for chunk in chunks],
                    strict=True))
    parts = map_chunks(partial(_replay_chunks, replay=replay), work, workers=workers, chunk=1,
                       least=_least_chunks(), executor=executor)
    return dict(zip(keys, (h for part in parts for h in part), strict=True))


def _least_chunks() -> int:
    return -(-PARALLEL_FROM // CHUNK)


def _tasks_of(tasks: Mapping[str, TaskSpec], groups: list[list[str]]) -> list[Mapping[str, TaskSpec]]:
    if isinstance(tasks, TaskLookup):
        return tasks.split(groups)
    return [{t: tasks[t] for t in g} for g in groups]


def _replay_chunks(work: list[tuple[Mapping[str, TaskSpec], list[tuple[str, list]]]],
                   replay: ReplayFn) -> list[list[str]]:
    return [_replay_chunk(tasks, chunk, replay) for tasks, chunk in work]


def _replay_chunk(tasks: Mapping[str, TaskSpec], work: list[tuple[str, list]], replay: ReplayFn) -> list[str]:
    specs = tasks
    if isinstance(tasks, TaskLookup):
        try:
            specs = tasks.specs()
        except ValueError:  # a task row that is no task: built one at a time, only its own episodes fail
            specs = tasks
    out = []
    for tid, actions in work:
        try:
            out.append(replay(specs[tid], actions))
        except Exception as exc:  # a replay crash is a finding about this episode, not a crash of the batch
            out.append(f"error: {type(exc).__name__}: {exc}")
    return out
