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
from curation.formats.adp import to_adp
from curation.formats.dpo import preference_pairs, to_dpo
from curation.formats.openai_chat import chat_turns, check_record
from curation.formats.rl import to_rl_row
from curation.formats.sharegpt import to_sharegpt
from curation.formats.trl import trl_rows
from curation.formats.verl import REWARD_MODULE, interaction_yaml, tools_yaml, verl_row, verl_schema
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
    "trl": ("trl-sft", "jsonl", "trainable run of an episode (prompt/completion)"),
    "adp": ("adp", "jsonl", "episode"),
    "verl": ("verl", "parquet", "task"),
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
        tally.seen += 1
        review = decisions.get(ep["episode_id"])
        why = sft_exclusion(ep, review, include_verified=include_verified)
        if why:
            tally.excluded[why] += 1
            continue
        meta = _meta(ep)
        if fmt == "adp":
            row = _adp_row(ep, step_rows, review, scrubber, meta)
            tally.took(meta["split"], ep, review)
            yield meta["split"], row
            continue
        turns, masked = _turns(ep, step_rows, review, scrubber)
        schemas = tools(ep["task_tools"], ep.get("task_tool_schemas"))
        if fmt == "trl":
            rows = trl_rows(turns, masked, meta | _reward(ep), schemas)
            if not rows:  # every agent turn masked: nothing to train on
                tally.excluded["no_trainable_turn"] += 1
                continue
            tally.took(meta["split"], ep, review)
            for row in rows:
                yield meta["split"], row
            continue
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


def _reward(ep: Mapping[str, Any]) -> dict[str, Any]:
    return {"reward": float(ep.get("progress") or 0.0), "success": bool(ep.get("success"))}


def _adp_row(ep, step_rows, review, scrubber, meta) -> dict[str, Any]:
    """One ADP trajectory, masked like the chat formats (the same masks), scrubbed as one record."""
    _, masked = _turns(ep, step_rows, review, None)
    details = meta | _reward(ep) | {"rollout": ep.get("rollout"), "model": ep.get("model") or ""}
    row = to_adp(ep["instruction"], [step_from_row(r) for r in step_rows], masked, details)
    return scrubber.record().value(row) if scrubber is not None else row


def _dpo_rows(con, rounds, decisions, include_verified, tally, scrubber) -> Iterator[tuple[str, dict]]:
    tools = _Tools()
    stream = episodes_with_steps(con, rounds)
    for _, group in itertools.groupby(stream, key=lambda pair: pair[0]["task_id"]):
        roles: dict[str, list] = {"chosen": [], "rejected_failure": [], "rejected_costlier": []}
        for ep, step_rows in group:
            tally.seen += 1
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


def _rl_rows(con, rounds, tally, why_not=None) -> Iterator[tuple[str, dict]]:
    """The RL task set; ``why_not(record)``, when given, names why a task is left out (None: kept)."""
    tally.unit = "tasks"
    for row in task_rows(con, rounds):
        tally.seen += 1
        rec = to_rl_row(row)
        why = why_not(rec) if why_not is not None else None
        if why:
            tally.excluded[why] += 1
            continue
        tally.took(rec["split"], {"family": rec["family"], "seed": row["seed"]})
        tally.lineage["policies"].update(row.get("policies") or [])
        tally.lineage["rounds"].update(row.get("rounds") or [])
        yield rec["split"], rec


def _verl_rows(con, rounds, tally, writer) -> Iterator[tuple[str, dict]]:
    """The RL task set as verl reads it, for tasks our verifier can score (an import has no world
    behind it), with the tools YAML, interaction YAML, task-spec file and reward module."""
    tasks = [rec for _, rec in _rl_rows(con, rounds, tally, lambda r: None if r["task_spec"]["requirements"] else "no_verifier")]
    specs = [rec["task_spec"] for rec in tasks]
    names = sorted({t for s in specs for t in s["tools"]} | set(META_SCHEMAS))
    writer.schema = verl_schema(names)
    spec_file = writer.out_dir / "verl.task-specs.jsonl"
    writer.attach(spec_file.name, "".join(json.dumps(s, ensure_ascii=False, sort_keys=True) + "\n" for s in specs))
    writer.attach("verl.tools.yaml", tools_yaml(_Tools()(names), str(spec_file.resolve())))
    writer.attach("verl.interaction.yaml", interaction_yaml(str(spec_file.resolve())))
    writer.attach("verl.reward.py", REWARD_MODULE)
    for i, spec in enumerate(specs):
        yield spec["split"], verl_row(spec, i, names)


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
        elif fmt == "verl":
            rows = _verl_rows(con, rounds, tally, writer)
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
            "selection": ("approved + verified unreviewed" if include_verified else "approved")
            if fmt not in ("rl", "verl") else "every task",
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
        manifest.update(extra or {})
        result = writer.finish(manifest)
    return result, {**manifest, "files": result.files}
