"""One export, end to end: stream the rounds, select, format, scrub, write, manifest.

Memory stays bounded: episodes stream in (task, episode) order, one task's rollouts at
a time; files are written as rows come; the manifest is built from running counts.
Every episode (task, for the RL set) left out is counted by reason and split, and an
approved one is named with its first problem. Held-out splits (``challenge``) never
reach a training file.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from curation import funnel as funnel_mod
from curation.conversation_rows import adp_record, conversation_problem, conversation_tools, recorded
from curation.export_common import HELD_OUT, Tally, Tools, meta_of, scrubbed, split_of, trainable, turns_of
from curation.export_pairs import dpo_rows
from curation.export_source import episode_rows, episodes_with_steps, task_rows, task_slices
from curation.exporter import ExportResult, ExportWriter
from curation.formats import hf
from curation.formats.adp import to_adp
from curation.formats.dpo import LEVELS
from curation.formats.openai_chat import check_record
from curation.formats.rl import to_rl_row
from curation.formats.sharegpt import to_sharegpt
from curation.formats.trl import dataset_card, trl_rows
from curation.formats.verl import DATASET_MODULE, REWARD_MODULE, interaction_yaml, tools_yaml, verl_row, verl_schema
from curation.formats.views import step_from_row
from curation.masks import FROM_STEP, STEP_ONLY, review_mask
from curation.masks import RULE as MASK_RULE
from curation.pii import Scrubber
from curation.reward_table import SAMPLE as REWARD_SAMPLE
from curation.reward_table import reward_table
from curation.selection import Decision, problem_text, sft_exclusion
from generators.phone.tools import META_SCHEMAS
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
SFT_FORMATS = ("openai", "sharegpt", "hf", "trl", "adp")  # episode formats with loss masks
_SPEC_IDS = ("task_id", "family", "template", "split")  # task spec fields scrubbing leaves as they are


def _sft_rows(con, rounds, decisions, include_verified, fmt, tally, scrubber) -> Iterator[tuple[str, dict]]:
    tools = Tools()
    for ep, step_rows in episodes_with_steps(con, rounds):
        review = decisions.get(ep["episode_id"])
        why = sft_exclusion(ep, review, include_verified=include_verified) or _unexportable(ep)
        if not tally.admit(ep, review, why):
            continue
        meta = meta_of(ep)
        turns, masked = turns_of(ep, step_rows, review, None)
        if not trainable(turns, masked):  # e.g. first wrong step 0: no turn to train on, no row, in every format
            tally.left_out(ep, review, "no_trainable_turn", "every agent turn gets no loss")
            continue
        if fmt == "adp":
            row = _adp_row(ep, step_rows, masked, scrubber, meta)
            _took(tally, meta, ep, review)
            yield meta["split"], row
            continue
        turns = scrubbed(turns, scrubber)
        schemas = conversation_tools(ep, tools) if recorded(ep) else tools(ep["task_tools"], ep.get("task_tool_schemas"))
        if fmt == "trl":
            rows = trl_rows(turns, masked, meta | _reward(ep), schemas)
            _took(tally, meta, ep, review)
            for row in rows:
                yield meta["split"], row
            continue
        if fmt == "openai":
            # OpenAI fine-tuning skips assistant messages with weight 0: the masked steps
            messages = [{**m, "weight": 0} if m["role"] == "assistant" and i in masked else m for m, i in turns]
            row = {"messages": messages, **({"tools": schemas} if schemas or not recorded(ep) else {}), "metadata": meta}
            problems = check_record(row)
            if problems:
                tally.left_out(ep, review, "invalid_record", problems[0])
                continue
        elif fmt == "sharegpt":
            row = to_sharegpt(turns, masked, meta, schemas)
        else:
            row = hf.to_hf_row(turns, masked, meta, schemas)
        _took(tally, meta, ep, review)
        yield meta["split"], row


def _unexportable(ep: Mapping[str, Any]) -> str | None:
    """``invalid_record`` for an imported conversation no training row can carry (see conversation_rows)."""
    return "invalid_record" if recorded(ep) and conversation_problem(ep) else None


def _took(tally: Tally, meta: dict[str, Any], ep: Mapping[str, Any], review: Decision | None) -> None:
    """Count an exported episode, and the kind of loss mask its review gave it."""
    _, mask_kind = review_mask(review, ())
    if mask_kind:
        tally.masks[mask_kind] += 1
    tally.took(meta["split"], ep, review)


def _reward(ep: Mapping[str, Any]) -> dict[str, Any]:
    return {"reward": float(ep.get("progress") or 0.0), "success": bool(ep.get("success"))}


def _adp_row(ep, step_rows, masked, scrubber, meta) -> dict[str, Any]:
    """One ADP trajectory, masked like the chat formats (the same masks), scrubbed as one record."""
    details = meta | _reward(ep) | {"rollout": ep.get("rollout"), "model": ep.get("model") or ""}
    messages = recorded(ep)
    row = adp_record(messages, masked, details) if messages else to_adp(ep["instruction"], [step_from_row(r) for r in step_rows], masked, details)
    return scrubber.record().value(row) if scrubber is not None else row


def _rl_rows(con, rounds, decisions, include_verified, tally, scrubber, why_not=None) -> Iterator[tuple[str, dict]]:
    """The tasks people vouched for: those with an approved rollout (with ``include_verified``,
    also a verified unreviewed one), by the same rule as the SFT export. ``why_not(record)``,
    when given, names why a vouched task is left out all the same (None: kept)."""
    tally.unit = "tasks"
    missing = "no_approved_or_verified_rollout" if include_verified else "no_approved_rollout"
    for bounds in task_slices(con, rounds):  # a slice of whole tasks at a time: its rollouts, then its tasks
        vouched: set[str] = set()
        approved_out: dict[str, list[tuple[dict, str]]] = defaultdict(list)
        for ep in episode_rows(con, rounds, bounds=bounds):
            tally.count_failure(ep)
            review = decisions.get(ep["episode_id"])
            why = sft_exclusion(ep, review, include_verified=include_verified)
            if why is None:
                vouched.add(ep["task_id"])
            elif getattr(review, "decision", None) == "approve":
                approved_out[ep["task_id"]].append((ep, why))
        for row in task_rows(con, rounds, bounds=bounds):
            rec = _rl_record(row, vouched, approved_out, missing, tally, scrubber, why_not)
            if rec is not None:
                yield rec["split"], rec


def _rl_record(row, vouched, approved_out, missing, tally, scrubber, why_not) -> dict[str, Any] | None:
    """The RL record of one task row, or None when it is left out (counted in ``tally``)."""
    tally.seen += 1
    if split_of(row) in HELD_OUT:
        tally.left_out(row, None, "held_out_split")
        return None
    if row["task_id"] not in vouched:
        tally.left_out(row, None, missing)
        for ep, why in approved_out.get(row["task_id"], []):
            tally.name_approved(ep, why, problem_text(why))
        return None
    rec = to_rl_row(row)
    # a task with no requirements (an import) has no verifier: any rollout of it would score 1.0
    why = "no_verifier" if not rec["task_spec"]["requirements"] else why_not(rec) if why_not is not None else None
    if why:
        tally.left_out(row, None, why)
        return None
    if scrubber is not None:  # one record: the instruction and the spec use the same placeholders
        rs = scrubber.record()
        rec["instruction"] = rs.text(rec["instruction"])
        rec["task_spec"] = {k: v if k in _SPEC_IDS else rs.value(v) for k, v in rec["task_spec"].items()}
    tally.took(rec["split"], {"family": rec["family"], "seed": row["seed"]})
    tally.lineage["policies"].update(row.get("policies") or [])
    tally.lineage["rounds"].update(row.get("rounds") or [])
    return rec


def _verl_rows(con, rounds, decisions, include_verified, tally, writer) -> Iterator[tuple[str, dict]]:
    """The RL task set as verl reads it, for tasks our verifier can score (an import has no world
    behind it), with the tools YAML, interaction YAML, task-spec file and reward module. Not
    scrubbed: the reward rebuilds each task's world from its spec (the manifest says so).

    Every row names every tool of the export (its Parquet schema has a column per tool), so the
    task specs are written to their file as they come, then read back from it for the rows: one
    task's spec is held at a time, with the tools seen, the first specs (the reward table's) and
    each task's success rate."""
    names: set[str] = set(META_SCHEMAS)
    first: list[dict[str, Any]] = []
    rates: list[float] = []

    def spec_lines() -> Iterator[str]:
        for _, rec in _rl_rows(con, rounds, decisions, include_verified, tally, None):
            spec = rec["task_spec"]
            names.update(spec["tools"])
            if len(first) < REWARD_SAMPLE:
                first.append(spec)
            rates.append(rec["group"]["success_rate"])
            yield json.dumps(spec, ensure_ascii=False, sort_keys=True) + "\n"

    spec_file = writer.published("verl.task-specs.jsonl")  # through the export's link: the finished export's
    written = writer.attach_lines(spec_file.name, spec_lines())
    tools = sorted(names)
    writer.schema = verl_schema(tools)
    writer.attach("verl.tools.yaml", tools_yaml(Tools()(tools), str(spec_file)))
    writer.attach("verl.interaction.yaml", interaction_yaml(str(spec_file)))
    writer.attach("verl.reward.py", REWARD_MODULE)
    writer.attach("verl.dataset.py", DATASET_MODULE)
    tally.rewards = reward_table(first)
    with written.open(encoding="utf-8", newline="\n") as fh:
        for i, (line, rate) in enumerate(zip(fh, rates, strict=True)):
            spec = json.loads(line)
            yield spec["split"], verl_row(spec, i, tools, rate)


