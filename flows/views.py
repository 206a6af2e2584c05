"""What the command line prints: round summaries and status tables."""

from __future__ import annotations

import json
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from curation.report import SPLIT_ORDER, round_rows
from review_app.agreement import Overlap
from review_app.final import final_decisions
from warehouse.settings import Settings
from warehouse.store import Store


def split_cell(counts: dict[str, int]) -> str:
    """train/dev/test | challenge, as one table cell."""
    return "/".join(str(counts.get(s, 0)) for s in SPLIT_ORDER[:3]) + f" | {counts.get('challenge', 0)}"


def status_rows(
    store: Store, prices: dict[str, Any] | None = None, overlap: Overlap | None = None
) -> list[dict[str, Any]]:
    """One row per round (:func:`curation.report.round_rows`), its decisions counted as exports count
    them (:func:`review_app.final.final_decisions` under ``overlap``): a partial or disputed episode is
    counted as such, not as approved."""
    return round_rows(store, final_decisions(store, None, overlap or Overlap()), prices)


def _pass_table(title: str, first: str, k: int, groups: dict[str, dict[str, Any]]) -> Table:
    """One row per group (a capability or a family): episodes, success, pass^1 and pass^k (one
    pass^1 column when k is 1: the two are the same number)."""
    table = Table(title=title, box=box.SIMPLE_HEAD)
    passes = ["pass1"] + (["passk"] if k > 1 else [])
    for col in [first, "episodes", "success", "pass^1"] + ([f"pass^{k}"] if k > 1 else []):
        table.add_column(col, justify="left" if col == first else "right", no_wrap=True)
    for name, v in groups.items():
        table.add_row(name, str(v["episodes"]), f"{v['success_rate']:.0%}",
                      *("-" if v[p] is None else f"{v[p]:.2f}" for p in passes))
    return table


def print_capabilities(console: Console, rows: list[dict[str, Any]]) -> None:
    """Per round: success, pass^1 and pass^k per capability and per family; failure attribution."""
    for r in rows:
        caps = r.get("capabilities")
        if not caps:
            continue
        console.print(_pass_table(f"{r['round']}: by capability (k = {r['k']})", "capability", r["k"], caps))
        console.print(_pass_table(f"{r['round']}: by family (k = {r['k']})", "family", r["k"], r.get("families") or {}))
        scen = r.get("scenarios") or {}
        if scen.get("rollouts"):
            console.print(f"  scenarios: {scen['rollouts']} rollouts, {scen['success_rate']:.0%} succeeded in every "
                          "session")
        if r.get("attribution"):
            console.print("  failures: " + ", ".join(f"{k} {v}" for k, v in r["attribution"].items()))


def print_status(console: Console, rows: list[dict[str, Any]], settings: Settings) -> None:
    if not rows:
        console.print(f"No rounds yet in {settings.data_location()}. Start one with: flywheel run")
        return
    table = Table(title=f"Rounds in {settings.data_location()}", box=box.SIMPLE_HEAD)
    for col in ("round", "status", "episodes", "train/dev/test | challenge", "success", "tasks", "dups", "approved",
                "rejected", "fix", "tokens", "cost"):
        table.add_column(col, justify="left" if col in ("round", "status") else "right", no_wrap=True)
    for r in rows:
        rate = f"{r['success_rate']:.0%}" if r["success_rate"] is not None else "-"
        table.add_row(
            r["round"],
            r["status"] + (f" (import{': ' + r['import_source'] if r.get('import_source') else ''})"
                           if r.get("import") and r["status"] != "imported" else ""),
            f"{r['episodes']}/{r['requested']}",
            split_cell(r.get("splits", {})),
            rate,
            f"{r['tasks_kept']}/{r['tasks_tried']}",
            str(r["duplicates"]),
            str(r["approved"]),
            str(r["rejected"]),
            str(r["needs_fix"]),
            f"{r['prompt_tokens'] + r['completion_tokens']:,}",
            f"${r['cost_usd']:.4f}" if r["cost_usd"] is not None else "-",
        )
    console.print(table)
    for r in rows:
        if r["cost_usd"] is not None and r.get("unpriced_models"):
            console.print(f"{r['round']}: the cost leaves out {', '.join(r['unpriced_models'])} (no price in "
                          "openai.prices)", highlight=False)
    print_demonstrations(console, rows)
    print_funnels(console, rows)
    print_capabilities(console, rows)


