"""Stage 1, plan: open the round to run (the unfinished one, or a new one with the next plan).

The next plan comes from the latest feedback (competence per family) or from a sampling
plan a lead approved with a release; the planner itself is pure (generators.planner).
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.stages.context import SettingsDoc, open_settings, open_store, run_log
from generators.competence import Competence, FamilyMix, competence_table, next_mix
from generators.phone.families import FAMILIES, get_family
from generators.planner import Plan, plan_round, round_seed
from warehouse import review_tables as rt
from warehouse import state
from warehouse.errors import ConfigError
from warehouse.query import iter_records
from warehouse.review_tables import Release
from warehouse.settings import Settings
from warehouse.store import Store


def latest_feedback_batch(store: Store) -> str | None:
    """The newest feedback import or eval: competence is measured on the latest model."""
    rows = store.duck().execute("SELECT batch FROM feedback ORDER BY recorded_at DESC, batch LIMIT 1").fetchall()
    return rows[0][0] if rows else None


def current_competence(store: Store) -> tuple[str | None, dict[tuple[str, int], Competence]]:
    batch = latest_feedback_batch(store)
    if batch is None:
        return None, {}
    return batch, competence_table(iter_records(store.duck(), "feedback", "batch = ?", [batch]))


def mix_for(store: Store, settings: Settings, families: list[str]) -> list[FamilyMix]:
    r = settings.round
    if not r.adaptive:
        return [FamilyMix(f, 1.0, r.difficulty, "adaptive planning is off") for f in families]
    _, competence = current_competence(store)
    maxima = {f: get_family(f).max_difficulty for f in families}
    return next_mix(families, competence, base_difficulty=r.difficulty, max_difficulty=maxima)


def pending_release(store: Store) -> Release | None:
    """The latest approved release whose sampling plan no round has used yet."""
    with store.session() as s:
        rel = rt.latest_release(session=s)
        if rel is None or not rel.sampling_plan:
            return None
        used = any(r.plan.get("source") == f"release {rel.id}" for r in state.list_rounds(session=s))
    return None if used else rel


def next_plan(store: Store, settings: Settings, families: list[str], round_number: int) -> Plan:
    """The plan of round ``round_number``.

    A sampling plan a lead approved with a release, and no round has used yet, decides the
    episodes and the family shares (people gate the mix as they gate the data); otherwise
    the sizes come from settings and the mix from the latest feedback. Difficulty always
    follows competence."""
    r = settings.round
    mix = {m.family: m for m in mix_for(store, settings, families)}
    episodes, weights = r.episodes, {f: m.weight for f, m in mix.items()}
    reasons = {f: m.reason for f, m in mix.items()}
    batch = latest_feedback_batch(store) if r.adaptive else None
    source = f"feedback {batch}" if batch else "even"
    rel = pending_release(store)
    if rel is not None:
        shares = {f: float(v) for f, v in rel.sampling_plan.get("families", {}).items() if f in mix and v > 0}
        if shares:
            episodes = int(rel.sampling_plan.get("episodes") or episodes)
            weights = shares
            families = [f for f in families if f in shares]
            reasons = {f: f"{rel.id} approved by {rel.approved_by}: {shares[f]:.0%}; {mix[f].reason}" for f in families}
            source = f"release {rel.id}"
    return plan_round(
        episodes=episodes,
        rollouts=r.rollouts,
        families=families,
        difficulty=r.difficulty,
        seed=round_seed(r.seed, round_number),
        weights=weights,
        difficulties={f: mix[f].difficulty for f in families},
        reasons=reasons,
        source=source,
    )


def selected_families(settings: Settings) -> list[str]:
    ids = settings.round.families or sorted(FAMILIES)
    for fid in ids:
        try:
            get_family(fid)
        except KeyError as exc:
            raise ConfigError(f"unknown family {fid!r} (known: {', '.join(sorted(FAMILIES))})") from exc
    return ids


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
        plan = next_plan(store, settings, selected_families(settings), number)
        plan_data = {**plan.to_dict(), "shard_size": r.shard_size, "policy": policy_of(settings),
                     "writer": settings.writer}
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
