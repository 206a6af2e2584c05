"""The next plan from the latest feedback: read feedback, call the pure planner."""

from __future__ import annotations

from generators.competence import Competence, FamilyMix, competence_table, next_mix
from generators.phone.families import get_family
from generators.planner import Plan, plan_round, round_seed
from warehouse.query import iter_records
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


def next_plan(store: Store, settings: Settings, families: list[str], round_number: int) -> Plan:
    """The plan of round ``round_number``: sizes from settings, mix from feedback."""
    r = settings.round
    mix = mix_for(store, settings, families)
    return plan_round(
        episodes=r.episodes,
        rollouts=r.rollouts,
        families=families,
        difficulty=r.difficulty,
        seed=round_seed(r.seed, round_number),
        weights={m.family: m.weight for m in mix},
        difficulties={m.family: m.difficulty for m in mix},
        reasons={m.family: m.reason for m in mix},
    )
