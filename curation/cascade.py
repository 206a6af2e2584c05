"""The curation cascade: each step a pure function over columns that returns marks.

    verified ─ schema ─ replay ─ heuristics ─ exact dup ─ near dup ─ selection ─ pii ─ routing

A step sees the marks of the steps before it only through ``eligible`` masks (a broken
episode is not replayed, a duplicate is not selected). Nothing is deleted: every episode
gets one mark per step, and the funnel counts what each step marked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
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


@dataclass
class CascadeResult:
    table: pa.Table  # the marks, in the warehouse's ``marks`` schema
    funnel: dict
    seconds: dict[str, float]

    @property
    def marks(self) -> pd.DataFrame:
        """The marks as a frame (one row per episode and check)."""
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
    episode frame); their marks are Arrow tables already."""

    marks: dict[str, list[pa.Table]]
    sound: np.ndarray  # schema and replay passed
    heuristics_passed: np.ndarray
    keys: np.ndarray  # exact-duplicate keys
    calls: CallSignatures
    touched: dict[str, list[str]]  # sensitive calls
    judges_disagree: np.ndarray | None

    @classmethod
    def empty(cls, n: int, config: CascadeConfig, judged: bool) -> EpisodeChecks:
        return cls({}, np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.empty(n, dtype=object),
                   CallSignatures.empty(n, config.near_dup.num_perm), {},
                   np.zeros(n, dtype=bool) if judged else None)


def episode_checks(ep: pd.DataFrame, st: pd.DataFrame, inp: CascadeInput, config: CascadeConfig, timed,
                   out: EpisodeChecks, rows: np.ndarray) -> None:
    """The checks that judge each episode on its own, for the episodes ``ep`` (rows ``rows`` of the
    round's) and their steps ``st``, into ``out``."""
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
        spread = plan.spreads(config.workers, config.executor)
        hashing = pool.submit(plan.hashes, inp.replay, config.workers, config.executor) if spread else None
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
    for name, frame in marks.items():
        out.marks.setdefault(name, []).append(to_arrow(frame))


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


def run_cascade(inp: CascadeInput, config: CascadeConfig = CascadeConfig(),
                on_step: Callable[[str], None] | None = None) -> CascadeResult:
    """Every step's marks for the episodes of ``inp``, and the funnel (``on_step`` hears each step's name).

    The checks that judge an episode on its own run a chunk of whole tasks at a time
    (``config.chunk_episodes``), each chunk's steps read and let go; the round-wide ones (exact and
    near duplicates, selection, routing) then run over the episodes with what those left: keys,
    call signatures, pass/fail columns. Marks become Arrow columns as soon as a check is done."""
    ep = inp.episodes.reset_index(drop=True)
    timed = _Timer()
    checks = EpisodeChecks.empty(len(ep), config, bool(inp.judges))
    chunks = task_chunks(ep, config.chunk_episodes)
    for rows in chunks:
        part = ep if len(chunks) == 1 else ep.iloc[rows].reset_index(drop=True)
        episode_checks(part, _steps_of(inp, part, len(chunks) == 1).reset_index(drop=True), inp, config, timed,
                       checks, rows)
    tables: list[pa.Table] = []

    def done(name: str, frame: pd.DataFrame | None = None) -> None:
        tables.extend(checks.marks.pop(name, []) if frame is None else [to_arrow(frame)])
        if on_step is not None and name in STEPS:
            on_step(name)

    for name in ("verified", "schema", "replay", "heuristics"):
        done(name)
    exact = timed("exact_duplicate", exact_duplicate_marks, ep, checks.keys, inp.prior_exact)
    done("exact_duplicate", exact)
    eligible = checks.sound & exact["passed"].to_numpy()
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
    done("near_duplicate", near)
    eligible &= near["passed"].to_numpy()
    done("selection", timed("selection", selection_marks, ep, eligible, config.cost_tolerance))
    done("pii")
    done("judges")
    done("routing", timed("routing", routing_marks, ep, checks.touched, checks.heuristics_passed, inp.known_failure_types,
                          config.review_rate, judges_disagree=checks.judges_disagree,
                          curriculum_families=inp.curriculum_families))
    table = pa.concat_tables(tables)
    return CascadeResult(table, funnel_from_marks(table, len(ep)), timed.seconds)


def funnel_from_marks(table: pa.Table, episodes_in: int) -> dict:
    """In, what each step marked (by mark), and out (passed every gating step)."""
    counts = table.group_by(["check", "mark"]).aggregate([([], "count_all")]).to_pylist()
    by_step: dict[str, dict[str, int]] = {}
    for row in sorted(counts, key=lambda r: (r["check"], r["mark"])):
        by_step.setdefault(row["check"], {})[row["mark"]] = int(row["count_all"])
    gating = pc.and_(pc.is_in(table["check"], pa.array(sorted(GATING))), pc.invert(table["passed"]))
    failed = pc.count_distinct(table.filter(gating)["episode_id"]).as_py()
    return {"in": episodes_in, "steps": {s: by_step.get(s, {}) for s in STEPS if s in by_step}, "out": episodes_in - failed}
