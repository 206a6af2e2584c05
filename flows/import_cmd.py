"""``flywheel import``: trajectories recorded elsewhere into the warehouse, once, as a round of their own.

An import is a round like a collected one (numbered with them, so the next ``flywheel run``
opens the next number) whose plan says what file it came from. Order, for crash safety:
the shards (tasks, episodes, steps, outcomes) are written under the next round id, then
recorded *together with* the complete Round row in one transaction; then the curation
cascade marks the round (its own keyed unit). Killed before the transaction: the files are
orphans the rerun removes; killed after: the rerun finds the round by the file's digest and
only curates what is not curated yet. Episode ids come from content, so an episode already
in the warehouse (another file, another round) is never imported twice.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from flows.import_readers import READERS
from flows.stages import curate_round
from generators.importers.chat import BAD_SHAPE
from generators.importers.openai_chat import (
    MalformedRecord,
    called_tools,
    episode_from_record,
    record_schemas,
    task_from_record,
)
from generators.importers.tool_schemas import BadToolSchemas, inferred_schemas, normalised_schemas
from generators.phone.tools import TOOLS
from warehouse import killpoints, state
from warehouse.contract import EpisodeRecord, TaskSpec
from warehouse.errors import InputError, one_line
from warehouse.jsonfile import read_input, read_records
from warehouse.settings import Settings
from warehouse.shards import ShardFile
from warehouse.store import Store

FORMATS = tuple(READERS)


@dataclass
class ImportSummary:
    imported: int = 0
    already: int = 0  # episodes already in the warehouse (or twice in the file)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)
    round_id: str | None = None  # the import's round (None: nothing new to import)
    file_already_imported: bool = False  # this very file was imported before (as round_id)
    marks: int = 0  # curation marks written now
    records: int = 0  # usable records read
    without_schemas: int = 0  # usable records with no tool schemas of their own
    inferred_tools: list[str] = field(default_factory=list)  # tools whose schema was inferred from the calls


@dataclass
class PreparedImport:
    path: Path
    fmt: str
    sha256: str
    episodes: dict[str, EpisodeRecord]
    tasks: dict[str, TaskSpec]
    summary: ImportSummary
    source: str = ""


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


def _episode(rec, batch_id: str, now: datetime, source: str) -> tuple[EpisodeRecord | None, str]:
    """The record's episode, or why it is skipped."""
    try:
        ep = episode_from_record(rec.value, batch_id=batch_id, created_at=now, source=source)
        record_schemas(rec.value)  # a record's own tools that are no schemas skip it, not the import
    except (MalformedRecord, BadToolSchemas) as exc:
        return None, str(exc)
    except RecursionError:
        return None, "nested too deeply"
    except BAD_SHAPE as exc:  # an odd value the checks did not name
        return None, f"unexpected shape ({type(exc).__name__}: {exc})"
    return ep, ""


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
    sha = hashlib.sha256(read_input(path)).hexdigest()  # missing, a directory, unreadable: said here, first
    source = source_name(path, source)
    given = read_tool_schemas(tools_path) if tools_path is not None else {}
    records = READERS[fmt](path, scorer)
    summary = ImportSummary()
    batch_id = f"import-{sha[:12]}"
    now = datetime.now(UTC)
    parsed: dict[str, EpisodeRecord] = {}
    sources: list[tuple[dict, EpisodeRecord]] = []
    for rec in records:
        if rec.problem:
            summary.skipped.append((one_line(rec.where), one_line(rec.problem)))
            continue
        ep, why = _episode(rec, batch_id, now, source)
        if ep is None:
            summary.skipped.append((one_line(rec.where), one_line(why)))
            continue
        if ep.episode.episode_id in parsed:
            summary.already += 1
        parsed[ep.episode.episode_id] = ep
        sources.append((rec.value, ep))
    if not parsed:
        if not summary.skipped:
            raise InputError(f"{path}: nothing to import (no records)")
        where, why = summary.skipped[0]
        raise InputError(f"{path}: nothing to import; {len(summary.skipped)} malformed record(s), first at "
                         f"{where}: {why}")
    # one schema per undescribed tool, from every call to it in the file
    own = [record_schemas(value) for value, _ in sources]
    names = {n for i, (_, ep) in enumerate(sources) if own[i] is None for n in called_tools(ep)
             if n not in given and n not in TOOLS}
    inferred = inferred_schemas((s.action.tool, s.action.arguments) for i, (_, ep) in enumerate(sources)
                                if own[i] is None for s in ep.steps
                                if s.action.kind == "tool_call" and s.action.tool in names)
    summary.records = len(sources)
    summary.without_schemas = sum(1 for o in own if o is None)
    summary.inferred_tools = sorted(inferred)
    called: dict[str, list[str]] = {}  # task id -> every tool any of its conversations called
    for _, ep in sources:
        called[ep.episode.task_id] = list(dict.fromkeys(called.get(ep.episode.task_id, []) + called_tools(ep)))
    tasks: dict[str, TaskSpec] = {}
    for value, ep in sources:
        if ep.episode.task_id not in tasks:
            tasks[ep.episode.task_id] = task_from_record(value, ep, given, inferred, called[ep.episode.task_id])
    return PreparedImport(path, fmt, sha, parsed, tasks, summary, source)