def print_demonstrations(console: Console, rows: list[dict[str, Any]]) -> None:
    """Per round with reference demonstrations: how many, of which family, and that success leaves them out."""
    for r in rows:
        if r.get("reference_demonstrations"):
            fams = ", ".join(f"{f} {d.get('episodes', 0)}" for f, d in sorted((r.get("demonstrations") or {}).items()))
            console.print(f"{r['round']}: {r['reference_demonstrations']} reference demonstrations"
                          + (f" ({fams})" if fams else "") + ": the reference solution followed, for a failure "
                          "curriculum; not in success, pass^k or pairs, trained on only when approved", highlight=False)


# (column title, check, marks that count) of the funnel table, in cascade order
FUNNEL_COLUMNS = (
    ("broken", "schema", ("broken",)),
    ("replay≠", "replay", ("mismatch",)),
    ("flagged", "heuristics", ("flagged",)),
    ("dup", "exact_duplicate", ("duplicate",)),
    ("near-dup", "near_duplicate", ("near_duplicate",)),
    ("costlier", "selection", ("alternative",)),
    ("failed", "selection", ("evidence",)),
    ("pii", "pii", ("found",)),
    ("to people", "routing", ("needs_review", "sampled")),
)


def print_funnels(console: Console, rows: list[dict[str, Any]]) -> None:
    """The curation funnel per round: in, what each step marked, out (passed every gate)."""
    curated = [r for r in rows if r.get("funnel")]
    if not curated:
        return
    table = Table(title="Curation funnel (episodes marked by each step)", box=box.SIMPLE_HEAD)
    table.add_column("round", no_wrap=True)
    table.add_column("in", justify="right")
    for title, _, _ in FUNNEL_COLUMNS:
        table.add_column(title, justify="right", no_wrap=True)
    table.add_column("out", justify="right")
    for r in curated:
        f = r["funnel"]
        cells = [str(sum(f["steps"].get(check, {}).get(m, 0) for m in marks)) for _, check, marks in FUNNEL_COLUMNS]
        table.add_row(r["round"], str(f["in"]), *cells, str(f["out"]))
    console.print(table)
    for r in curated:
        a = r.get("judge_agreement")
        if a and a["compared"]:
            console.print(f"{r['round']}: model judges agree with people on {a['agreement']:.0%} of {a['compared']} "
                          f"reviewed episodes")


def usage_note(costs: dict[str, Any]) -> str:
    """' (planner 12,345, judge 2,345 tokens); $0.0123' for a round's costs (see curation.costs)."""
    parts = [f"{r['role']} {r['prompt_tokens'] + r['completion_tokens']:,}" for r in costs.get("model_usage", [])
             if r["prompt_tokens"] or r["completion_tokens"]]
    note = f" ({', '.join(parts)} tokens)" if len(parts) > 1 else ""
    if costs.get("cost_usd") is not None:
        note += f"; ${costs['cost_usd']:.4f}"
        if costs.get("unpriced_models"):
            note += f" without {', '.join(costs['unpriced_models'])} (no price set)"
    return note


