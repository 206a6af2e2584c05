"""The next plan from the latest feedback: read feedback, call the pure planner."""

from __future__ import annotations

from generators.competence import Competence, FamilyMix, competence_table, next_mix
from generators.phone.families import get_family
from generators.planner import Plan, plan_round, round_seed
from warehouse import review_tables as rt
from warehouse import state
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
