"""One export, end to end: stream the rounds, select, format, scrub, write, manifest.

Memory stays bounded: episodes stream in (task, episode) order, one task's rollouts at
a time; files are written as rows come; the manifest is built from running counts.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from curation import funnel as funnel_mod
from curation.export_source import episodes_with_steps, masked_steps, task_rows
from curation.exporter import ExportResult, ExportWriter
from curation.formats import hf
from curation.formats.dpo import preference_pairs, to_dpo
from curation.formats.openai_chat import chat_turns, check_record
from curation.formats.rl import to_rl_row
from curation.formats.sharegpt import to_sharegpt
from curation.formats.views import step_from_row
from curation.pii import Scrubber
from curation.selection import Decision, preference_role, sft_exclusion
from generators.phone import openai_tool_schemas
from generators.phone.tools import META_SCHEMAS, TOOLS
from warehouse.contract import SCHEMA_VERSION

# format -> (file name, file kind, what one row is)
FORMATS: dict[str, tuple[str, str, str]] = {
    "openai": ("openai-chat", "jsonl", "episode"),
    "sharegpt": ("sharegpt", "jsonl", "episode"),
    "hf": ("sft", "parquet", "episode"),
    "dpo": ("dpo", "jsonl", "pair"),
    "rl": ("rl-tasks", "jsonl", "task"),
}


@dataclass
class Tally:
    """Running counts for the manifest."""

    unit: str = "episodes"
    seen: int = 0
    excluded: Counter = field(default_factory=Counter)
    by_split_family: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    lineage: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    pair_kinds: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)  # failed episodes seen, by "side:category"

    def saw(self, ep: Mapping[str, Any]) -> None:
        """Count an episode read (and its failure attribution, if it failed)."""
        self.seen += 1
        if ep.get("failure_side"):
            self.failures[f"{ep['failure_side']}:{ep.get('failure_category') or 'unclassified'}"] += 1

    def took(self, split: str, ep: Mapping[str, Any], review: Decision | None = None) -> None:
        self.by_split_family[split][ep["family"]] += 1
        for key, col in (("rounds", "round_id"), ("policies", "policy"), ("families", "family"), ("seeds", "seed")):
            if ep.get(col) is not None:
                self.lineage[key].add(ep[col])
        if review is not None:
            self.lineage["reviewers"].add(review.reviewer)

    def lineage_summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("rounds", "policies", "families", "reviewers"):
            out[key] = sorted(self.lineage.get(key, set()))
        seeds = sorted(self.lineage.get("seeds", set()))
        out["seeds"] = seeds if len(seeds) <= 1000 else {"count": len(seeds), "min": seeds[0], "max": seeds[-1]}
        return out

    def mixing_weights(self) -> dict[str, dict[str, float]]:
        out = {}
        for split, fams in sorted(self.by_split_family.items()):
            n = sum(fams.values())
            out[split] = {f: round(c / n, 4) for f, c in sorted(fams.items())}
        return out


class _Tools:
    def __init__(self) -> None:
        self.cache: dict[tuple[str, ...], list[dict[str, Any]]] = {}

    def __call__(self, names, own_schemas: str | None = None) -> list[dict[str, Any]]:
        """The task's own schemas (imported tasks) when it has them, else our phone tools' schemas."""
        if own_schemas:
            return with_meta(json.loads(own_schemas))
        key = tuple(names or ())
        if key not in self.cache:
            known = [n for n in key if n in TOOLS or n in META_SCHEMAS]
            unknown = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
                       for n in key if n not in known]
            self.cache[key] = unknown + openai_tool_schemas(known)
        return self.cache[key]


def with_meta(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``schemas`` plus finish and ask_user when missing: every exported episode ends with one of them."""
    names = {t.get("function", {}).get("name") for t in schemas}
    return schemas + [{"type": "function", "function": {"name": n, **m}} for n, m in META_SCHEMAS.items()
                      if n not in names]


def _split(ep: Mapping[str, Any]) -> str:
    return ep.get("task_split") or ep.get("split") or "train"


def _meta(ep: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ep.get(k) for k in ("episode_id", "task_id", "family", "template", "round_id", "policy")} | {"split": _split(ep)}


def _turns(ep, step_rows, review, scrubber):
    steps = [step_from_row(r) for r in step_rows]
    masked = masked_steps(ep)
    if review is not None and review.first_wrong_step is not None:
        masked.add(review.first_wrong_step)
    turns = chat_turns(ep["instruction"], steps)
    if scrubber is not None:
        rs = scrubber.record()
        turns = [(rs.value(m), i) for m, i in turns]
    return turns, masked


def _sft_rows(con, rounds, decisions, include_verified, fmt, tally, scrubber) -> Iterator[tuple[str, dict]]:
    tools = _Tools()
    for ep, step_rows in episodes_with_steps(con, rounds):
        tally.saw(ep)
        review = decisions.get(ep["episode_id"])
        why = sft_exclusion(ep, review, include_verified=include_verified)
        if why:
            tally.excluded[why] += 1
            continue
        turns, masked = _turns(ep, step_rows, review, scrubber)
        schemas = tools(ep["task_tools"], ep.get("task_tool_schemas"))
        meta = _meta(ep)
        if fmt == "openai":
            # OpenAI fine-tuning skips assistant messages with weight 0: the masked steps
            messages = [{**m, "weight": 0} if m["role"] == "assistant" and i in masked else m for m, i in turns]
            row = {"messages": messages, "tools": schemas, "metadata": meta}
            if check_record(row):
                tally.excluded["invalid_record"] += 1
                continue
        elif fmt == "sharegpt":
            row = to_sharegpt(turns, masked, meta, schemas)
        else:
            row = hf.to_hf_row(turns, masked, meta, schemas)
        tally.took(meta["split"], ep, review)
        yield meta["split"], row