def print_round_summary(console: Console, summary: dict[str, Any], settings: Settings) -> None:
    n, ok, ref = summary["episodes"], summary["successes"], summary.get("reference_demonstrations", 0)
    verb = "Resumed and finished" if summary["resumed"] else "Finished"
    console.print(f"[bold green]{verb} round {summary['round_id']}[/]: {n} episodes, {ok} verified successes, "
                  f"{n - ref - ok} failures" + (f", {ref} reference demonstrations (not the model's)" if ref else ""))
    if summary["shards_skipped"]:
        console.print(f"  {summary['shards_skipped']} shard(s) were already committed and were kept as they were")
    if summary["orphans_removed"]:
        console.print(f"  removed {summary['orphans_removed']} unrecorded file(s) left by an interrupted run")
    console.print(f"  tasks kept by the gate: {summary['tasks_kept']} of {summary['tasks_tried']} written")
    worded, written = summary.get("tasks_worded"), summary.get("tasks_written", 0)
    if worded is not None and worded < written:
        console.print(f"  [yellow]the model worded {worded} of {written} tasks[/]: the template's wording stood for "
                      f"the rest (replies rejected openai.writer_rounds times, or the call failed)")
    if summary.get("judge_errors"):
        console.print(f"  [yellow]{summary['judge_errors']} episode(s) got no usable judge reply[/] (judge_error: the "
                      "judges' endpoint failed or gave no verdict; see the judges step in flywheel status)")
    if summary.get("prompt_tokens") or summary.get("completion_tokens"):
        console.print(f"  model tokens: {summary['prompt_tokens']:,} prompt, {summary['completion_tokens']:,} "
                      f"completion{usage_note(summary)}", highlight=False)
    for e in summary.get("model_errors") or []:
        what = ("the model server refused a request (not retried)" if e["termination"] == "request_rejected"
                else "the model endpoint kept failing")
        console.print(f"  [yellow]{e['episodes']} episode(s) ended because {what}[/]: {escape(e['message'])}",
                      soft_wrap=True)  # one line, so the server's message can be grepped whole
    for f in summary.get("user_fallbacks") or []:
        console.print(f"  [yellow]the user model's reply was replaced by the scripted answer {f['replies']} time(s) "
                      f"in {f['episodes']} episode(s)[/]: {escape(f['reason'])} (outcomes' user_fallbacks)")
    console.print(f"Data: {settings.data_location()}", markup=False, highlight=False)
    console.print("Next: [bold]flywheel status[/] · [bold]flywheel review[/] to approve episodes · "
                  "[bold]flywheel export --verified[/] for a first look")


def print_skipped(errors: Console, source: str, skipped: list[tuple[str, str]], *, limit: int | None = None) -> None:
    """One warning per record of the file ``source`` that was skipped, ``warning: FILE: WHERE: skipped: WHY``
    (import and feedback alike); past ``limit`` of them, how many more."""
    shown = skipped if limit is None else skipped[:limit]
    for where, why in shown:
        errors.print(f"warning: {source}: {where}: skipped: {why}", markup=False, highlight=False)
    if len(skipped) > len(shown):
        errors.print(f"warning: {source}: ... and {len(skipped) - len(shown)} more skipped records",
                     markup=False, highlight=False)


def print_feedback_import(console: Console, errors: Console, result, source: str) -> None:
    if result.already:
        console.print(f"{source} was already imported as {result.batch}; nothing changed", markup=False, highlight=False)
        return
    print_skipped(errors, source, result.skipped, limit=20)
    console.print(f"Recorded {result.imported} results from {source} as {result.batch}"  # a file name is no markup
                  + (f"; skipped {len(result.skipped)}" if result.skipped else ""), markup=False, highlight=False)
    console.print("Next round's mix: [bold]flywheel plan[/]")


def feedback_json(result) -> dict[str, Any]:
    """``flywheel feedback --json``."""
    return {"batch": result.batch, "imported": result.imported, "already_imported": bool(result.already),
            "skipped": [{"where": w, "why": p} for w, p in result.skipped]}


def print_plan(console: Console, data: dict[str, Any]) -> None:
    if data["competence"]:
        table = Table(title=f"Competence (all feedback, newest {data['feedback_batch']} weighs most)",
                      box=box.SIMPLE_HEAD)
        for col in ("family", "level", "results", "success", "±", "batches", "zone"):
            table.add_column(col, no_wrap=True)
        for c in data["competence"]:
            table.add_row(c["family"], str(c["difficulty"]), f"{c['evidence']:.3g} of {c['n']}", f"{c['mean']:.0%}",
                          f"{c['sd'] * 100:.0f}", str(c["batches"]), c["zone"])
        console.print(table)
    else:
        console.print("No dev feedback yet: the next round explores every family evenly.")
    reported = data.get("reported_evals") or []
    if reported:
        shown = ", ".join(f"{r['batch']} ({r['model']} on {r['split']}, {r['results']} results)" for r in reported[:3])
        more = f" and {len(reported) - 3} more" if len(reported) > 3 else ""
        console.print(f"Reported only, never planned from: {shown}{more}", highlight=False, markup=False)
    only = f" of {' and '.join(data['splits'])} variants" if data.get("splits") else ""
    table = Table(title=f"Next round: {data['episodes']} episodes{only}, mix from {data['source']}", box=box.SIMPLE_HEAD)
    for col in ("family", "share", "episodes", "level", "why"):
        table.add_column(col, no_wrap=col != "why")
    for m in data["mix"]:
        table.add_row(m["family"], f"{m['share']:.0%}", str(m["episodes"]), str(m["difficulty"]), m["reason"])
    console.print(table)
    for fam, d in sorted((data.get("demonstrations") or {}).items()):
        console.print(f"[blue]{fam}[/]: {d['reason']}", highlight=False)
    for line in data.get("reports", []):
        console.print(f"[yellow]report[/] {line}", highlight=False)