def import_round(store: Store, sha256: str) -> state.Round | None:
    """The round an earlier import of the file with this digest made, if any."""
    with store.session() as s:
        return next((r for r in state.list_rounds(session=s) if r.plan.get("import", {}).get("sha256") == sha256), None)


def commit_import(store: Store, prepared: PreparedImport) -> state.Round | None:
    """Write the new episodes and their tasks as the next round, recorded in one transaction with
    its Round row. None when every episode is already in the warehouse. Call under the writer lock."""
    summary = prepared.summary
    have = {r[0] for r in store.duck().execute("SELECT episode_id FROM episodes").fetchall()}
    new = [ep for eid, ep in prepared.episodes.items() if eid not in have]
    summary.already += len(prepared.episodes) - len(new)
    if not new:
        return None
    with store.session() as s:
        rid = state.next_round_id(session=s)
    new = [EpisodeRecord(episode=r.episode.model_copy(update={"round_id": rid}), steps=r.steps, outcome=r.outcome)
           for r in new]
    tasks = [prepared.tasks[t] for t in dict.fromkeys(r.episode.task_id for r in new)]
    key = f"import-{prepared.sha256[:16]}"
    tables = {"tasks": tasks, "episodes": [r.episode for r in new], "steps": [s for r in new for s in r.steps],
              "outcomes": [r.outcome for r in new]}
    shards = [store.write_shard(ShardFile(t, rid, key), recs) for t, recs in tables.items()]
    killpoints.reached("import.written")
    plan = {"import": {"file": str(prepared.path), "source": prepared.source, "sha256": prepared.sha256, "format": prepared.fmt,
                       "episodes": len(new), "skipped": len(summary.skipped)},
            "policy": {"name": "external", "model": ""}}
    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=len(new), seed=0, plan=plan, shards=shards)
    summary.imported = len(new)
    return rnd


def import_prepared(store: Store, prepared: PreparedImport, settings: Settings | None = None) -> ImportSummary:
    """Commit the import as its own round (once per file) and curate it."""
    summary = prepared.summary
    with store.run_lock():
        store.clean_orphans()  # shards of an import killed before its transaction
        rnd = import_round(store, prepared.sha256)
        if rnd is not None:
            summary.file_already_imported = True
            summary.already = len(prepared.episodes)
        else:
            rnd = commit_import(store, prepared)
            killpoints.reached("import.recorded")
        if rnd is not None:
            summary.round_id = rnd.id
            summary.marks = curate_round(store, rnd.id, settings)  # keyed: a no-op once done
    return summary
