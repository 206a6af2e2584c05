"""The first pass over an import: every record checked, and what the second pass needs to write the
episodes a batch at a time (ids, task ids, the tools each task called, schemas inferred from calls).
Pure: records come in, nothing is read or written here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from generators.importers.chat import BAD_SHAPE
from generators.importers.openai_chat import MalformedRecord, called_tools, episode_from_record, record_schemas
from generators.importers.tool_schemas import BadToolSchemas, SchemaInference
from generators.phone.tools import TOOLS
from warehouse.contract import EpisodeRecord
from warehouse.errors import InputError, one_line


class ImportRecord(Protocol):
    """One record as a reader gives it: where it is, its value, or why it cannot be imported."""

    where: str
    value: Any
    problem: str


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
class ImportScan:
    """What the first pass found."""

    summary: ImportSummary
    task_of: dict[str, str] = field(default_factory=dict)  # episode id -> task id, for every usable record
    called: dict[str, list[str]] = field(default_factory=dict)  # task id -> every tool its conversations called
    inferred: dict[str, dict] = field(default_factory=dict)  # schemas inferred for undescribed tools


def record_episode(rec: ImportRecord, batch_id: str, now: datetime, source: str) -> tuple[EpisodeRecord | None, str]:
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


def scan_records(records: Iterable[ImportRecord], *, name: str, batch_id: str, created_at: datetime, source: str,
                 given: dict[str, dict]) -> ImportScan:
    """Check every record of the file ``name``, one at a time (what the second pass needs, not the
    records). A called tool that neither its record nor ``given`` describes gets a schema inferred
    from the arguments of every call to it. InputError when no record is usable."""
    scan, inference = ImportScan(ImportSummary()), SchemaInference()
    summary = scan.summary
    for rec in records:
        if rec.problem:
            summary.skipped.append((one_line(rec.where), one_line(rec.problem)))
            continue
        ep, why = record_episode(rec, batch_id, created_at, source)
        if ep is None:
            summary.skipped.append((one_line(rec.where), one_line(why)))
            continue
        eid, task_id = ep.episode.episode_id, ep.episode.task_id
        if eid in scan.task_of:
            summary.already += 1
        scan.task_of[eid] = task_id
        summary.records += 1
        called = called_tools(ep)
        scan.called[task_id] = list(dict.fromkeys(scan.called.get(task_id, []) + called))
        if record_schemas(rec.value) is None:  # one schema per undescribed tool, from every call to it in the file
            summary.without_schemas += 1
            for s in ep.steps:
                if s.action.kind == "tool_call" and s.action.tool not in given and s.action.tool not in TOOLS:
                    inference.add(s.action.tool, s.action.arguments)
    if not scan.task_of:
        if not summary.skipped:
            raise InputError(f"{name}: nothing to import (no records)")
        where, why = summary.skipped[0]
        raise InputError(f"{name}: nothing to import; {len(summary.skipped)} malformed record(s), first at "
                         f"{where}: {why}")
    scan.inferred = inference.schemas()
    summary.inferred_tools = sorted(scan.inferred)
    return scan