def _dpo_rows(con, rounds, decisions, include_verified, tally, scrubber) -> Iterator[tuple[str, dict]]:
    tools = _Tools()
    stream = episodes_with_steps(con, rounds)
    for _, group in itertools.groupby(stream, key=lambda pair: pair[0]["task_id"]):
        roles: dict[str, list] = {"chosen": [], "rejected_failure": [], "rejected_costlier": []}
        for ep, step_rows in group:
            tally.saw(ep)
            review = decisions.get(ep["episode_id"])
            role = preference_role(ep, review, include_verified=include_verified)
            if role is None:
                tally.excluded["not_usable_in_a_pair"] += 1
                continue
            roles[role].append((ep, step_rows, review))
        pairs = preference_pairs(roles["chosen"], roles["rejected_failure"], roles["rejected_costlier"])
        used = {id(x) for c, r, _ in pairs for x in (c, r)}
        for role_items in roles.values():
            tally.excluded["no_counterpart"] += sum(1 for item in role_items if id(item) not in used)
        for (c_ep, c_steps, c_rev), (r_ep, r_steps, r_rev), kind in pairs:
            # one record scrubbed as a whole, so both sides use the same placeholders
            rs = scrubber.record() if scrubber else None
            c_turns, _ = _turns(c_ep, c_steps, c_rev, None)
            r_turns, _ = _turns(r_ep, r_steps, r_rev, None)
            chosen = [m for m, _ in c_turns]
            rejected = [m for m, _ in r_turns]
            if rs is not None:
                chosen, rejected = rs.value(chosen), rs.value(rejected)
            meta = {"task_id": c_ep["task_id"], "chosen_id": c_ep["episode_id"], "rejected_id": r_ep["episode_id"],
                    "kind": kind, "family": c_ep["family"], "template": c_ep["template"], "split": _split(c_ep)}
            tally.pair_kinds[kind] += 1
            tally.took(meta["split"], c_ep, c_rev)  # the family mix counts a pair once
            if r_rev is not None:
                tally.lineage["reviewers"].add(r_rev.reviewer)
            yield meta["split"], to_dpo(chosen, rejected, tools(c_ep["task_tools"], c_ep.get("task_tool_schemas")), meta)


def _rl_rows(con, rounds, tally) -> Iterator[tuple[str, dict]]:
    tally.unit = "tasks"
    for row in task_rows(con, rounds):
        tally.seen += 1
        rec = to_rl_row(row)
        tally.took(rec["split"], {"family": rec["family"], "seed": row["seed"]})
        tally.lineage["policies"].update(row.get("policies") or [])
        tally.lineage["rounds"].update(row.get("rounds") or [])
        yield rec["split"], rec


def run_export(
    con: duckdb.DuckDBPyConnection,
    fmt: str,
    out_dir: Path,
    *,
    rounds: list[str],
    decisions: Mapping[str, Decision],
    include_verified: bool,
    scrubber: Scrubber | None,
    extra: dict[str, Any] | None = None,
) -> tuple[ExportResult, dict[str, Any]]:
    """Write one export of ``rounds`` in ``fmt``; returns the result and the manifest
    (``extra`` is added to the manifest, e.g. the release it exports)."""
    name, kind, unit = FORMATS[fmt]
    tally = Tally()
    started = datetime.now(UTC).isoformat()
    writer = ExportWriter(out_dir, name, kind, hf.SCHEMA if kind == "parquet" else None)
    with writer:
        if fmt == "rl":
            rows = _rl_rows(con, rounds, tally)
        elif fmt == "dpo":
            rows = _dpo_rows(con, rounds, decisions, include_verified, tally, scrubber)
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
            "selection": ("approved + verified unreviewed" if include_verified else "approved") if fmt != "rl" else "every task",
            "unit": unit,
            f"{tally.unit}_in": tally.seen,
            "excluded": dict(sorted(tally.excluded.items())),
            "splits": {s: sum(c.values()) for s, c in sorted(tally.by_split_family.items())},
            "mixing_weights": tally.mixing_weights(),
            "lineage": tally.lineage_summary(),
            "funnel": {"rounds": funnels, "total": funnel_mod.total(funnels)},
            "pii_replacements": dict(sorted(scrubber.counts.items())) if scrubber else "scrubbing off",
        }
        if fmt == "dpo":
            manifest["pair_kinds"] = dict(tally.pair_kinds)
        if tally.unit == "episodes":  # why the failed episodes read failed (model or harness, and what)
            manifest["failure_attribution"] = dict(sorted(tally.failures.items()))
        manifest.update(extra or {})
        result = writer.finish(manifest)
    return result, {**manifest, "files": result.files}
