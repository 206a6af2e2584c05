"""``flywheel import``: trajectories recorded elsewhere into the warehouse, once."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from generators.importers.openai_chat import MalformedRecord, episode_from_record, read_records
from warehouse.contract import EpisodeRecord
from warehouse.errors import InputError
from warehouse.ids import digest
from warehouse.store import Store

IMPORT_ROUND = "external"
FORMATS = ("openai-chat",)


@dataclass
class ImportSummary:
    imported: int = 0
    already: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)


@dataclass
class PreparedImport:
    path: Path
    episodes: dict[str, EpisodeRecord]
    summary: ImportSummary


def prepare_import(path: Path, fmt: str) -> PreparedImport:
    """Read and check ``path`` (nothing is written): the episodes, and the records that are malformed."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not JSON (byte {exc.start} is not UTF-8)") from None
    records, bad = read_records(text, str(path))
    summary = ImportSummary(skipped=list(bad))
    batch_id = f"import-{digest(raw.hex(), 12)}"
    now = datetime.now(UTC)
    parsed: dict[str, EpisodeRecord] = {}
    for rec in records:
        try:
            ep = episode_from_record(rec.value, batch_id=batch_id, created_at=now)
        except MalformedRecord as exc:
            summary.skipped.append((rec.where, str(exc)))
            continue
        if ep.episode.episode_id in parsed:
            summary.already += 1
        parsed[ep.episode.episode_id] = ep
    if not parsed and not summary.already:
        where, why = summary.skipped[0]
        raise InputError(f"{path}: nothing to import; {len(summary.skipped)} malformed record(s), first at "
                         f"{where}: {why}")
    summary.skipped.sort(key=lambda item: int(item[0].split()[-1]))  # in file order
    return PreparedImport(path, parsed, summary)


def import_prepared(store: Store, prepared: PreparedImport) -> ImportSummary:
    """Commit the episodes not already in the warehouse, as one unit.

    Episode ids come from content, so a rerun (or the same record in another file) imports nothing twice."""
    parsed, summary = prepared.episodes, prepared.summary
    with store.run_lock():
        store.clean_orphans()
        con = store.duck([IMPORT_ROUND])
        have = {r[0] for r in con.execute("SELECT episode_id FROM episodes").fetchall()} if parsed else set()
        new = [ep for eid, ep in parsed.items() if eid not in have]
        summary.already += len(parsed) - len(new)
        if new:
            key = f"import-{digest(sorted(ep.episode.episode_id for ep in new), 16)}"
            store.commit_unit(IMPORT_ROUND, key, {"episodes": [r.episode for r in new],
                                                  "steps": [s for r in new for s in r.steps],
                                                  "outcomes": [r.outcome for r in new]})
        summary.imported = len(new)
    return summary
