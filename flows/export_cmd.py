"""``flywheel export``: pick the rounds, load review decisions, run one export per format."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from curation.export_run import FORMATS, run_export
from curation.export_source import episode_count
from curation.exporter import ExportResult
from curation.formats.dpo import LEVELS
from curation.pii import Scrubber
from flows.prefect_window import publish_export
from flows.progress import StepProgress
from review_app.agreement import Overlap
from review_app.final import final_decisions
from review_app.release import get_approved_release, release_decisions, release_episode_ids
from warehouse import state
from warehouse.errors import InputError, StorageError, one_line
from warehouse.settings import Settings
from warehouse.store import Store


def export(
    store: Store,
    out_dir: Path,
    *,
    fmt: str = "openai",
    include_verified: bool,
    round_ids: list[str] | None = None,
    scrub: bool = True,
    settings: Settings | None = None,
    decisions: Mapping[str, Any] | None = None,
    release: dict[str, Any] | None = None,
    pairs: str | None = None,
    progress: bool = False,
) -> tuple[ExportResult, dict[str, Any]]:
    """Write one export of ``fmt`` (see :data:`curation.export_run.FORMATS`) into ``out_dir``.

    Which review decision counts is :func:`review_app.final.final_decisions` under the
    configured overlap (a partial or disputed episode is not approved). ``decisions``
    (episode id -> object with ``decision``, ``reviewer``, ``first_wrong_step``) replaces
    them, as a release does with those as of its approval; ``release`` goes into the manifest.
    ``pairs`` (dpo only): episode, step or both (default episode). ``progress`` shows a bar
    over the episodes read on stderr."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if pairs is not None and fmt != "dpo":
        raise InputError(f"--pairs is for --format dpo, not {fmt}")
    if pairs is not None and pairs not in LEVELS:
        raise InputError(f"unknown --pairs {pairs!r} (one of {', '.join(LEVELS)})")
    if store.holds(out_dir):  # an export among the shards would be taken for the warehouse's own files
        raise InputError(f"--out {one_line(str(out_dir))} is inside the data directory {store.location}: "
                         "write exports elsewhere")
    with store.session() as s:
        known = [r.id for r in state.list_rounds(session=s)]
    rounds = round_ids or known
    if decisions is None:
        overlap = Overlap.from_settings(settings) if settings is not None else Overlap()
        decisions = final_decisions(store, None, overlap)
    unknown = sorted(set(rounds) - set(known))
    if unknown:
        raise InputError(f"unknown round(s): {', '.join(unknown)} (known: {', '.join(known) or 'none'})")
    kinds = tuple(settings.curation.pii_kinds) if settings is not None else None
    scrubber = (Scrubber(kinds) if kinds is not None else Scrubber()) if scrub else None
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir} exists and is not a directory")
    try:  # here, so that a path that cannot be a directory is one line, not an error of the export midway
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create --out {out_dir}: {exc.strerror or exc}") from None
    con = store.duck(rounds)
    # exports sort by (task, episode) in DuckDB; an in-memory connection may spill the sort here
    spill = store.spill_dir().as_posix().replace("'", "''")
    con.execute(f"SET temp_directory = '{spill}'")
    try:
        with StepProgress(enabled=progress, total=episode_count(con, rounds), label=f"exporting {fmt}",
                          unit="episodes") as bar:
            result, manifest = run_export(
                con, fmt, out_dir, rounds=rounds, decisions=decisions, include_verified=include_verified,
                scrubber=scrubber, pairs=pairs or "episode", extra={"release": release} if release else None,
                on_episode=bar.advance,
            )
    except OSError as exc:  # a full disk, a file size limit, a folder gone midway: the export is not finished
        raise StorageError(f"cannot write the export into {one_line(str(out_dir))}: {exc.strerror or exc} "
                           "(the export that was there stays as it was)") from None
    publish_export(manifest, str(result.manifest_path.parent))
    return result, manifest


def export_release(
    store: Store, out_dir: Path, release_id: str, *, fmt: str = "openai", scrub: bool = True,
    settings: Settings | None = None, pairs: str | None = None, progress: bool = False,
) -> tuple[ExportResult, dict[str, Any]]:
    """Export exactly the episodes of an approved release (or refuse, in one line)."""
    rel = get_approved_release(store, release_id)
    if release_episode_ids(store, rel) is None:
        raise InputError(f"release {rel.id} no longer matches the decisions it was approved on; approve a new release")
    info = {
        "id": rel.id, "dataset_version": rel.dataset_version, "approved_by": rel.approved_by,
        "approved_at": rel.approved_at.isoformat(), "episodes": rel.episodes, "sampling_plan": rel.sampling_plan,
    }
    return export(
        store, out_dir, fmt=fmt, include_verified=False, round_ids=list(rel.round_ids), scrub=scrub,
        settings=settings, decisions=release_decisions(store, rel), release=info, pairs=pairs, progress=progress,
    )
