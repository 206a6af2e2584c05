"""The curation cascade: each step a pure function over columns that returns marks.

    verified ─ schema ─ replay ─ heuristics ─ exact dup ─ near dup ─ selection ─ pii ─ routing

A step sees the marks of the steps before it only through ``eligible`` masks (a broken
episode is not replayed, a duplicate is not selected). Nothing is deleted: every episode
gets one mark per step, and the funnel counts what each step marked.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from curation.cost_select import selection_marks
from curation.cross_split import cross_split_marks
from curation.exact_dup import exact_duplicate_marks
from curation.heuristics import heuristic_marks
from curation.judges import Judge, judge_marks
from curation.marking import marks_frame, to_arrow
from curation.near_dup import CallSignatures, NearDupConfig, near_duplicate_marks, near_duplicate_marks_with_history
from curation.pii import ORDER as PII_KINDS
from curation.pii import pii_marks
from curation.replay import ReplayFn, ReplayPlan, replay_hash
from curation.routing import routing_marks, sensitive_calls
from curation.schema_check import schema_marks
from curation.semantic import Embed
from curation.signatures import call_columns, exact_keys
from curation.steps import GATING, STEPS
from warehouse.contract import TaskSpec
from warehouse.schemas import TABLES

# the checks whose failure keeps an episode out of SFT exports, in cascade order


CHUNK_EPISODES = 20_000  # the per-episode checks read a round's steps and tasks about this many episodes at a time


@dataclass(frozen=True)
class CascadeConfig:
    near_dup: NearDupConfig = NearDupConfig()
    cost_tolerance: float = 0.25
    review_rate: float = 0.05
    pii_kinds: tuple[str, ...] = PII_KINDS
    workers: int = 1  # processes replay may spread over (a large round's replays only)
    # a Dask cluster's executor (a round on ``round.runner = "dask"``): replay's chunks go to its workers
    executor: Executor | None = field(default=None, compare=False)
    chunk_episodes: int = CHUNK_EPISODES


@dataclass
class CascadeInput:
    episodes: pd.DataFrame  # curation.frame.episode_frame
    steps: pd.DataFrame | None  # curation.frame.step_frame; None: ``steps_of`` reads them a chunk at a time
    tasks: Mapping[str, TaskSpec] | None  # None: ``tasks_of`` reads them a chunk at a time
    prior_exact: dict[str, str] = field(default_factory=dict)  # exact key -> owner, earlier rounds
    known_failure_types: set[str] = field(default_factory=set)
    fetch_results: Callable[[list[str]], pd.DataFrame] | None = None
    replay: ReplayFn = replay_hash
    judges: Sequence[Judge] = ()  # empty: no endpoint configured, the judges step is skipped
    prior_near: tuple[pd.DataFrame, pd.DataFrame] | None = None  # earlier rounds' kept (episodes, steps)
    prior_cross: tuple[pd.DataFrame, pd.DataFrame] | None = None  # ... of every round before those: other splits only
    embed: Embed | None = None  # instruction embeddings for the semantic near-duplicate step (None: off)
    curriculum_families: frozenset[str] = frozenset()  # families this round drew for a failure curriculum
    # the steps of the given episodes (ordered by episode id and index), for a round too large to hold its
    # steps at once (curation.frame.step_frame with episode ids)
    steps_of: Callable[[list[str]], pd.DataFrame] | None = None
    tasks_of: Callable[[list[str]], Mapping[str, TaskSpec]] | None = None  # ... and the tasks of the given ids


MarkSink = Callable[[pa.Table], None]  # takes each table of marks as it is made (a shard writer)


@dataclass
class CascadeResult:
    table: pa.Table | None  # the marks, in the warehouse's ``marks`` schema (None: they went to a sink)
    funnel: dict
    seconds: dict[str, float]
    rows: int = 0  # marks made

    @property
    def marks(self) -> pd.DataFrame:
        """The marks as a frame (one row per episode and check)."""
        if self.table is None:
            raise ValueError("this cascade's marks went to a sink")
        return self.table.to_pandas()


def planner_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """``steps`` without the sub-agents' own rows (order kept, index renumbered)."""
    if "actor" not in steps.columns or steps.empty:
        return steps
    delegated = steps["actor"].fillna("").astype(str).str.startswith("subagent").to_numpy()
    return steps[~delegated].reset_index(drop=True) if delegated.any() else steps


