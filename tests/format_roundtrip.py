"""Shared by the format tests: import a file into a fresh warehouse, export it, and the facts a
round trip must keep (every step, call id, result, reward and mask)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from flows.export_cmd import export
from flows.pipeline import import_prepared
from flows.stages.importing import prepare_import
from tests.conftest import export_dir
from warehouse.contract import is_subagent
from warehouse.query import iter_records
from warehouse.store import Store

DATA = Path(__file__).parent / "data"


def import_file(data_dir: Path, path: Path, fmt: str, **options: Any) -> tuple[Store, Any]:
    """Import ``path`` as ``fmt`` into the warehouse at ``data_dir`` (created when new)."""
    store = Store(data_dir)
    return store, import_prepared(store, prepare_import(path, fmt, **options))


def approve(store: Store, first_wrong: dict[str, int] | None = None, *, recovered: bool = True) -> dict[str, Any]:
    """Every episode approved by 'ana' (``first_wrong``: episode id -> the step she marked wrong;
    ``recovered``: she saw the agent recover, so only that step is masked, not the rest)."""
    first_wrong = first_wrong or {}
    return {e.episode_id: SimpleNamespace(decision="approve", reviewer="ana", first_wrong_step=first_wrong.get(e.episode_id),
                                          recovered=recovered)
            for e in iter_records(store.duck(), "episodes")}


def export_rows(store: Store, out: Path, fmt: str, decisions: dict[str, Any], **kw: Any) -> tuple[list[dict], dict]:
    """Export ``fmt`` and read every JSONL row back (with the manifest)."""
    _, manifest = export(store, out, fmt=fmt, include_verified=False, decisions=decisions, **kw)
    rows = []
    for name in sorted(manifest["files"]):
        if name.endswith(".jsonl") and ".task-specs." not in name:
            rows += [json.loads(line) for line in (export_dir(out, manifest) / name).read_text(encoding="utf-8").splitlines()]
    return rows, manifest


def _result(step) -> Any:
    if step.feedback.ok:
        return step.feedback.result
    return {"code": step.feedback.error.code, "message": step.feedback.error.message} if step.feedback.error else None


def facts(store: Store, key: str = "task_id") -> dict[Any, dict[str, Any]]:
    """Per episode (keyed by its task id, an import's as its source numbered it: without the ``SOURCE:`` scope, and
    rollout): the planner's steps (kind, tool, call id,
    arguments, ok, result or error), reward, success and the steps labelled wrong (what curation
    masks). A sub-agent's own rows are left out: no export writes them as the planner's turns (the
    planner sees their work as the delegating call's result), so no round trip brings them back."""
    con = store.duck()
    eps = {e.episode_id: e for e in iter_records(con, "episodes")}
    outcomes = {o.episode_id: o for o in iter_records(con, "outcomes")}
    steps: dict[str, list] = {}
    for s in iter_records(con, "steps"):
        steps.setdefault(s.episode_id, []).append(s)
    out = {}
    for eid, ep in eps.items():
        st = sorted((s for s in steps.get(eid, []) if not is_subagent(s.actor)), key=lambda s: s.index)
        name = getattr(ep, key)
        if key == "task_id" and ep.source == "external":
            name = name.split(":", 1)[1]
        out[(name, ep.rollout)] = {
            "steps": [(s.action.kind, s.action.tool, s.action.call_id, s.action.arguments, s.feedback.ok, _result(s))
                      for s in st],
            "reward": outcomes[eid].progress, "success": outcomes[eid].success,
            "wrong": [s.index for s in st if s.verification.label != "ok"],
        }
    return out


def masked_by_export(store: Store) -> dict[str, list[int]]:
    """Episode id -> the steps curation masks (its heuristics mark), as every export reads them."""
    rows = store.duck().execute("SELECT episode_id, detail FROM marks WHERE \"check\" = 'heuristics'").fetchall()
    return {e: sorted(json.loads(d or "{}").get("masked_steps", [])) for e, d in rows}
