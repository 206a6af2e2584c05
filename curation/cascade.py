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

from curation.cost_select import selection_marks
from curation.cross_split import cross_split_marks
from curation.exact_dup import exact_duplicate_marks
from curation.heuristics import heuristic_marks
from curation.judges import Judge, judge_marks
from curation.marking import marks_frame
from curation.near_dup import NearDupConfig, near_duplicate_marks, near_duplicate_marks_with_history
from curation.pii import ORDER as PII_KINDS
from curation.pii import pii_marks
from curation.replay import ReplayFn, ReplayPlan, replay_hash
from curation.routing import routing_marks
from curation.schema_check import schema_marks
from curation.semantic import Embed
from curation.signatures import call_columns, exact_keys
from curation.steps import GATING, STEPS
from warehouse.contract import TaskSpec

# the checks whose failure keeps an episode out of SFT exports, in cascade order


@dataclass(frozen=True)
class CascadeConfig:
    near_dup: NearDupConfig = NearDupConfig()
    cost_tolerance: float = 0.25
    review_rate: float = 0.05
    pii_kinds: tuple[str, ...] = PII_KINDS
    workers: int = 1  # processes replay may spread over (a large round's replays only)
    # a Dask cluster's executor (a round on ``round.runner = "dask"``): replay's chunks go to its workers
    executor: Executor | None = field(default=None, compare=False)


@dataclass
class CascadeInput:
    episodes: pd.DataFrame  # curation.frame.episode_frame
    steps: pd.DataFrame  # curation.frame.step_frame
    tasks: Mapping[str, TaskSpec]
    prior_exact: dict[str, str] = field(default_factory=dict)  # exact key -> owner, earlier rounds
    known_failure_types: set[str] = field(default_factory=set)
    fetch_results: Callable[[list[str]], pd.DataFrame] | None = None
    replay: ReplayFn = replay_hash
    judges: Sequence[Judge] = ()  # empty: no endpoint configured, the judges step is skipped
    prior_near: tuple[pd.DataFrame, pd.DataFrame] | None = None  # earlier rounds' kept (episodes, steps)
    prior_cross: tuple[pd.DataFrame, pd.DataFrame] | None = None  # ... of every round before those: other splits only
    embed: Embed | None = None  # instruction embeddings for the semantic near-duplicate step (None: off)
    curriculum_families: frozenset[str] = frozenset()  # families this round drew for a failure curriculum


@dataclass
class CascadeResult:
    marks: pd.DataFrame
    funnel: dict
    seconds: dict[str, float]


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


def run_cascade(inp: CascadeInput, config: CascadeConfig = CascadeConfig(),
                on_step: Callable[[str], None] | None = None) -> CascadeResult:
    """Every step's marks for the episodes of ``inp``, and the funnel (``on_step`` hears each step's name)."""
    ep, st = inp.episodes.reset_index(drop=True), inp.steps.reset_index(drop=True)
    seconds: dict[str, float] = {}
    out: list[pd.DataFrame] = []

    def timed(name, fn, *args, **kw):
        t0 = time.perf_counter()
        res = fn(*args, **kw)
        seconds[name] = round(time.perf_counter() - t0, 3)
        if on_step is not None and name in STEPS:
            on_step(name)
        return res

    out.append(timed("verified", verified_marks, ep))
    schema = timed("schema", schema_marks, ep, st)
    out.append(schema)
    # every later step judges what the planner did: a sub-agent's own steps (``subagent:<name>``) are
    # the record of work it was handed, not calls to replay, repeat, count or dedup
    st = planner_steps(st)
    calls = timed("signatures", call_columns, st)
    sound = schema["passed"].to_numpy().copy()
    broken = set(ep["episode_id"][~sound])
    t0 = time.perf_counter()
    plan = ReplayPlan(ep, st, calls["args"].tolist(), inp.tasks, broken)
    # replay is most of the work: when it runs in worker processes, the steps that do not need its marks
    # run here meanwhile (in this process, two busy threads would only take turns)
    with ThreadPoolExecutor(1, thread_name_prefix="replay") as pool:
        spread = plan.spreads(config.workers, config.executor)
        hashing = pool.submit(plan.hashes, inp.replay, config.workers, config.executor) if spread else None
        heur, _ = timed("heuristics", heuristic_marks, ep, st, calls, inp.fetch_results)
        keys = timed("exact_keys", exact_keys, ep, st, calls)
        exact = timed("exact_duplicate", exact_duplicate_marks, ep, keys, inp.prior_exact)
        pii = timed("pii", pii_marks, ep, st, config.pii_kinds)
        hashes = hashing.result() if hashing is not None else plan.hashes(inp.replay)
        replay = timed("replay", plan.marks, hashes)
    seconds["replay"] = round(time.perf_counter() - t0, 3)  # from its plan to its marks, the others meanwhile
    out += [replay, heur, exact]
    sound &= replay["passed"].to_numpy()
    eligible = sound & exact["passed"].to_numpy()
    rate = ep.groupby("task_id")["success"].mean()
    if inp.prior_near is not None and len(inp.prior_near[0]):
        prior_ep, prior_st = inp.prior_near[0], planner_steps(inp.prior_near[1])
        near = timed("near_duplicate", near_duplicate_marks_with_history, ep, st, calls["near_call"], eligible, rate,
                     config.near_dup, prior_ep, prior_st, call_columns(prior_st)["near_call"], inp.embed,
                     config.executor)
    else:
        near = timed("near_duplicate", near_duplicate_marks, ep, st, calls["near_call"], eligible, rate, config.near_dup,
                     embed=inp.embed, executor=config.executor)
    if inp.prior_cross is not None and len(inp.prior_cross[0]):
        cross_ep, cross_st = inp.prior_cross[0], planner_steps(inp.prior_cross[1])
        near = timed("near_duplicate_cross_split", cross_split_marks, near, ep, st, calls["near_call"], eligible, rate,
                     config.near_dup, cross_ep, cross_st, call_columns(cross_st)["near_call"], inp.embed)
    out.append(near)
    eligible &= near["passed"].to_numpy()
    out.append(timed("selection", selection_marks, ep, eligible, config.cost_tolerance))
    out.append(pii)
    disagree = None
    if inp.judges:
        judged = timed("judges", judge_marks, ep, st, inp.judges)
        out.append(judged)
        usable = judged["mark"].isin(["judge_pass", "judge_fail"]).to_numpy()
        verified = ep["success"].fillna(False).to_numpy(dtype=bool)
        disagree = usable & ((judged["mark"] == "judge_pass").to_numpy() != verified)
    out.append(timed("routing", routing_marks, ep, st, heur["passed"].to_numpy(), inp.known_failure_types,
                     config.review_rate, judges_disagree=disagree, curriculum_families=inp.curriculum_families))
    marks = pd.concat(out, ignore_index=True)
    return CascadeResult(marks, funnel_from_marks(marks, len(ep)), seconds)


def funnel_from_marks(marks: pd.DataFrame, episodes_in: int) -> dict:
    """In, what each step marked (by mark), and out (passed every gating step)."""
    by_step: dict[str, dict[str, int]] = {}
    for (check, mark), n in marks.groupby(["check", "mark"]).size().items():
        by_step.setdefault(check, {})[mark] = int(n)
    gating = marks[marks["check"].isin(GATING)]
    failed = set(gating.loc[~gating["passed"], "episode_id"])
    out = episodes_in - len(failed)
    return {"in": episodes_in, "steps": {s: by_step.get(s, {}) for s in STEPS if s in by_step}, "out": out}