def eval_data(store: Store, plan, result) -> dict[str, Any]:
    """What ``flywheel eval --json`` prints: the batch, and success per family and level."""
    per = store.duck().execute(
        "SELECT family, difficulty, count(*), count(*) FILTER (WHERE success) FROM feedback WHERE batch = ? "
        "GROUP BY 1, 2 ORDER BY 1, 2", [plan.batch]).fetchall()
    return {
        "batch": plan.batch, "split": plan.split, "model": plan.model, "already": result.already,
        "feeds_planner": plan.split == "dev", "results": sum(n for _, _, n, _ in per),
        "per_family": [{"family": f, "difficulty": d, "n": n, "successes": ok} for f, d, n, ok in per],
        "missing": list(plan.missing),
    }


def print_eval(console: Console, errors: Console, store: Store, plan, result, *, as_json: bool) -> None:
    data = eval_data(store, plan, result)
    if as_json:
        console.print_json(json.dumps(data))
        return
    if plan.missing:
        errors.print(f"no {plan.split} task for {', '.join(plan.missing)}", highlight=False)
    table = Table(title=f"{plan.model} on {plan.split} tasks ({plan.batch})", box=box.SIMPLE_HEAD)
    for col in ("family", "level", "results", "success"):
        table.add_column(col, no_wrap=True)
    for r in data["per_family"]:
        table.add_row(r["family"], str(r["difficulty"]), str(r["n"]), f"{r['successes'] / r['n']:.0%}")
    console.print(table)
    said = "was already recorded" if result.already else "recorded"
    use = ("the next plan follows it: flywheel plan" if plan.split == "dev"
           else f"reported only: {plan.split} results never steer the plan")
    console.print(f"{data['results']} results {said} as {plan.batch}; {use}")


def print_history(console: Console, data: dict[str, Any]) -> None:
    """Competence per family over feedback batches (one column a batch), then each round's mix."""
    hist = data["competence"]
    if hist:
        batches = sorted({(h["order"], h["batch"]) for h in hist})
        table = Table(title="Competence after each feedback batch (success at the hardest level measured)",
                      box=box.SIMPLE_HEAD)
        table.add_column("family", no_wrap=True)
        for _, b in batches:
            table.add_column(b, justify="right", no_wrap=True)
        cell = {(h["family"], h["order"]): h for h in hist}
        for fam in sorted({h["family"] for h in hist}):
            table.add_row(fam, *(_history_cell(cell.get((fam, o))) for o, _ in batches))
        console.print(table)
    else:
        console.print("No feedback yet: flywheel eval or flywheel feedback FILE.")
    if not data["rounds"]:
        return
    fams = sorted({f for r in data["rounds"] for f in r["mix"]})
    table = Table(title="The mix of each round (share, level)", box=box.SIMPLE_HEAD)
    for col in ("round", "episodes", *fams, "from"):
        table.add_column(col, no_wrap=True, justify="left" if col in ("round", "from") else "right")
    for r in data["rounds"]:
        table.add_row(r["round_id"], str(r["episodes"]),
                      *(f"{r['mix'][f]:.0%} L{r['levels'].get(f, '?')}" if f in r["mix"] else "-" for f in fams),
                      r["source"] or "-")
    console.print(table)


def _history_cell(h: dict | None) -> str:
    if h is None:
        return "-"
    flag = {"uncertain": "?", "mastered": "*", "failing": "!"}.get(h["zone"], "")
    return f"L{h['difficulty']} {h['mean']:.0%}{flag}"
