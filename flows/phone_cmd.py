"""``flywheel families`` and ``flywheel gate``: look at the task families and their gate.

The two commands are plain functions; ``flows.cli`` adds them to the app.

Thin: parse options, call generators.phone, print. Unknown families and knobs are
ConfigErrors, which the command line prints as one line.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from flows.cli_shared import JsonOpt, out
from warehouse.errors import ConfigError


def family_rows() -> list[dict[str, Any]]:
    """What ``flywheel families`` shows: per family its capability, knobs and tool count."""
    from generators.phone.families import FAMILIES  # deferred: the families, ~90 ms that --help never needs

    return [{"id": f.id, "title": f.title, "capability": f.capability, "tags": list(f.tags),
             "knobs": dict(f.knobs), "max_level": f.max_difficulty, "tools": len(f.tools),
             "templates": len(f.all_templates())} for f in (FAMILIES[k] for k in sorted(FAMILIES))]


def parse_knobs(items: list[str]) -> dict[str, int]:
    """``["noise=3"]`` -> ``{"noise": 3}``; ConfigError on anything else."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit():
            raise ConfigError(f"--knob {item!r}: expected NAME=LEVEL, e.g. noise=3")
        out[name.strip()] = int(value)
    return out


def chosen_families(spec: str | None, knobs: dict[str, int]) -> list[Any]:
    """The families named in ``spec`` (comma-separated; default all), checked against ``knobs``."""
    from generators.phone.families import FAMILIES, UnknownFamilyError, get_family  # deferred: as in family_rows

    ids = [f.strip().upper() for f in spec.split(",") if f.strip()] if spec else sorted(FAMILIES)
    try:
        families = [get_family(fid) for fid in ids]
    except UnknownFamilyError as exc:
        raise ConfigError(exc.args[0]) from None
    for name, level in knobs.items():
        owners = [f for f in families if name in f.knobs]
        if not owners:
            known = sorted({k for f in families for k in f.knobs})
            raise ConfigError(f"unknown knob {name!r} for {', '.join(ids)} (knobs: {', '.join(known)})")
        for f in owners:
            f.knob_levels(1, {name: level})  # the level must be in range
    return families


def families(as_json: JsonOpt = False) -> None:
    """List the task families: capability, difficulty knobs and tool count."""
    rows = family_rows()
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table("id", "family", "capability", "knobs (levels 1-3)", "tools", "templates")
    for r in rows:
        knobs = "; ".join(f"{k}: {v}" for k, v in r["knobs"].items())
        table.add_row(r["id"], r["title"], r["capability"], knobs, str(r["tools"]), str(r["templates"]))
    out.print(table)

def gate(
    family: Annotated[str | None, typer.Option("--family", help="Family id(s), comma-separated (default: all).")] = None,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Instances per family (seeds 0..N-1).")] = 50,
    difficulty: Annotated[
        int | None, typer.Option("--difficulty", min=1, max=3, help="Fixed difficulty (default: cycle 1-3).")
    ] = None,
    knob: Annotated[
        list[str] | None, typer.Option("--knob", help="Set one knob apart from the difficulty: NAME=LEVEL.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the generation gate and report per family: tried, kept, rejections by reason."""
    from generators.phone.gate import gate_report  # deferred: as in family_rows

    knobs = parse_knobs(knob or [])
    chosen = chosen_families(family, knobs)
    if as_json:
        report = gate_report(chosen, seeds, difficulty, knobs)
        out.print_json(json.dumps(report))
        return
    with Progress(console=out, transient=True) as progress:
        bar = progress.add_task("gating", total=seeds * len(chosen))
        report = gate_report(chosen, seeds, difficulty, knobs, on_task=lambda _: progress.advance(bar))
    table = Table("family", "tried", "kept", "kept %", "rejections by reason")
    for fid, r in report.items():
        why = ", ".join(f"{k} {v}" for k, v in r["rejections"].items()) or "none"
        table.add_row(fid, str(r["tried"]), str(r["kept"]), f"{100 * r['kept_share']:.1f}", why)
    out.print(table)
