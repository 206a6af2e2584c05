"""The next plan from the latest feedback: read feedback, call the pure mix and batch plan."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.batch_plan import Plan, plan_round, round_seed
from generators.competence import Competence, batch_order, competence_history, competence_table, is_report
from generators.mix import FailureCount, FamilyMix, MixInputs, harness_reports, next_mix, released_mix
from generators.phone.families import FAMILIES, get_family, split_for_template
from warehouse import review_tables as rt
from warehouse import state
from warehouse.contract import FeedbackRecord
from warehouse.errors import ConfigError
from warehouse.query import iter_records
from warehouse.review_tables import Release
from warehouse.settings import Settings
from warehouse.store import Store


def selected_families(settings: Settings) -> list[str]:
    """The families a round or eval covers (``round.families``, else all); an unknown one is a
    ConfigError. Free of Prefect, so a command checks it before configuring Prefect."""
    ids = settings.round.families or sorted(FAMILIES)
    for fid in ids:
        try:
            get_family(fid)
        except KeyError as exc:
            raise ConfigError(f"unknown family {fid!r} (known: {', '.join(sorted(FAMILIES))})") from exc
    return ids


def feedback_records(store: Store) -> list[FeedbackRecord]:
    """Every feedback result recorded so far (trainer files and evals)."""
    return list(iter_records(store.duck(), "feedback"))


def failure_counts(records: list[FeedbackRecord]) -> list[FailureCount]:
    """Failure types of the newest batch that says why its failures failed (an eval does)."""
    order = batch_order(r for r in records if r.failure_type and not is_report(r))
    if not order:
        return []
    newest = order[0][0]
    counts = Counter((r.family, r.failure_side or "model", r.failure_type) for r in records
                     if r.batch == newest and not r.success and r.failure_type)
    return [FailureCount(f, side, t, n) for (f, side, t), n in sorted(counts.items())]


def trainable_variants(table: dict[tuple, Competence], splits: list[str]) -> dict[tuple, Competence]:
    """Of per-variant competence ((family, variant, level) -> competence), the train variants': a failure
    curriculum draws its easier variants from these, as data to train on (none when ``splits`` leaves out
    train). An eval measures held-out variants; a round of them would add no training row."""
    if splits and "train" not in splits:
        return {}
    return {(fam, variant, level): c for (fam, variant, level), c in table.items()
            if fam in FAMILIES and split_for_template(fam, variant) == "train"}


def mix_for(store: Store, settings: Settings, families: list[str], *,
            skip_batches: str = "", records: list[FeedbackRecord] | None = None) -> tuple[list[FamilyMix], list[str]]:
    """Each family's share, level and reason in the next batch, and the harness-side reports
    (from every feedback batch, or ``records`` when read already, but those whose id starts with
    ``skip_batches``, if given)."""
    r = settings.round
    if not r.adaptive:
        return [FamilyMix(f, 1.0, r.difficulty, "adaptive planning is off") for f in families], []
    records = feedback_records(store) if records is None else records
    if skip_batches:
        records = [rec for rec in records if not rec.batch.startswith(skip_batches)]
    inputs = MixInputs(
        max_difficulty={f: get_family(f).max_difficulty for f in families},
        capabilities={f: get_family(f).capability for f in families},
        variants=trainable_variants(competence_table(records, by_variant=True), r.splits),
        failures=failure_counts(records),
    )
    mix = next_mix(families, competence_table(records), base_difficulty=r.difficulty,
                   max_difficulty=inputs.max_difficulty, inputs=inputs)
    return mix, harness_reports([f for f in inputs.failures if f.family in families])


@dataclass(frozen=True)
class Planned:
    """What the next plans are made from, read once: the feedback, the mix and reports it gives, the
    newest batch the planner learns from, and competence per (family, level)."""

    records: list[FeedbackRecord]
    mixes: list[FamilyMix]
    reports: list[str]
    batch: str | None
    competence: dict[tuple[str, int], Competence]


def planned_from(store: Store, settings: Settings, families: list[str]) -> Planned:
    """Read the feedback once and make of it what every plan of the moment needs."""
    records = feedback_records(store)
    mixes, reports = mix_for(store, settings, families, records=records)
    order = batch_order(r for r in records if not is_report(r))
    return Planned(records, mixes, reports, order[0][0] if order else None, competence_table(records))


def pending_release(store: Store) -> Release | None:
    """The latest approved release whose sampling plan no round has used yet."""
    with store.session() as s:
        rel = rt.latest_release(session=s)
        if rel is None or not rel.sampling_plan:
            return None
        used = any(r.plan.get("source") == f"release {rel.id}" for r in state.list_rounds(session=s))
    return None if used else rel


def next_plan(store: Store, settings: Settings, families: list[str], round_number: int, *,
              use_release: bool = True, planned: Planned | None = None) -> Plan:
    """The plan of round ``round_number`` (from ``planned``, when the feedback was read already).

    A sampling plan a lead approved with a release, and no round has used yet, decides the
    episodes and the family shares (people gate the mix as they gate the data); otherwise
    the sizes come from settings and the mix from the latest feedback. Difficulty always
    follows competence."""
    planned = planned or planned_from(store, settings, families)
    rel = pending_release(store) if use_release else None
    return plan_with(settings, families, round_number, planned, rel)


def check_splits(families: list[str], splits: list[str]) -> None:
    """A ConfigError naming the families that have no template of ``splits`` (none when it is empty),
    before a plan is stored: a round of them could write no task."""
    lacking = [f for f in families if splits and not get_family(f).declared_splits() & set(splits)]
    if lacking:
        has = ", ".join(f"{f} {'/'.join(sorted(get_family(f).declared_splits()))}" for f in lacking)
        raise ConfigError(f"round.splits = {json.dumps(list(splits))}: no template of it in {has}; "
                          "add a split they have, or leave them out (round.families)")


def plan_with(settings: Settings, families: list[str], round_number: int, planned: Planned,
              rel: Release | None) -> Plan:
    """The plan of round ``round_number`` from ``planned``, with the release ``rel``'s sampling plan if given."""
    r = settings.round
    mix = {m.family: m for m in planned.mixes}
    episodes, weights = r.episodes, {f: m.weight for f, m in mix.items()}
    difficulties = {f: m.difficulty for f, m in mix.items()}
    reasons = {f: m.reason for f, m in mix.items()}
    batch = planned.batch if r.adaptive else None
    source = f"feedback {batch}" if batch else "even"
    released = (released_mix(rel.sampling_plan, rel.id, rel.approved_by, mix, families, episodes, difficulties)
                if rel is not None else None)
    if released is not None:
        episodes, weights, families = released.episodes, released.weights, released.families
        difficulties, reasons, source = released.difficulties, released.reasons, released.source
    check_splits(families, r.splits)
    return plan_round(
        episodes=episodes,
        rollouts=r.rollouts,
        families=families,
        difficulty=r.difficulty,
        seed=round_seed(r.seed, round_number),
        weights=weights,
        difficulties={f: difficulties[f] for f in families},
        reasons=reasons,
        source=source,
        curricula={f: {"kind": m.curriculum, "variants": list(m.variants)}
                   for f, m in mix.items() if m.curriculum and f in families},
        reports=planned.reports,
        competence={f: m.competence for f, m in mix.items() if m.competence and f in families},
        reference_share=r.reference_share,
        splits=list(r.splits),
    )