def verified_marks(episodes: pd.DataFrame) -> pd.DataFrame:
    """Did the verifier pass the episode?"""
    ok = episodes["success"].fillna(False).to_numpy(dtype=bool)
    reason = np.where(ok, "every hard requirement passed", "failed: " + episodes["failure_type"].fillna(episodes["termination"].fillna("no outcome")).astype(str))
    # An import has no requirements to check: its success is the reward its source reported, and
    # with no reward its outcome is unknown (not a failure).
    external = (episodes["source"] == "external").to_numpy()
    unknown = external & episodes["success"].isna().to_numpy() & episodes["has_outcome"].astype(bool).to_numpy()
    reason = np.where(external, np.where(ok, "reported reward (external import: no requirements to check)",
                                         "reported reward below 0.5 (external import)"), reason)
    reason = np.where(unknown, "no reward reported (external import): outcome unknown", reason)
    mark = np.where(ok, "verified", np.where(unknown, "unknown", "not_verified"))
    return marks_frame(episodes, "verified", mark, ok, reason,
                       [{"progress": float(p) if p == p else None, "termination": t}
                        for p, t in zip(episodes["progress"], episodes["termination"], strict=True)])


def task_chunks(episodes: pd.DataFrame, size: int) -> list[np.ndarray]:
    """Row numbers of ``episodes`` in chunks of about ``size`` episodes, in order, all of a task's
    episodes in one chunk (a task larger than ``size`` is a chunk of its own)."""
    if len(episodes) <= size:
        return [np.arange(len(episodes))]
    codes, _ = pd.factorize(episodes["task_id"].fillna("\x00").astype(str))
    counts = np.bincount(codes)
    chunk_of_task = pd.factorize((np.cumsum(counts) - counts) // size)[0]
    chunk = chunk_of_task[codes]
    return [np.flatnonzero(chunk == c) for c in range(chunk_of_task.max() + 1)]


@dataclass
class EpisodeChecks:
    """What the per-episode checks of a round leave for the round-wide ones (rows of the round's
    episode frame)."""

    sound: np.ndarray  # schema and replay passed
    heuristics_passed: np.ndarray
    keys: np.ndarray | None  # exact-duplicate keys (let go once that check is done)
    calls: CallSignatures | None  # ... and call signatures (once the near-duplicate check is)
    touched: dict[str, list[str]]  # sensitive calls
    judges_disagree: np.ndarray | None

    @classmethod
    def empty(cls, n: int, config: CascadeConfig, judged: bool) -> EpisodeChecks:
        return cls(np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.empty(n, dtype=object),
                   CallSignatures.empty(n, config.near_dup.num_perm), {},
                   np.zeros(n, dtype=bool) if judged else None)


def episode_checks(ep: pd.DataFrame, st: pd.DataFrame, inp: CascadeInput, config: CascadeConfig, timed,
                   out: EpisodeChecks, rows: np.ndarray, executor: Executor | None = None) -> dict[str, pa.Table]:
    """The checks that judge each episode on its own, for the episodes ``ep`` (rows ``rows`` of the
    round's) and their steps ``st``: what the round-wide checks need goes into ``out``, the marks are
    returned. ``executor``: where replay spreads (config.executor, or a pool the chunks share)."""
    marks: dict[str, pd.DataFrame] = {"verified": timed("verified", verified_marks, ep)}
    schema = marks["schema"] = timed("schema", schema_marks, ep, st)
    # every later step judges what the planner did: a sub-agent's own steps (``subagent:<name>``) are
    # the record of work it was handed, not calls to replay, repeat, count or dedup
    st = planner_steps(st)
    calls = timed("signatures", call_columns, st)
    sound = schema["passed"].to_numpy().copy()
    broken = set(ep["episode_id"][~sound])
    t0 = time.perf_counter()
    tasks = inp.tasks if inp.tasks is not None else inp.tasks_of(ep["task_id"].dropna().unique().tolist())
    plan = ReplayPlan(ep, st, calls["args"].tolist(), tasks, broken)
    # replay is most of the work: when it runs in worker processes, the steps that do not need its marks
    # run here meanwhile (in this process, two busy threads would only take turns)
    with ThreadPoolExecutor(1, thread_name_prefix="replay") as pool:
        spread = plan.spreads(config.workers, executor)
        hashing = pool.submit(plan.hashes, inp.replay, config.workers, executor) if spread else None
        marks["heuristics"], _ = timed("heuristics", heuristic_marks, ep, st, calls, inp.fetch_results)
        out.keys[rows] = timed("exact_keys", exact_keys, ep, st, calls)
        marks["pii"] = timed("pii", pii_marks, ep, st, config.pii_kinds)
        hashes = hashing.result() if hashing is not None else plan.hashes(inp.replay)
        marks["replay"] = timed("replay", plan.marks, hashes)
    timed.add("replay", time.perf_counter() - t0)  # from its plan to its marks, the others meanwhile
    out.calls.put(rows, timed("near_signatures", CallSignatures.of, ep, st, calls["near_call"],
                              config.near_dup.num_perm))
    out.touched.update(sensitive_calls(st))
    out.sound[rows] = sound & marks["replay"]["passed"].to_numpy()
    out.heuristics_passed[rows] = marks["heuristics"]["passed"].to_numpy()
    if inp.judges:
        judged = marks["judges"] = timed("judges", judge_marks, ep, st, inp.judges)
        usable = judged["mark"].isin(["judge_pass", "judge_fail"]).to_numpy()
        verified = ep["success"].fillna(False).to_numpy(dtype=bool)
        out.judges_disagree[rows] = usable & ((judged["mark"] == "judge_pass").to_numpy() != verified)
    return {name: to_arrow(frame) for name, frame in marks.items()}


class _Timer:
    """Seconds per cascade step, summed over chunks."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def __call__(self, name, fn, *args, **kw):
        t0 = time.perf_counter()
        res = fn(*args, **kw)
        if name != "replay":  # replay's time is its plan's to its marks (see episode_checks)
            self.add(name, time.perf_counter() - t0)
        return res

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = round(self.seconds.get(name, 0.0) + seconds, 3)


def _steps_of(inp: CascadeInput, ep: pd.DataFrame, whole: bool) -> pd.DataFrame:
    if inp.steps is None:
        if inp.steps_of is None:
            raise ValueError("a cascade input needs its steps or a steps_of reader")
        return inp.steps_of(ep["episode_id"].tolist())
    if whole:
        return inp.steps
    return inp.steps[inp.steps["episode_id"].isin(ep["episode_id"])].reset_index(drop=True)


def _prior_calls(prior: tuple[pd.DataFrame, pd.DataFrame], num_perm: int) -> tuple[pd.DataFrame, CallSignatures]:
    episodes, steps = prior[0], planner_steps(prior[1])
    return episodes, CallSignatures.of(episodes, steps, call_columns(steps)["near_call"], num_perm)


class _Marks:
    """Where each table of marks goes as soon as it is made (``sink``, or kept for the result), and the
    funnel counted on the way: no step's marks for a whole round are held at once."""

    def __init__(self, episodes: int, sink: MarkSink | None):
        self.episodes, self.sink = episodes, sink
        self.kept: list[pa.Table] = []
        self.counts: dict[tuple[str, str], int] = {}
        self.failed = np.zeros(episodes, dtype=bool)  # by episode row: failed a gating check
        self.rows = 0

    def add(self, table: pa.Table, rows: np.ndarray | None = None) -> None:
        """``table``'s marks, one per episode row of ``rows`` (None: every row, in order)."""
        for row in table.group_by(["check", "mark"]).aggregate([([], "count_all")]).to_pylist():
            key = (row["check"], row["mark"])
            self.counts[key] = self.counts.get(key, 0) + int(row["count_all"])
        if len(table) and table["check"][0].as_py() in GATING:
            failed = ~table["passed"].to_numpy()
            self.failed[np.flatnonzero(failed) if rows is None else rows[failed]] = True
        self.rows += table.num_rows
        if self.sink is not None:
            self.sink(table)
        else:
            self.kept.append(table)

    def funnel(self) -> dict:
        by_step: dict[str, dict[str, int]] = {}
        for (check, mark), n in sorted(self.counts.items()):
            by_step.setdefault(check, {})[mark] = n
        return {"in": self.episodes, "steps": {s: by_step[s] for s in STEPS if s in by_step},
                "out": self.episodes - int(self.failed.sum())}

    def table(self) -> pa.Table | None:
        """The kept marks, step by step in cascade order (None when they went to the sink)."""
        if self.sink is not None:
            return None
        if not self.kept:
            return TABLES["marks"].schema.empty_table()
        table = pa.concat_tables(self.kept)
        rank = pc.index_in(table["check"], pa.array(STEPS))
        return table.take(pc.sort_indices(pa.table({"rank": rank, "row": np.arange(len(table))}),
                                          [("rank", "ascending"), ("row", "ascending")]))


@contextmanager
def _replay_pool(config: CascadeConfig, chunks: int) -> Iterator[Executor | None]:
    """Where replay spreads: the configured executor (a cluster's); else, for a round of several chunks
    on several workers, one pool of processes that every chunk shares (each starts in about a second)."""
    if config.executor is not None or config.workers <= 1 or chunks <= 1:
        yield config.executor
        return
    with ProcessPoolExecutor(config.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


ROUND_WIDE = ("exact_duplicate", "near_duplicate", "selection", "routing")  # after the chunks, on the whole round


def run_cascade(inp: CascadeInput, config: CascadeConfig = CascadeConfig(),
                on_progress: Callable[[int, int], None] | None = None, sink: MarkSink | None = None) -> CascadeResult:
    """Every step's marks for the episodes of ``inp``, and the funnel.

    The checks that judge an episode on its own run a chunk of whole tasks at a time
    (``config.chunk_episodes``), each chunk's steps read and let go; the round-wide ones (exact and
    near duplicates, selection, routing) then run over the episodes with what those left: keys,
    call signatures, pass/fail columns. Each chunk's marks, and each round-wide check's, go to
    ``sink`` as they are made (without one they are kept, in cascade order, in the result's table).
    ``on_progress(done, total)`` hears each chunk and each round-wide check end."""
    ep = inp.episodes.reset_index(drop=True)
    timed = _Timer()
    out = _Marks(len(ep), sink)
    checks = EpisodeChecks.empty(len(ep), config, bool(inp.judges))
    chunks = task_chunks(ep, config.chunk_episodes)
    done, total = 0, len(chunks) + len(ROUND_WIDE)

    def progressed() -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total)

    with _replay_pool(config, len(chunks)) as executor:
        for rows in chunks:
            part = ep if len(chunks) == 1 else ep.iloc[rows].reset_index(drop=True)
            marks = episode_checks(part, _steps_of(inp, part, len(chunks) == 1).reset_index(drop=True), inp, config,
                                   timed, checks, rows, executor)
            for name in STEPS:
                if name in marks:
                    out.add(marks.pop(name), rows)
            progressed()

    def done_with(frame: pd.DataFrame) -> None:
        out.add(to_arrow(frame))
        progressed()

    exact = timed("exact_duplicate", exact_duplicate_marks, ep, checks.keys, inp.prior_exact)
    eligible = checks.sound & exact["passed"].to_numpy()
    done_with(exact)
    del exact
    checks.keys = None
    rate = ep.groupby("task_id")["success"].mean()
    nd = config.near_dup
    if inp.prior_near is not None and len(inp.prior_near[0]):
        prior_ep, prior_calls = _prior_calls(inp.prior_near, nd.num_perm)
        near = timed("near_duplicate", near_duplicate_marks_with_history, ep, checks.calls, eligible, rate, nd, prior_ep,
                     prior_calls, inp.embed, config.executor)
    else:
        near = timed("near_duplicate", near_duplicate_marks, ep, checks.calls, eligible, rate, nd, embed=inp.embed,
                     executor=config.executor)
    if inp.prior_cross is not None and len(inp.prior_cross[0]):
        cross_ep, cross_calls = _prior_calls(inp.prior_cross, nd.num_perm)
        near = timed("near_duplicate_cross_split", cross_split_marks, near, ep, checks.calls, eligible, rate, nd,
                     cross_ep, cross_calls, inp.embed)
    eligible &= near["passed"].to_numpy()
    done_with(near)
    del near
    checks.calls = None  # the signatures' last reader was the near-duplicate step
    done_with(timed("selection", selection_marks, ep, eligible, config.cost_tolerance))
    done_with(timed("routing", routing_marks, ep, checks.touched, checks.heuristics_passed, inp.known_failure_types,
                    config.review_rate, judges_disagree=checks.judges_disagree,
                    curriculum_families=inp.curriculum_families))
    return CascadeResult(out.table(), out.funnel(), timed.seconds, out.rows)


def funnel_from_marks(table: pa.Table, episodes_in: int) -> dict:
    """In, what each step marked (by mark), and out (passed every gating step)."""
    counts = table.group_by(["check", "mark"]).aggregate([([], "count_all")]).to_pylist()
    by_step: dict[str, dict[str, int]] = {}
    for row in sorted(counts, key=lambda r: (r["check"], r["mark"])):
        by_step.setdefault(row["check"], {})[row["mark"]] = int(row["count_all"])
    gating = pc.and_(pc.is_in(table["check"], pa.array(sorted(GATING))), pc.invert(table["passed"]))
    failed = pc.count_distinct(table.filter(gating)["episode_id"]).as_py()
    return {"in": episodes_in, "steps": {s: by_step.get(s, {}) for s in STEPS if s in by_step}, "out": episodes_in - failed}
