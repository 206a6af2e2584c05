"""Stage 1, plan: open the round to run (the unfinished one, or a new one with the next plan).

The next plan (flows.planning) comes from the feedback (competence per family) or from a
sampling plan a lead approved with a release; the batch plan itself is pure (generators.batch_plan, generators.mix).
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.planning import plan_and_proposal, selected_families
from flows.stages.context import SettingsDoc, open_settings, open_store, run_log
from generators.batch_plan import Plan
from warehouse import state
from warehouse.errors import ConfigError
from warehouse.settings import Settings
from warehouse.store import Store


def policy_of(settings: Settings) -> dict[str, str]:
    """Who collects a round, stored with its plan so a resumed round keeps its policy."""
    if settings.policy == "openai":
        return {"name": "openai", "model": settings.openai.model or ""}
    return {"name": "scripted", "model": ""}


def check_same_policy(rnd: state.Round, settings: Settings) -> None:
    """A round is finished by the policy that started it; anything else would mix two policies."""
    started = rnd.plan.get("policy", {"name": "scripted", "model": ""})
    wanted = policy_of(settings)
    if started != wanted:
        was = started["name"] + (f" --model {started['model']}" if started["model"] else "")
        raise ConfigError(f"round {rnd.id} was started with --policy {was}; rerun with the same policy to finish it")


def open_or_resume_round(store: Store, settings: Settings) -> tuple[state.Round, bool]:
    """The unfinished round to resume, or a new round with a fresh plan."""
    with store.session() as s:
        last = state.latest_round(session=s)
    if last is not None and last.status != "complete":
        check_same_policy(last, settings)
        return last, True
    number = 1 if last is None else last.number + 1
    r = settings.round
    # the planner's own proposal (for the release page) is stored from the same reading of the feedback
    plan, _ = plan_and_proposal(store, settings, selected_families(settings), number)
    plan_data = {**plan.to_dict(), "shard_size": r.shard_size, "policy": policy_of(settings),
                 "writer": settings.writer}
    with store.session() as s:
        return state.open_round(session=s, requested_episodes=plan.episodes, seed=plan.seed, plan=plan_data), False


def finish_round(store: Store, round_id: str) -> None:
    """Mark the round complete: the next run opens a new one."""
    with store.session() as s:
        state.finish_round(session=s, round_id=round_id)


def plan_summary(rnd: state.Round, resumed: bool) -> str:
    """One log line: the round, its size and its mix."""
    plan = Plan.from_dict(rnd.plan)
    per_family: dict[str, int] = {}
    for slot in plan.slots:
        per_family[slot.family] = per_family.get(slot.family, 0) + slot.rollouts
    mix = ", ".join(f"{f} {n}" for f, n in sorted(per_family.items()))
    verb = "resumed" if resumed else "planned"
    return (f"{rnd.id} {verb}: {plan.episodes} episodes ({mix}), {plan.rollouts} rollouts per task, "
            f"seed {plan.seed}, mix from {plan.source}, policy {rnd.plan.get('policy', {}).get('name', 'scripted')}")


@task(name="plan", cache_policy=NO_CACHE)
def plan_task(settings: SettingsDoc) -> tuple[str, bool]:
    """Open (or resume) the round; returns (round id, resumed)."""
    cfg = open_settings(settings)
    rnd, resumed = open_or_resume_round(open_store(cfg), cfg)
    run_log().info(plan_summary(rnd, resumed))
    return rnd.id, resumed
