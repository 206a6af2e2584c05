"""Stage 3, collect: one shard of episodes, any policy, committed at once.

A round's shards are submitted concurrently through the flow's task runner (see
flows.round). Inside a shard the episodes run on asyncio through one loop
(generators.collect); the policy is the only thing that differs between a scripted and
a model round, and it is built here from the round's plan.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed, wait
from sqlalchemy.exc import SQLAlchemyError

from flows.model_setup import StateJournal, log_refusals, make_model_engine, make_model_user, model_policy
from flows.prefect_window import shard_run_name
from flows.stages.context import SettingsDoc, open_settings, open_store, run_log, workers, workers_report_here
from flows.stages.write import load_later_sessions, load_tasks
from generators.batch_plan import Plan
from generators.collect import Policy, collect_episodes
from generators.model_collect import BoundModelPolicy
from generators.model_user import ModelUser
from generators.models import Engine
from generators.policies import ReferencePolicy, ScriptedPolicy
from warehouse import ids, state
from warehouse.contract import REFERENCE_POLICY, EpisodeRecord, TaskSpec
from warehouse.episode_commit import commit_episodes
from warehouse.settings import Settings
from warehouse.store import Store


def shard_keys(plan_data: dict) -> list[str]:
    """The collection units of a round; their size was fixed when the round was planned."""
    return ids.shard_keys(len(Plan.from_dict(plan_data).episode_slots()), plan_data["shard_size"])


def shard_slots(plan_data: dict, key: str) -> list[tuple[int, int]]:
    """(task index, rollout) of each episode of shard ``key``."""
    return Plan.from_dict(plan_data).episode_slots()[ids.shard_span(key, plan_data["shard_size"])]


@dataclass(frozen=True)
class CollectRun:
    """What a run's shards are collected under: a round's id, or an eval's batch id (never a round,
    so never training data); the batch the episodes belong to; the policies' seed; whether a model
    policy acts in it (the run then opens the planner's engine)."""

    run_id: str
    batch_id: str
    seed: int
    model: bool


def round_run(rnd: state.Round) -> CollectRun:
    """The collection run of a round, from its stored plan."""
    return CollectRun(rnd.id, f"{rnd.id}-b0", rnd.seed, rnd.plan.get("policy", {}).get("name") == "openai")


Jobs = dict[str, list[tuple[TaskSpec, int]]]  # policy name -> its (task, rollout) jobs


@dataclass
class RunModels:
    """The model engines a run of shards shares (None where it has no such model): the shards that
    run at once in a worker keep to the worker's share of ``openai.concurrency`` together."""

    planner: Engine | None = None
    user: ModelUser | None = None


@asynccontextmanager
async def open_models(round_id: str, store: Store, settings: Settings, *, planner: bool) -> AsyncIterator[RunModels]:
    """The planner's engine (when ``planner``) and the model user (when ``[user]`` sets an endpoint;
    else the scripted user answers), journaled under ``round_id``; closed, and their refusals
    logged, at the end."""
    models = RunModels()
    try:
        if planner:
            models.planner = make_model_engine(settings, store, workers=workers(settings))
        if settings.user.enabled:
            models.user = make_model_user(settings, store, round_id, workers=workers(settings))
        yield models
    finally:
        if models.planner is not None:
            log_refusals(models.planner, "the planner")
            await models.planner.close()
        if models.user is not None:
            log_refusals(models.user.engine, "the simulated user")
            await models.user.engine.close()


def policy_named(name: str, seed: int, round_id: str, store: Store, settings: Settings,
                 engine: Engine | None) -> Policy:
    """The policy ``name`` (scripted, reference or openai: over ``engine``, its replies journaled
    under ``round_id``) for one batch of episodes."""
    if name == REFERENCE_POLICY:
        return ReferencePolicy(seed=seed)
    if name != "openai":
        return ScriptedPolicy(error_rates=settings.scripted.error_rates or None, seed=seed)
    assert engine is not None, "a model policy needs the run's engine"
    return BoundModelPolicy(model_policy(settings.openai), engine, StateJournal(store, round_id))


async def unit_records(store: Store, run: CollectRun, jobs: Jobs, settings: Settings, models: RunModels,
                       created_at: datetime) -> list[EpisodeRecord]:
    """The episodes of one unit: each policy's ``(task, rollout)`` jobs run concurrently on asyncio over
    the run's shared ``models``; records in job order, policy by policy."""
    return [r for policy, group in jobs.items()
            for r in await collect_episodes(
                group, policy_named(policy, run.seed, run.run_id, store, settings, models.planner),
                round_id=run.run_id, batch_id=run.batch_id, created_at=created_at, user=models.user)]


def collect_records(store: Store, round_id: str, jobs: list[tuple[TaskSpec, int]], settings: Settings,
                    started: datetime, *, policy: str, seed: int, batch_id: str | None = None) -> list[EpisodeRecord]:
    """Run ``(task, rollout)`` jobs with the named policy (:func:`unit_records`), uncommitted."""
    run = CollectRun(round_id, batch_id or f"{round_id}-b0", seed, policy == "openai")

    async def go() -> list[EpisodeRecord]:
        async with open_models(round_id, store, settings, planner=run.model) as models:
            return await unit_records(store, run, {policy: jobs}, settings, models, started)

    return asyncio.run(go())


def commit_records(store: Store, round_id: str, key: str, records: list[EpisodeRecord]) -> None:
    """Commit one unit (:func:`warehouse.episode_commit.commit_episodes`: not while an episode the
    endpoint cut off was cut off somewhere new), and say in the run's log what was kept cut off."""
    kept_cut = commit_episodes(store, round_id, key, records)
    if kept_cut:
        run_log().warning(f"{round_id}/{key}: {kept_cut} episode(s) failed at the same step as in the last run; "
                          "kept as endpoint_error")


def shard_jobs(store: Store, rnd: state.Round, key: str) -> Jobs:
    """The ``(task, rollout)`` jobs of shard ``key`` by the policy of their slot (the round's, or the
    reference policy for a reference demonstration), each task's later sessions with it."""
    plan = Plan.from_dict(rnd.plan)
    slots = shard_slots(rnd.plan, key)
    tasks = load_tasks(store, rnd.id, {i: plan.slots[i] for i, _ in slots})
    later = load_later_sessions(store, rnd.id, [t.scenario_id for t in tasks.values() if t.scenario_id])
    round_policy = rnd.plan.get("policy", {}).get("name", "scripted")
    # each session replays alone, so the sessions of a scenario may run concurrently
    jobs: Jobs = {}
    for i, rollout in slots:
        jobs.setdefault(plan.slots[i].policy or round_policy, []).extend(
            (t, rollout) for t in [tasks[i], *later.get(tasks[i].scenario_id, [])])
    return jobs


async def collect_units(store: Store, run: CollectRun, keys: list[str], jobs_of: Callable[[str], Jobs],
                        settings: Settings, *, started: datetime | None = None, at_once: int = 1,
                        done: Callable[[str, dict[str, int]], object] | None = None) -> dict[str, dict[str, int]]:
    """Run the episodes of the shards ``keys`` (``jobs_of(key)``: a shard's jobs) and commit each shard
    (episodes, steps, outcomes) at once, at most ``at_once`` shards at a time over the run's shared
    model engines, calling ``done`` with each shard's counts as it commits. The first failure stops
    the run with its own error; shards committed before it stay. ``started``: the episodes'
    created_at (default: when their shard starts). Rounds and evals both collect through here."""
    counts: dict[str, dict[str, int]] = {}
    slots = asyncio.Semaphore(at_once)

    async def one(key: str) -> None:
        async with slots:
            records = await unit_records(store, run, jobs_of(key), settings, models, started or datetime.now(UTC))
            await asyncio.to_thread(commit_records, store, run.run_id, key, records)  # the other shards go on
            counts[key] = {"episodes": len(records), "successes": sum(r.outcome.success for r in records),
                           "steps": sum(len(r.steps) for r in records)}
            if done is not None:
                done(key, counts[key])

    async with open_models(run.run_id, store, settings, planner=run.model) as models:
        try:
            async with asyncio.TaskGroup() as group:
                for key in keys:
                    group.create_task(one(key))
        except BaseExceptionGroup as group_error:  # the first failure says it best (e.g. EndpointDown)
            raise group_error.exceptions[0] from None
    return counts


async def collect_run(store: Store, round_id: str, keys: list[str], settings: Settings, *,
                      started: datetime | None = None, at_once: int = 1,
                      done: Callable[[str, dict[str, int]], object] | None = None) -> dict[str, dict[str, int]]:
    """:func:`collect_units` over the shards ``keys`` of round ``round_id``."""
    with store.session() as s:
        rnd = s.get(state.Round, round_id)
    return await collect_units(store, round_run(rnd), keys, partial(shard_jobs, store, rnd), settings,
                               started=started, at_once=at_once, done=done)


def collect_shard(store: Store, round_id: str, key: str, settings: Settings, started: datetime) -> dict[str, int]:
    """Run the episodes of one shard and commit them at once (see :func:`collect_run`); its counts."""
    return asyncio.run(collect_run(store, round_id, [key], settings, started=started))[key]


# A worker collects a run of shards in one Prefect task (each shard still committed on its own):
# a task run costs a process pool or a Dask cluster a pickled call and a few API reports, as
# much as a small shard's episodes. Several runs per worker keep the workers evenly loaded.
RUNS_PER_WORKER = 4
PROGRESS_POLL_S = 0.5


def shard_runs(keys: list[str], n_workers: int, per_worker: int = RUNS_PER_WORKER) -> list[list[str]]:
    """``keys`` cut into consecutive runs, about ``per_worker`` per worker."""
    n = max(1, min(len(keys), n_workers * per_worker))
    size, extra = divmod(len(keys), n)
    runs, start = [], 0
    for i in range(n):
        end = start + size + (i < extra)
        runs.append(keys[start:end])
        start = end
    return [r for r in runs if r]


# Shards at once in one worker of a model round: while one shard's last episodes finish (fewer
# calls in flight than the worker's share) and it commits, the next one's calls fill the gap.
# Sharing the engine keeps the share; a scripted round is CPU-bound, so one at a time.
MODEL_SHARDS_AT_ONCE = 2


@task(name="collect-shards", task_run_name=shard_run_name, cache_policy=NO_CACHE)
def collect_run_task(round_id: str, keys: list[str], settings: SettingsDoc) -> dict[str, int]:
    """Collect and commit the shards ``keys`` (each committed on its own); logs each shard's counts to the run."""
    cfg = open_settings(settings)
    store = open_store(cfg)
    with store.session() as s:
        model = s.get(state.Round, round_id).plan.get("policy", {}).get("name") == "openai"

    def logged(key: str, counts: dict[str, int]) -> None:
        run_log().info(f"{round_id}/{key}: {counts['episodes']} episodes, {counts['successes']} verified "
                       f"successes, {counts['steps']} steps")

    counts = asyncio.run(collect_run(store, round_id, keys, cfg, at_once=MODEL_SHARDS_AT_ONCE if model else 1,
                                     done=logged))
    return {k: sum(c[k] for c in counts.values()) for k in ("episodes", "successes", "steps")}


class CommitWatch:
    """Calls ``advance`` once per shard of ``keys`` as its commit is recorded, wherever it ran: a
    thread polls the state database while the runs are out on the workers."""

    def __init__(self, store: Store, round_id: str, keys: list[str], advance: Callable[[], object]) -> None:
        self._store, self._round_id, self._advance = store, round_id, advance
        self._pending = set(keys)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="commit-watch", daemon=True)

    def poll(self) -> None:
        committed = self._pending & self._store.done_keys(self._round_id, "episodes")
        self._pending -= committed
        for _ in committed:
            self._advance()

    def _watch(self) -> None:
        while not self._stop.wait(PROGRESS_POLL_S):
            try:
                self.poll()
            except SQLAlchemyError:  # progress only: a state database that blinks is the round's to report
                continue

    def __enter__(self) -> CommitWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is None:
            self.poll()


def collect_shards(store: Store, round_id: str, keys: list[str], settings: SettingsDoc,
                   advance: Callable[[], object], *, n_workers: int = 1, inline: bool = False,
                   model: bool = False) -> None:
    """Collect the shards ``keys`` through the flow's task runner, in runs spread over ``n_workers``
    (see :func:`shard_runs`; a ``model`` round's in one run per worker, whose shards overlap: see
    :data:`MODEL_SHARDS_AT_ONCE`), calling ``advance`` as each shard commits. The first failure stops
    the round with its own error, once the runs still going have committed or failed. With
    ``inline`` (see flows.runners.collects_inline) they run one after another in this process
    instead: worker processes would cost more than they save."""
    if inline:
        for key in keys:
            collect_run_task(round_id, [key], settings)
            advance()
        return
    with workers_report_here():
        runs = shard_runs(keys, n_workers, 1 if model else RUNS_PER_WORKER)
        futures = [collect_run_task.submit(round_id, run, settings) for run in runs]
    with CommitWatch(store, round_id, keys, advance):
        try:
            for future in as_completed(futures):
                future.result()
        finally:
            wait(futures)

