"""The import stage (``flywheel import``): trajectories recorded elsewhere into the warehouse, once, as a
round of their own (the stages of an import are declared in flows.pipeline: import, curate).

An import is a round like a collected one (numbered with them, so the next ``flywheel run``
opens the next number) whose plan says what file it came from. Order, for crash safety:
the shards (tasks, episodes, steps, outcomes) are written under the next round id, then
recorded *together with* the complete Round row in one transaction; then the curation
cascade marks the round (its own keyed unit). Killed before the transaction: the files are
orphans the rerun removes; killed after: the rerun finds the round by the file's digest and
only curates what is not curated yet. Episode ids come from content (and the source), so an episode
already in the warehouse (another file of the source, another round) is never imported twice.

Memory stays flat in the file's size: JSON Lines are read twice a line at a time (the first pass
checks every record and keeps ids, task ids, tool names and inferred schemas; the second writes the
episodes :data:`BATCH_EPISODES` at a time, a shard per table each).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from flows.import_readers import READERS
from generators.importers.openai_chat import (
    task_from_record,
)
from generators.importers.scan import ImportSummary, record_episode, scan_records
from generators.importers.tool_schemas import BadToolSchemas, normalised_schemas
from warehouse import killpoints, state
from warehouse.contract import EpisodeRecord, TaskSpec
from warehouse.errors import InputError
from warehouse.jsonfile import file_sha256, read_records
from warehouse.shards import ShardFile
from warehouse.store import Store

FORMATS = tuple(READERS)


@dataclass
class PreparedImport:
    """A read and checked import (pass one over the file): what every record is, and what the second pass
    (:func:`commit_import`) needs to write the episodes a batch at a time without holding the file."""

    path: Path
    fmt: str
    sha256: str
    summary: ImportSummary
    source: str = ""
    scorer: str | None = None
    batch_id: str = ""
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    given: dict[str, dict] = field(default_factory=dict)  # --tools schemas
    inferred: dict[str, dict] = field(default_factory=dict)
    called: dict[str, list[str]] = field(default_factory=dict)  # task id -> every tool its conversations called
    task_of: dict[str, str] = field(default_factory=dict)  # episode id -> task id, for every usable record

    def records(self) -> Iterator[tuple[dict, EpisodeRecord]]:
        """(record, its episode) for every usable record, in file order, read again from the file."""
        for rec in READERS[self.fmt](self.path, self.scorer):
            if not rec.problem:
                ep, _ = record_episode(rec, self.batch_id, self.created_at, self.source)
                if ep is not None:
                    yield rec.value, ep

    def task(self, value: dict, ep: EpisodeRecord) -> TaskSpec:
        """The task of a record (its first record in the file gives it)."""
        return task_from_record(value, ep, self.given, self.inferred, self.called[ep.episode.task_id])

    @property
    def episodes(self) -> dict[str, EpisodeRecord]:
        """Every episode of the file by id (all in memory: for small files and tests)."""
        return {ep.episode.episode_id: ep for _, ep in self.records()}

    @property
    def tasks(self) -> dict[str, TaskSpec]:
        """Every task of the file by id (all in memory: for small files and tests)."""
        out: dict[str, TaskSpec] = {}
        for value, ep in self.records():
            if ep.episode.task_id not in out:
                out[ep.episode.task_id] = self.task(value, ep)
        return out


def read_tool_schemas(path: Path) -> dict[str, dict]:
    """``--tools FILE``: OpenAI function schemas (a JSON list) for every record of an import."""
    records = read_records(path)  # a JSON list's items (or JSON Lines), or one {"tools": [...]} object
    bad = next((r for r in records if r.problem), None)
    if bad is not None:
        raise InputError(f"{path}: {bad.where}: {bad.problem}")
    value = [r.value for r in records]
    value = value[0] if len(value) == 1 and isinstance(value[0], dict) and "tools" in value[0] else value
    try:
        return normalised_schemas(value, str(path))
    except BadToolSchemas as exc:
        raise InputError(str(exc)) from None


SOURCE_NAME = re.compile(r"^[\w.-]{1,64}$")


def source_name(path: Path, source: str | None) -> str:
    """The source an import's task ids are scoped by: ``source``, else the file's name without its suffix."""
    if source is None:
        return re.sub(r"[^\w.-]", "_", path.name.split(".")[0] or path.name)[:64] or "import"
    if not SOURCE_NAME.match(source):
        raise InputError(f"--source {source!r}: use 1 to 64 letters, digits, '.', '_' or '-'")
    return source


def prepare_import(path: Path, fmt: str, tools_path: Path | None = None, *, scorer: str | None = None,
                   source: str | None = None) -> PreparedImport:
    """Read and check ``path`` (nothing is written): the episodes and tasks, and the records that are malformed.

    Tool schemas: a record's own ``tools``, else those of ``tools_path``; a called tool that neither
    describes gets a schema inferred from the arguments of every call to it in the file.
    ``scorer`` picks the score the reward comes from: an Inspect log's scorer, an OpenTelemetry trace's
    evaluation (``gen_ai.evaluation.name``); default the first. ``source`` scopes the task ids (default: the
    file's name without its suffix)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    sha = file_sha256(path)  # missing, a directory, unreadable: said here, first
    prepared = PreparedImport(path, fmt, sha, ImportSummary(), source_name(path, source), scorer, f"import-{sha[:12]}")
    prepared.given = read_tool_schemas(tools_path) if tools_path is not None else {}
    scan = scan_records(READERS[fmt](path, scorer), name=str(path), batch_id=prepared.batch_id,
                        created_at=prepared.created_at, source=prepared.source, given=prepared.given)
    prepared.summary, prepared.task_of, prepared.called, prepared.inferred = (scan.summary, scan.task_of,
                                                                              scan.called, scan.inferred)
    return prepared


def import_round(store: Store, sha256: str) -> state.Round | None:
    """The round an earlier import of the file with this digest made, if any."""
    with store.session() as s:
        return next((r for r in state.list_rounds(session=s) if r.plan.get("import", {}).get("sha256") == sha256), None)


BATCH_EPISODES = 500  # episodes written per shard of each table: memory stays flat in the file's size


def commit_import(store: Store, prepared: PreparedImport, batch: int | None = None) -> state.Round | None:
    """Write the new episodes and their tasks as the next round (a shard per table for every ``batch``
    episodes, read again from the file), recorded in one transaction with its Round row. None when every
    episode is already in the warehouse. Call under the writer lock."""
    summary, batch = prepared.summary, batch or BATCH_EPISODES
    have = {r[0] for r in store.duck().execute("SELECT episode_id FROM episodes").fetchall()}
    new_ids = {eid for eid in prepared.task_of if eid not in have}
    summary.already += len(prepared.task_of) - len(new_ids)
    if not new_ids:
        return None
    with store.session() as s:
        rid = state.next_round_id(session=s)
    want_tasks = {prepared.task_of[eid] for eid in new_ids}
    shards: list[state.Shard] = []
    tables: dict[str, list] = {t: [] for t in ("tasks", "episodes", "steps", "outcomes")}
    written: set[str] = set()
    parts = 0

    def flush() -> None:
        nonlocal parts
        key = f"import-{prepared.sha256[:16]}" + (f"-{parts}" if parts else "")
        shards.extend(store.write_shard(ShardFile(t, rid, key), recs) for t, recs in tables.items() if recs)
        parts += 1
        for recs in tables.values():
            recs.clear()

    for value, rec in prepared.records():
        task_id = rec.episode.task_id
        if task_id in want_tasks and task_id not in written:
            tables["tasks"].append(prepared.task(value, rec))
            written.add(task_id)
        eid = rec.episode.episode_id
        if eid not in new_ids:
            continue
        new_ids.discard(eid)  # twice in the file: once
        tables["episodes"].append(rec.episode.model_copy(update={"round_id": rid}))
        tables["steps"].extend(rec.steps)
        tables["outcomes"].append(rec.outcome)
        summary.imported += 1
        if len(tables["episodes"]) >= batch:
            flush()
    if any(tables.values()):
        flush()
    killpoints.reached("import.written")
    plan = {"import": {"file": str(prepared.path), "source": prepared.source, "sha256": prepared.sha256,
                       "format": prepared.fmt, "episodes": summary.imported, "skipped": len(summary.skipped)},
            "policy": {"name": "external", "model": ""}}
    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=summary.imported, seed=0, plan=plan, shards=shards)
    return rnd