def plan_and_proposal(store: Store, settings: Settings, families: list[str],
                      round_number: int) -> tuple[Plan, Planned]:
    """The plan of round ``round_number`` and the planner's own proposal (no release applied, what the
    release page shows), stored: both from one reading of the feedback, and one plan when no release
    is pending (the proposal is then the plan itself)."""
    planned = planned_from(store, settings, families)
    rel = pending_release(store)
    plan = plan_with(settings, families, round_number, planned, rel)
    own = plan if rel is None else plan_with(settings, families, round_number, planned, None)
    store_proposal(store, planned, own)
    return plan, planned


def next_round_number(store: Store) -> int:
    """The number the next round will have (the unfinished round's, if one is running)."""
    with store.session() as s:
        last = state.latest_round(session=s)
    return 1 if last is None else last.number + (1 if last.status == "complete" else 0)


def plan_view(store: Store, settings: Settings, families: list[str], *, use_release: bool = True) -> dict:
    """What ``flywheel plan --json`` prints: competence and the plan, each number with its reason."""
    planned = planned_from(store, settings, families)
    plan = next_plan(store, settings, families, next_round_number(store), use_release=use_release, planned=planned)
    return plan_data(planned, plan)


def shown_plan(store: Store, settings: Settings, families: list[str]) -> dict:
    """``flywheel plan``: :func:`plan_view` of the next round, the planner's proposal stored on the way."""
    plan, planned = plan_and_proposal(store, settings, families, next_round_number(store))
    return plan_data(planned, plan)


def refresh_stored_proposal(settings: Settings) -> None:
    """Refresh the proposal of an existing data directory (``flywheel review`` calls it on start)."""
    if not settings.in_object_storage and not Path(settings.data_dir).exists():
        return
    refresh_proposal(Store.from_settings(settings, create=False), settings, selected_families(settings))


def history_data(store: Store) -> dict[str, Any]:
    """Competence per family after each feedback batch, and the mix each round ran."""
    with store.session() as s:
        rounds = state.list_rounds(session=s)
    return {
        "competence": competence_history(feedback_records(store)),
        "rounds": [{"round_id": r.id, "episodes": r.requested_episodes, "source": r.plan.get("source", ""),
                    "mix": r.plan.get("weights", {}),
                    "levels": {s["family"]: s["difficulty"] for s in r.plan.get("slots", [])}}
                   for r in rounds],
    }


