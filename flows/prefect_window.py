"""What an operator sees of a round in Prefect: runs named after their round and shards, and
a Markdown artifact per round (and per export under a Prefect server) that says how it went.

Every call here is best effort: the round's data is what counts, so a Prefect API that blinks
costs a name or an artifact (logged), never the round.
"""

from __future__ import annotations

import os
import re
from typing import Any

from flows.views import FUNNEL_COLUMNS

MARKS = {"needs_review": "flagged by curation", "sampled": "sampled for a spot check"}


def rename_this_run(name: str) -> None:
    """Give the flow run in progress the name ``name`` (Prefect's random names say nothing)."""
    # deferred: Prefect, a second; export imports this module and runs without it
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run  # deferred: as above

    if not flow_run.id:
        return
    try:
        with get_client(sync_client=True) as client:
            client.update_flow_run(flow_run.id, name=name)
    except Exception as exc:  # noqa: BLE001 - a name is not worth a round
        _log_warning(f"could not name the flow run {name!r}: {exc}")


def shard_run_name() -> str:
    """A collect task run's name: its round and the shards it collects (``r0007/s003``, ``r0007/s000-s003``)."""
    from prefect.runtime import task_run  # deferred: as in rename_this_run

    params = task_run.parameters or {}
    keys = list(params.get("keys") or [])
    span = keys[0] if len(keys) == 1 else f"{keys[0]}-{keys[-1]}" if keys else "none"
    return f"{params.get('round_id', 'round')}/{span}"


def publish(key: str, markdown: str, description: str) -> None:
    """A Markdown artifact under ``key`` (lower case, digits and dashes), its latest version shown first."""
    from prefect.artifacts import create_markdown_artifact  # deferred: as in rename_this_run

    try:
        create_markdown_artifact(markdown=markdown, key=artifact_key(key), description=description)
    except Exception as exc:  # noqa: BLE001 - a report is not worth a round
        _log_warning(f"could not publish the artifact {key!r}: {exc}")


def artifact_key(text: str) -> str:
    """``text`` as an artifact key: Prefect allows lower-case letters, digits and dashes."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-") or "flywheel"


def _log_warning(message: str) -> None:
    from flows.stages.context import run_log  # deferred: it imports Prefect, which an export runs without

    run_log().warning(message)


def _cell(value: Any) -> str:
    """A table cell: our own counts and names, with Markdown's table characters taken out."""
    return str(value).replace("|", "/").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def round_markdown(summary: dict[str, Any], row: dict[str, Any] | None) -> str:
    """The round's report: episodes, success by family and capability, the curation funnel, cost
    and what to review next. ``summary`` is the round's summary, ``row`` its ``flywheel status`` row."""
    rid, n, ok = summary["round_id"], summary["episodes"], summary["successes"]
    ref = summary.get("reference_demonstrations", 0)
    rate = f"{ok / (n - ref):.0%}" if n > ref else "-"
    out = [f"# Round {rid}", "",
           f"**{n} episodes**, {ok} verified successes ({rate} of the model's attempts)"
           + (f", {ref} reference demonstrations" if ref else "") + ".", "",
           f"Tasks kept by the generation gate: {summary['tasks_kept']} of {summary['tasks_tried']} written. "
           f"Shards: {summary['shards_written']} collected now, {summary['shards_skipped']} already committed "
           f"({summary['runner']} runner, {summary['workers']} worker(s)).", ""]
    row = row or {}
    for title, group in (("By family", "families"), ("By capability", "capabilities")):
        groups = row.get(group) or {}
        if groups:
            out += [f"## {title}", ""]
            out += _table([group[:-1] if group != "capabilities" else "capability", "episodes", "success", "pass^1"],
                          [[name, v["episodes"], f"{v['success_rate']:.0%}",
                            "-" if v.get("pass1") is None else f"{v['pass1']:.2f}"] for name, v in groups.items()])
    funnel = row.get("funnel")
    if funnel:
        out += ["## Curation funnel", ""]
        cells = [sum(funnel["steps"].get(check, {}).get(m, 0) for m in marks) for _, check, marks in FUNNEL_COLUMNS]
        out += _table(["in", *(t for t, _, _ in FUNNEL_COLUMNS), "out"], [[funnel["in"], *cells, funnel["out"]]])
    tokens = summary.get("prompt_tokens", 0) + summary.get("completion_tokens", 0)
    cost = summary.get("cost_usd")
    out += ["## Cost", "", f"{tokens:,} model tokens" + (f", ${cost:.4f}" if cost is not None else "")
            + (f" (${row['cost_per_approved_usd']:.4f} an approved episode)" if row.get("cost_per_approved_usd")
               else "") + ".", ""]
    out += ["## What to review next", ""]
    routed = (funnel or {}).get("steps", {}).get("routing", {})
    waiting = [f"{routed[m]} {what}" for m, what in MARKS.items() if routed.get(m)]
    out.append(("Episodes routed to people: " + ", ".join(waiting) + ". Open them with `flywheel review`.")
               if waiting else "Nothing was routed to people: `flywheel export --verified` for a first look.")
    for e in summary.get("model_errors") or []:
        out.append(f"- {e['episodes']} episode(s) ended on a model error ({e['termination']}).")
    return "\n".join(out) + "\n"


def publish_export(manifest: dict[str, Any], out: str) -> None:
    """The export's summary as an artifact, when a Prefect server is configured (PREFECT_API_URL): an
    export outside a round has no temporary server to show it on."""
    if os.environ.get("PREFECT_API_URL"):
        publish(f"export-{manifest.get('format', 'data')}", export_markdown(manifest, out),
                f"flywheel export --format {manifest.get('format', '')}")


def export_markdown(manifest: dict[str, Any], out: str) -> str:
    """An export's manifest in short: the format, where it went, the rows of each split and what was
    left out and why."""
    out_lines = [f"# Export: {manifest.get('format', '')}", "",
                 f"Written to `{out}`; rounds {', '.join(manifest.get('rounds') or []) or '-'}; "
                 f"{manifest.get('selection', '')}.", ""]
    splits = manifest.get("splits") or {}
    if splits:
        out_lines += _table(["split", "rows"], [[k, v] for k, v in splits.items()])
    excluded = manifest.get("excluded") or {}
    if excluded:
        out_lines += ["## Left out", ""] + _table(["why", "count"], [[k, v] for k, v in excluded.items()])
    left = (manifest.get("approved_left_out") or {}).get("count")
    if left:
        out_lines.append(f"**{left} approved episode(s) left out**: the manifest names each with its reason.")
    return "\n".join(out_lines) + "\n"
