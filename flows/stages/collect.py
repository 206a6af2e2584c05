"""Stage 3, collect: one shard of episodes, any policy, committed at once.

A round's shards are submitted concurrently through the flow's task runner (see
flows.round). Inside a shard the episodes run on asyncio through one loop
(generators.collect); the policy is the only thing that differs between a scripted and
a model round, and it is built here from the round's plan.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed, wait

from flows.model_setup import StateJournal, log_refusals, make_engine, make_model_user, model_policy
from flows.stages.context import SettingsDoc, open_settings, open_store, run_log, workers, workers_report_here
from flows.stages.write import load_later_sessions, load_tasks
from generators.collect import Policy, collect_episodes
from generators.model_collect import ModelPlanner
from generators.model_user import ModelUser
from generators.planner import Plan
from generators.policies import ReferencePolicy, ScriptedPolicy
from warehouse import state
from warehouse.contract import REFERENCE_POLICY, EpisodeRecord, TaskSpec
from warehouse.settings import Settings
from warehouse.store import Store


def shard_keys(plan_data: dict) -> list[str]:
    """The collection units of a round; their size was fixed when the round was planned."""
    shard_size = plan_data["shard_size"]
    n = len(Plan.from_dict(plan_data).episode_slots())
    return [f"s{i:05d}" for i in range((n + shard_size - 1) // shard_size)]


def shard_slots(plan_data: dict, key: str) -> list[tuple[int, int]]:
    """(task index, rollout) of each episode of shard ``key``."""
    i = int(key[1:])
    shard_size = plan_data["shard_size"]
    return Plan.from_dict(plan_data).episode_slots()[i * shard_size : (i + 1) * shard_size]


@asynccontextmanager
async def open_policy(name: str, seed: int, round_id: str, store: Store, settings: Settings) -> AsyncIterator[Policy]:
    """The policy ``name`` (scripted, reference or openai) open for one batch of episodes; a
    model policy journals its replies under ``round_id``."""
    if name == REFERENCE_POLICY:
        yield ReferencePolicy(seed=seed)
        return
    if name != "openai":
        yield ScriptedPolicy(error_rates=settings.scripted.error_rates or None, seed=seed)
        return
    engine = make_engine(settings, store, workers=workers(settings))
    try:
        yield ModelPlanner(model_policy(settings.openai), engine, StateJournal(store, round_id))
    finally:
        log_refusals(engine, "the planner")
        await engine.close()


@asynccontextmanager
async def open_user(round_id: str, store: Store, settings: Settings) -> AsyncIterator[ModelUser | None]:
    """The model user when ``[user]`` sets an endpoint (journaled under ``round_id``), else None: the
    scripted user answers."""
    if not settings.user.enabled:
        yield None
        return
    user = make_model_user(settings, store, round_id, workers=workers(settings))
    try:
        yield user
    finally:
        log_refusals(user.engine, "the simulated user")
        await user.engine.close()


def collect_records(store: Store, round_id: str, jobs: list[tuple[TaskSpec, int]], settings: Settings,
                    started: datetime, *, policy: str, seed: int, batch_id: str | None = None) -> list[EpisodeRecord]:
    """Run ``(task, rollout)`` jobs with the named policy, concurrently on asyncio; records in job order."""

    async def run() -> list[EpisodeRecord]:
        async with open_policy(policy, seed, round_id, store, settings) as actor, \
                open_user(round_id, store, settings) as user:
            return await collect_episodes(jobs, actor, round_id=round_id, batch_id=batch_id or f"{round_id}-b0",
                                          created_at=started, user=user)

    return asyncio.run(run())


def commit_records(store: Store, round_id: str, key: str, records: list[EpisodeRecord]) -> None:
    """Episodes, steps and outcomes of one unit, written and recorded at once."""
    store.commit_unit(round_id, key, {"episodes": [r.episode for r in records],
                                      "steps": [s for r in records for s in r.steps],
                                      "outcomes": [r.outcome for r in records]})


def collect_shard(store: Store, round_id: str, key: str, settings: Settings, started: datetime) -> dict[str, int]:
    """Run the episodes of one shard and commit them (episodes, steps, outcomes) at once: each
    by its slot's policy (the round's, or the reference policy for a reference demonstration).
    Returns the shard's counts."""
    with store.session() as s:
        rnd = s.get(state.Round, round_id)
    plan = Plan.from_dict(rnd.plan)
    slots = shard_slots(rnd.plan, key)
    tasks = load_tasks(store, round_id, {i: plan.slots[i] for i, _ in slots})
    later = load_later_sessions(store, round_id, [t.scenario_id for t in tasks.values() if t.scenario_id])
    round_policy = rnd.plan.get("policy", {}).get("name", "scripted")
    # each session replays alone, so the sessions of a scenario may run concurrently
    jobs: dict[str, list[tuple[TaskSpec, int]]] = {}
    for i, rollout in slots:
        jobs.setdefault(plan.slots[i].policy or round_policy, []).extend(
            (t, rollout) for t in [tasks[i], *later.get(tasks[i].scenario_id, [])])
    records = [r for policy, group in jobs.items()
               for r in collect_records(store, round_id, group, settings, started, policy=policy, seed=rnd.seed)]
    commit_records(store, round_id, key, records)
    return {"episodes": len(records), "successes": sum(r.outcome.success for r in records),
            "steps": sum(len(r.steps) for r in records)}


@task(name="collect-shard", cache_policy=NO_CACHE)
def collect_shard_task(round_id: str, key: str, settings: SettingsDoc) -> dict[str, int]:
    """Collect and commit one shard; logs its counts to the run."""
    cfg = open_settings(settings)
    counts = collect_shard(open_store(cfg), round_id, key, cfg, started=datetime.now(UTC))
    run_log().info(f"{round_id}/{key}: {counts['episodes']} episodes, {counts['successes']} verified successes, "
                   f"{counts['steps']} steps")
    return counts


def collect_shards(round_id: str, keys: list[str], settings: SettingsDoc, advance: Callable[[], object], *,
                   inline: bool = False) -> None:
    """Collect the shards ``keys`` at once through the flow's task runner, calling ``advance`` as each
    commits. The first failure stops the round with its own error, once the shards still running
    have committed or failed. With ``inline`` (see flows.runners.collects_inline) they run one after
    another in this process instead: worker processes would cost more than they save."""
    if inline:
        for key in keys:
            collect_shard_task(round_id, key, settings)
            advance()
        return
    with workers_report_here():
        futures = [collect_shard_task.submit(round_id, key, settings) for key in keys]
    try:
        for future in as_completed(futures):
            future.result()
            advance()
    finally:
        wait(futures)
