"""``python -m bench``: every benchmark of the project, one table.

    python -m bench           # the full runs (under 15 minutes on a 2-core machine; the long ones apart)
    python -m bench --only "real learner"   # a long one (about half an hour), by name
    python -m bench --quick   # the smoke versions (a test runs this)
    python -m bench --write docs/benchmarks.md [--only NAME,...]   # and rewrite the benchmark page

Each benchmark is a script in ``bench/`` that prints its own side-by-side ratios; this
runs each in a child process and gathers one row per benchmark: the figure (its summary
line), what it is compared against, the ratio and the target. Adding a benchmark is one
line in :data:`BENCHES`.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from bench.hostspeed import loop_ms, probe_line  # noqa: E402


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    against: str
    target: str
    summary: str  # regex of the summary line; its first number group named "ratio" if it has one
    long: bool = False  # run only when named (--only): it takes half an hour or more
    args: tuple[str, ...] = ()  # of the full run (not --quick)


BENCHES = [
    Bench("phone", "bench_phone.py", "20,000 steps/s/core", "x >= 1",
          r"PhoneEnv\.step.*x(?P<ratio>[\d.]+) target"),
    Bench("engine", "bench_engine.py", "plain asyncio + openai", ">= 0.90", r"worst ratio (?P<ratio>[\d.]+)"),
    Bench("adaptive concurrency", "bench_adaptive.py", "the best fixed level", ">= 0.90",
          r"worst ratio (?P<ratio>[\d.]+)"),
    Bench("model round", "bench_model_round.py", "plain asyncio + openai", ">= 1.5",
          r"ratio round / plain loop: (?P<ratio>[\d.]+).*"),
    Bench("curation+exports", "bench_curation.py", "the smaller size", "see targets line", r"targets at .*"),
    Bench("review", "bench_review.py", "100 episodes (vs 1,000,000)", "at 1M: queue < 0.5 s, episode < 1 s",
          r"^queue\s+[\d.]+s\s+[\d.]+s\s+(?P<ratio>[\d.]+)"),
    Bench("review under load", "bench_review_load.py", "20 reviewers, 100k episodes", "p95 open < 2 s, stored once",
          r"^episode open p95 (?P<ratio>[\d.]+) s.*"),
    Bench("near duplicates", "bench_semantic.py", "5-gram only", "recall > 0.8, 0 false positives", r"^one meaning.*"),
    Bench("label studio", "bench_label_studio.py", "5,000 episodes", "push and pull finish", r"episodes pushed in.*"),
    Bench("parallel round", "bench_round.py", "workers = 1", "<= 0.6", r"ratio workers=2 / workers=1: (?P<ratio>[\d.]+)"),
    Bench("flywheel", "bench_flywheel.py", "uniform mix", "<= 0.60 of uniform's rounds",
          r"competence-aware(?: / uniform rounds: (?:< )?(?P<ratio>[\d.]+))?.*"),
    Bench("import memory", "bench_import_memory.py", "the smallest file", "growth well under the file's",
          r"import memory above start.*growth ratio \(large - small\) / small: (?P<ratio>[\d.]+).*"),
    Bench("s3 reads", "bench_s3.py", "DuckDB straight from S3", "< 1 (empty cache)",
          r"empty cache / straight from S3: (?P<ratio>[\d.]+).*"),
    Bench("real learner", "bench_real_learner.py", "the base model", ">= +20 points on 3 families, 30 min",
          r"families up >= \d+ points: (?P<ratio>\d+) of .*", long=True, args=("--next-episodes", "60")),
]


def run(bench: Bench, quick: bool) -> tuple[str, str, float, int, str]:
    """(figure, ratio, seconds, exit code, output) of one benchmark run in its own process."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(HERE / bench.script), *(["--quick"] if quick else bench.args)],
                          capture_output=True, text=True, cwd=HERE.parent)
    seconds = time.perf_counter() - t0
    lines = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    figure, ratio = (lines[-1] if lines else "(no output)"), "-"
    for line in reversed(lines):
        m = re.search(bench.summary, line)
        if m:
            figure = line
            ratio = m.groupdict().get("ratio") or "-"
            break
    if proc.returncode != 0:
        figure = f"FAILED ({proc.returncode}): {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
    return figure, ratio, seconds, proc.returncode, proc.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the smoke versions of every benchmark")
    ap.add_argument("--only", help="comma-separated benchmark names")
    ap.add_argument("--write", type=Path, metavar="PAGE",
                    help="rewrite the benchmark page PAGE (docs/benchmarks.md): the sections of the benchmarks run, "
                         "and the table of every one")
    args = ap.parse_args(argv)
    chosen = [b for b in BENCHES if (b.name in args.only.split(",") if args.only else not b.long)]
    rows, before = [], loop_ms()
    for bench in chosen:
        print(f"running {bench.name} ...", file=sys.stderr, flush=True)
        rows.append((bench, *run(bench, args.quick)))
    print(f"{'benchmark':<17} {'ratio':>7}  {'compared against':<24} {'target':<30} {'s':>5}  figure")
    for bench, figure, ratio, seconds, _, _ in rows:
        print(f"{bench.name:<17} {ratio:>7}  {bench.against:<24} {bench.target:<30} {seconds:>5.0f}  {figure[:100]}")
    host = probe_line(before, loop_ms())
    print(host)
    if args.write:
        from bench.page import rewrite

        rewrite(args.write, [(b.name, " ".join((b.script, *(() if args.quick else b.args))), b.against, b.target, ratio, figure, out)
                             for b, figure, ratio, _, _, out in rows], [b.name for b in BENCHES], host,
                quick=args.quick)
        print(f"wrote {args.write}")
    return 1 if any(row[4] != 0 for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
