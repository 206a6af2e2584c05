"""One export, end to end: stream the rounds, select, format, scrub, write, manifest.

Memory stays bounded: episodes stream in (task, episode) order, one task's rollouts at
a time; files are written as rows come; the manifest is built from running counts.
Every episode (task, for the RL set) left out is counted by reason and split, and an
approved one is named with its first problem. Held-out splits (``challenge``) never
reach a training file.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from curation import funnel as funnel_mod
from curation.export_common import HELD_OUT, Tally, Tools, meta_of, split_of, turns_of
from curation.export_pairs import dpo_rows
from curation.export_source import episode_rows, episodes_with_steps, task_rows
from curation.exporter import ExportResult, ExportWriter
from curation.formats import hf
from curation.formats.dpo import LEVELS
from curation.formats.openai_chat import check_record
from curation.formats.rl import to_rl_row
from curation.formats.sharegpt import to_sharegpt
from curation.masks import FROM_STEP, STEP_ONLY, review_mask
from curation.masks import RULE as MASK_RULE
from curation.pii import Scrubber
from curation.selection import Decision, problem_text, sft_exclusion
from warehouse.contract import SCHEMA_VERSION

# format -> (file name, file kind, what one row is)
FORMATS: dict[str, tuple[str, str, str]] = {
    "openai": ("openai-chat", "jsonl", "episode"),
    "sharegpt": ("sharegpt", "jsonl", "episode"),
    "hf": ("sft", "parquet", "episode"),
    "dpo": ("dpo", "jsonl", "pair"),
    "rl": ("rl-tasks", "jsonl", "task"),
}
_SPEC_IDS = ("task_id", "family", "template", "split")  # task spec fields scrubbing leaves as they are


def _sft_rows(con, rounds, decisions, include_verified, fmt, tally, scrubber) -> Iterator[tuple[str, dict]]:
    tools = Tools()
    for ep, step_rows in episodes_with_steps(con, rounds):
        review = decisions.get(ep["episode_id"])
        if not tally.admit(ep, review, sft_exclusion(ep, review, include_verified=include_verified)):
            continue
        turns, masked = turns_of(ep, step_rows, review, scrubber)
        schemas = tools(ep["task_tools"], ep.get("task_tool_schemas"))
        meta = meta_of(ep)
        if fmt == "openai":
            # OpenAI fine-tuning skips assistant messages with weight 0: the masked steps
            messages = [{**m, "weight": 0} if m["role"] == "assistant" and i in masked else m for m, i in turns]
            row = {"messages": messages, "tools": schemas, "metadata": meta}
            problems = check_record(row)
            if problems:
                tally.left_out(ep, review, "invalid_record", problems[0])
                continue
        elif fmt == "sharegpt":
            row = to_sharegpt(turns, masked, meta, schemas)
        else:
            row = hf.to_hf_row(turns, masked, meta, schemas)
        _, mask_kind = review_mask(review, ())
        if mask_kind:
            tally.masks[mask_kind] += 1
        tally.took(meta["split"], ep, review)
        yield meta["split"], row


def _rl_rows(con, rounds, decisions, include_verified, tally, scrubber) -> Iterator[tuple[str, dict]]:
    """The tasks people vouched for: those with an approved rollout (with ``include_verified``,
    also a verified unreviewed one), by the same rule as the SFT export."""
    tally.unit = "tasks"
    vouched: set[str] = set()
    approved_out: dict[str, list[tuple[dict, str]]] = defaultdict(list)
    for ep in episode_rows(con, rounds):
        review = decisions.get(ep["episode_id"])
        why = sft_exclusion(ep, review, include_verified=include_verified)
        if why is None:
            vouched.add(ep["task_id"])
        elif getattr(review, "decision", None) == "approve":
            approved_out[ep["task_id"]].append((ep, why))
    missing = "no_approved_or_verified_rollout" if include_verified else "no_approved_rollout"
    for row in task_rows(con, rounds):
        tally.seen += 1
        if split_of(row) in HELD_OUT:
            tally.left_out(row, None, "held_out_split")
            continue
        if row["task_id"] not in vouched:
            tally.left_out(row, None, missing)
            for ep, why in approved_out.get(row["task_id"], []):
                tally.name_approved(ep, why, problem_text(why))
            continue
        rec = to_rl_row(row)
        if scrubber is not None:  # one record: the instruction and the spec use the same placeholders
            rs = scrubber.record()
            rec["instruction"] = rs.text(rec["instruction"])
            rec["task_spec"] = {k: v if k in _SPEC_IDS else rs.value(v) for k, v in rec["task_spec"].items()}
        tally.took(rec["split"], {"family": rec["family"], "seed": row["seed"]})
        tally.lineage["policies"].update(row.get("policies") or [])
        tally.lineage["rounds"].update(row.get("rounds") or [])
        yield rec["split"], rec


def _selection(fmt: str, include_verified: bool) -> str:
    who = "approved + verified unreviewed" if include_verified else "approved"
    if fmt == "rl":
        return f"tasks with a rollout that is {who}"
    if fmt == "dpo":
        return f"pairs: people's (approved vs rejected) first, then the verifier's; chosen is {who}, never rejected"
    return who


def run_export(
    con: duckdb.DuckDBPyConnection,
    fmt: str,
    out_dir: Path,
    *,
    rounds: list[str],
    decisions: Mapping[str, Decision],
    include_verified: bool,
    scrubber: Scrubber | None,
    pairs: str = "episode",
    extra: dict[str, Any] | None = None,
) -> tuple[ExportResult, dict[str, Any]]:
    """Write one export of ``rounds`` in ``fmt``; returns the result and the manifest
    (``extra`` is added to the manifest, e.g. the release it exports). ``pairs`` (dpo):
    episode, step or both."""
    if pairs not in LEVELS:
        raise ValueError(f"unknown pair level {pairs!r}")
    name, kind, unit = FORMATS[fmt]
    tally = Tally()
    started = datetime.now(UTC).isoformat()
    writer = ExportWriter(out_dir, name, kind, hf.SCHEMA if kind == "parquet" else None)
    with writer:
        if fmt == "rl":
            rows = _rl_rows(con, rounds, decisions, include_verified, tally, scrubber)
        elif fmt == "dpo":
            rows = dpo_rows(con, rounds, decisions, include_verified, tally, scrubber, pairs)
        else:
            rows = _sft_rows(con, rounds, decisions, include_verified, fmt, tally, scrubber)
        for split, row in rows:
            writer.write(split, row)
        funnels = funnel_mod.funnel(con, rounds)
        manifest = {
            "format": fmt,
            "schema_version": SCHEMA_VERSION,
            "created_at": started,
            "rounds": rounds,
            "selection": _selection(fmt, include_verified),
            "unit": unit,
            f"{tally.unit}_in": tally.seen,
            "excluded": dict(sorted(tally.excluded.items())),
            "excluded_by_split": {s: dict(sorted(c.items())) for s, c in sorted(tally.excluded_by_split.items())},
            "held_out_splits": list(HELD_OUT),
            "approved_left_out": {"count": tally.approved_left_out_count, "episodes": tally.approved_left_out},
            "splits": {s: sum(c.values()) for s, c in sorted(tally.by_split_family.items())},
            "mixing_weights": tally.mixing_weights(),
            "lineage": tally.lineage_summary(),
            "funnel": {"rounds": funnels, "total": funnel_mod.total(funnels)},
            "pii_replacements": dict(sorted(scrubber.counts.items())) if scrubber else "scrubbing off",
        }
        if fmt in ("openai", "sharegpt", "hf"):
            manifest["loss_mask"] = {"rule": MASK_RULE, "episodes": {k: tally.masks[k] for k in (FROM_STEP, STEP_ONLY)}}
        if fmt == "dpo":
            manifest["pair_kinds"] = dict(tally.pair_kinds)
            manifest["pairs"] = {"level": pairs, "by_source": {k: tally.pair_sources[k] for k in ("human", "verifier")},
                                 "by_level": dict(tally.pair_levels)}
        manifest.update(extra or {})
        result = writer.finish(manifest)
    return result, {**manifest, "files": result.files}
