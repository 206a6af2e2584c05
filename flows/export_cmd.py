"""``flywheel export``: pick the rounds, load review decisions, run one export per format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curation.export_run import FORMATS, run_export
from curation.exporter import ExportResult
from curation.pii import Scrubber
from warehouse import state
from warehouse.errors import InputError
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
) -> tuple[ExportResult, dict[str, Any]]:
    """Write one export of ``fmt`` (see :data:`curation.export_run.FORMATS`) into ``out_dir``."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    with store.session() as s:
        known = [r.id for r in state.list_rounds(session=s)]
        decisions = state.latest_decisions(session=s)
    rounds = round_ids or known
    unknown = sorted(set(rounds) - set(known))
    if unknown:
        raise InputError(f"unknown round(s): {', '.join(unknown)} (known: {', '.join(known) or 'none'})")
    kinds = tuple(settings.curation.pii_kinds) if settings is not None else None
    scrubber = (Scrubber(kinds) if kinds is not None else Scrubber()) if scrub else None
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir} exists and is not a directory")
    con = store.duck(rounds)
    # exports sort by (task, episode) in DuckDB; an in-memory connection may spill the sort here
    spill = (store.data_dir / ".duckdb-spill").as_posix().replace("'", "''")
    con.execute(f"SET temp_directory = '{spill}'")
    return run_export(con, fmt, out_dir, rounds=rounds, decisions=decisions, include_verified=include_verified,
                      scrubber=scrubber)


def export_openai_chat(store: Store, out_dir: Path, *, include_verified: bool, round_ids: list[str] | None = None):
    """The OpenAI chat export (kept for callers of the first version)."""
    return export(store, out_dir, fmt="openai", include_verified=include_verified, round_ids=round_ids)
