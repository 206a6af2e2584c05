"""``flywheel export``: select, format and write, with a manifest of what and why."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from curation.exporter import ExportResult, write_jsonl_export
from curation.formats.openai_chat import check_record, to_openai_chat
from curation.selection import exclusion_reason
from generators.phone import openai_tool_schemas
from warehouse import state
from warehouse.contract import SCHEMA_VERSION, Step
from warehouse.errors import InputError
from warehouse.query import iter_records
from warehouse.store import Store


def export_openai_chat(
    store: Store,
    out_dir: Path,
    *,
    include_verified: bool,
    round_ids: list[str] | None = None,
    decisions: dict[str, Any] | None = None,
    release: dict[str, Any] | None = None,
) -> tuple[ExportResult, dict[str, Any]]:
    """Write approved (and with ``include_verified``, verified unreviewed) episodes.

    ``decisions`` (episode id -> object with ``decision`` and ``reviewer``) replaces the
    latest decision per episode, as a release does; ``release`` goes into the manifest."""
    with store.session() as s:
        known = [r.id for r in state.list_rounds(session=s)]
        if decisions is None:
            decisions = state.latest_decisions(session=s)
    rounds = round_ids or known
    unknown = sorted(set(rounds) - set(known))
    if unknown:
        raise InputError(f"unknown round(s): {', '.join(unknown)} (known: {', '.join(known) or 'none'})")
    excluded: Counter[str] = Counter()
    lineage: dict[str, set] = {"rounds": set(), "policies": set(), "seeds": set(), "reviewers": set(), "families": set()}
    seen = {"in": 0}

    def rows() -> Iterator[dict[str, Any]]:
        for round_id in rounds:
            con = store.duck([round_id])
            tasks = {t.task_id: t for t in iter_records(con, "tasks")}
            marks: dict[str, dict] = {}
            for m in iter_records(con, "marks"):
                marks.setdefault(m.episode_id, {})[m.check] = m
            steps: dict[str, list[Step]] = {}
            for st in iter_records(con, "steps"):
                steps.setdefault(st.episode_id, []).append(st)
            for ep in iter_records(con, "episodes"):
                seen["in"] += 1
                review = decisions.get(ep.episode_id)
                decision = review.decision if review else None
                why = exclusion_reason(marks.get(ep.episode_id, {}), decision, include_verified=include_verified)
                if why:
                    excluded[why] += 1
                    continue
                task = tasks[ep.task_id]
                record = to_openai_chat(task, ep, steps.get(ep.episode_id, []), openai_tool_schemas(task.tools))
                problems = check_record(record)
                if problems:
                    excluded["invalid_record"] += 1
                    continue
                lineage["rounds"].add(round_id)
                lineage["policies"].add(ep.policy)
                lineage["seeds"].add(task.seed)
                lineage["families"].add(ep.family)
                if review and review.reviewer:
                    lineage["reviewers"].update(review.reviewer.split(","))
                yield record

    started = datetime.now(UTC).isoformat()

    def manifest() -> dict[str, Any]:
        return {
            "format": "openai-chat",
            "schema_version": SCHEMA_VERSION,
            "created_at": started,
            "selection": "approved + verified unreviewed" if include_verified else "approved",
            "episodes_in": seen["in"],
            "excluded": dict(excluded),
            "lineage": {k: sorted(v) for k, v in lineage.items()},
            **({"release": release} if release else {}),
        }

    result = write_jsonl_export(out_dir, "openai-chat", rows(), manifest)
    return result, manifest()


def export_release(store: Store, out_dir: Path, release_id: str) -> tuple[ExportResult, dict[str, Any]]:
    """Export exactly the episodes of an approved release (or refuse, in one line)."""
    from review_app.release import get_approved_release, release_decisions, release_episode_ids

    rel = get_approved_release(store, release_id)
    if release_episode_ids(store, rel) is None:
        raise InputError(f"release {rel.id} no longer matches the decisions it was approved on; approve a new release")
    info = {
        "id": rel.id, "dataset_version": rel.dataset_version, "approved_by": rel.approved_by,
        "approved_at": rel.approved_at.isoformat(), "episodes": rel.episodes, "sampling_plan": rel.sampling_plan,
    }
    return export_openai_chat(
        store, out_dir, include_verified=False, round_ids=list(rel.round_ids),
        decisions=release_decisions(store, rel), release=info,
    )