def _selection(fmt: str, include_verified: bool) -> str:
    who = "approved + verified unreviewed" if include_verified else "approved"
    if fmt in ("rl", "verl"):
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
    on_episode: Callable[[], None] | None = None,
) -> tuple[ExportResult, dict[str, Any]]:
    """Write one export of ``rounds`` in ``fmt``; returns the result and the manifest
    (``extra`` is added to the manifest, e.g. the release it exports). ``pairs`` (dpo):
    episode, step or both. ``on_episode`` is called once per episode read."""
    if pairs not in LEVELS:
        raise ValueError(f"unknown pair level {pairs!r}")
    name, kind, unit = FORMATS[fmt]
    tally = Tally(on_episode=on_episode)
    started = datetime.now(UTC).isoformat()
    writer = ExportWriter(out_dir, name, kind, hf.SCHEMA if kind == "parquet" else None)
    with writer:
        if fmt == "rl":
            rows = _rl_rows(con, rounds, decisions, include_verified, tally, scrubber)
        elif fmt == "verl":
            rows = _verl_rows(con, rounds, decisions, include_verified, tally, writer)
        elif fmt == "dpo":
            rows = dpo_rows(con, rounds, decisions, include_verified, tally, scrubber, pairs)
        else:
            rows = _sft_rows(con, rounds, decisions, include_verified, fmt, tally, scrubber)
        for split, row in rows:
            writer.write(split, row)
        if fmt == "trl" and writer.sinks:
            writer.attach("README.md", dataset_card(writer.split_files()))
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
            # the rows each split's file holds (a trl episode may give several: one per trainable run)
            "splits": {s: sink.rows for s, sink in sorted(writer.sinks.items())},
            "mixing_weights": tally.mixing_weights(),
            "lineage": tally.lineage_summary(),
            "funnel": {"rounds": funnels, "total": funnel_mod.total(funnels)},
            "pii_replacements": "not scrubbed: the reward rebuilds each world from its task spec"
            if fmt == "verl" and scrubber else dict(sorted(scrubber.counts.items())) if scrubber else "scrubbing off",
        }
        if fmt == "verl":
            manifest["reward"] = tally.rewards
        if fmt in SFT_FORMATS:
            manifest["loss_mask"] = {"rule": MASK_RULE, "episodes": {k: tally.masks[k] for k in (FROM_STEP, STEP_ONLY)}}
        if fmt == "dpo":
            manifest["pair_kinds"] = dict(tally.pair_kinds)
            manifest["pairs"] = {"level": pairs, "by_source": {k: tally.pair_sources[k] for k in ("human", "verifier")},
                                 "by_level": dict(tally.pair_levels)}
        if tally.inferred:  # imports without tool schemas: what the rows' inferred schemas cover
            manifest["tool_schemas_inferred"] = {"episodes": tally.inferred.pop("(episodes)"),
                                                 "tools": dict(sorted(tally.inferred.items()))}
        # why the failed episodes read failed (model or harness, and what); for tasks, their rollouts'
        manifest["failure_attribution"] = dict(sorted(tally.failures.items()))
        manifest.update(extra or {})
        result = writer.finish(manifest)
    return result, {**manifest, "files": result.files}