def refresh_proposal(store: Store, settings: Settings, families: list[str]) -> dict:
    """Store the competence planner's own proposal (no release applied) for the release page,
    with the competence history the dashboard plots (the review app cannot compute either)."""
    planned = planned_from(store, settings, families)
    return store_proposal(store, planned, next_plan(store, settings, families, next_round_number(store),
                                                    use_release=False, planned=planned))


def store_proposal(store: Store, planned: Planned, plan: Plan) -> dict:
    """Store ``plan`` as the planner's proposal, with the competence history; returns what was stored."""
    data = plan_data(planned, plan)
    data["history"] = competence_history(planned.records)
    with store.session() as s:
        state.save_proposal(session=s, data=data)
    return data


def reported_batches(records: list[FeedbackRecord]) -> list[dict[str, Any]]:
    """The evals recorded as reports (on test or train tasks), newest first: they never steer a plan."""
    counts = Counter((r.batch, r.split, r.model) for r in records if is_report(r))
    order = {b: i for i, (b, _) in enumerate(batch_order(r for r in records if is_report(r)))}
    return [{"batch": b, "split": split, "model": model, "results": n}
            for (b, split, model), n in sorted(counts.items(), key=lambda kv: order[kv[0][0]])]


def plan_data(planned: Planned, plan) -> dict[str, Any]:
    """What ``flywheel plan`` shows: competence per family and level (merged over every
    feedback batch, with its uncertainty), and exactly the plan the next round would run,
    each family's numbers with the reason for them; and the evals reported beside it."""
    batch, competence = planned.batch, planned.competence
    levels: dict[str, int] = {}
    episodes: dict[str, int] = {}
    by_variant: dict[str, Counter] = {}  # a reference demonstration is of any variant: not counted
    for slot in plan.slots:
        levels.setdefault(slot.family, slot.difficulty)
        episodes[slot.family] = episodes.get(slot.family, 0) + slot.rollouts
        if len(slot.variants) == 1:
            by_variant.setdefault(slot.family, Counter())[slot.variants[0]] += slot.rollouts
    return {
        "feedback_batch": batch,
        "source": plan.source,
        "episodes": plan.episodes,
        "rollouts": plan.rollouts,
        "splits": sorted({s for slot in plan.slots for s in slot.splits}),  # empty: every split
        "competence": [
            {"family": c.family, "difficulty": c.difficulty, "n": c.n, "successes": c.successes,
             "evidence": round(c.evidence, 4), "mean": round(c.mean, 4), "sd": round(c.sd, 4),
             "batches": c.batches, "models": list(c.models), "zone": c.zone}
            for c in competence.values()
        ],
        "mix": [
            {"family": f, "share": round(w, 4), "episodes": episodes.get(f, 0), "difficulty": levels.get(f),
             "reason": plan.reasons.get(f, ""), "competence": plan.competence.get(f, ""),
             "curriculum": plan.curricula.get(f, {}).get("kind", ""),
             "variants": plan.curricula.get(f, {}).get("variants", []),
             "episodes_by_variant": dict(sorted(by_variant.get(f, {}).items())),
             "reference_episodes": plan.demonstrations.get(f, {}).get("episodes", 0),
             "reference_reason": plan.demonstrations.get(f, {}).get("reason", "")}
            for f, w in sorted(plan.weights.items())
        ],
        "demonstrations": dict(plan.demonstrations),
        "reports": list(plan.reports),
        "reported_evals": reported_batches(planned.records),
    }


def nightly_episodes(store: Store, settings: Settings) -> tuple[int, str]:
    """How many episodes tonight's scheduled round may make, and why.

    The first round, an unfinished round, or a release approved since the last round: the
    usual batch. Otherwise only ``round.unreleased_share`` of it (default none): the
    flywheel waits for people rather than piling up unreviewed data. A pending approved
    plan is never touched here; the round that runs uses it."""
    usual = settings.round.episodes
    with store.session() as s:
        last = state.latest_round(session=s)
        rel = rt.latest_release(session=s)
    if last is None:
        return usual, "the first round"
    if last.status != "complete":
        return usual, f"resuming the unfinished round {last.id}"
    if rel is not None and rel.approved_at >= last.created_at:
        return usual, f"release {rel.id} was approved since {last.id} began"
    share = settings.round.unreleased_share
    n = math.ceil(usual * share)
    what = f"{n} episodes ({share:.0%} of {usual}, round.unreleased_share)" if n else "no round (round.unreleased_share = 0)"
    return n, f"no release approved since {last.id} began: {what}; approve one in the review app"

