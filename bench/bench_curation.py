"""Benchmark: the curation cascade and every export at two sizes, side by side.

    python bench/bench_curation.py                 # 10k and 100k episodes
    python bench/bench_curation.py --quick         # a smoke run (tests run this)
    python bench/bench_curation.py --sizes 100000,1000000 --repeat 1   # a million (17-50 minutes here)

Data: a pool of real episodes (real tasks, the scripted policy, the simulated phone)
is cloned at the Arrow level into N episodes: each clone gets its own task id,
episode ids, a ticket number in its instruction and in its finish call, and keeps its
base's seed, tool calls and final state (so replay re-executes every clone for real and
matches). Clones of one base share their tool calls, so LSH proposes many candidate
pairs among them; only clones of bases with many calls end up near duplicates.

Each phase runs in a child process of its own, so its wall time and peak resident
memory (ru_maxrss) are its own. Ratios compare the larger size with the smaller.

The cascade runs ``--repeat`` times at the largest size (default 3), each time on a fresh copy of the
data as built: the same work takes 26 s in one run and 44 s in another an hour later on this
shared machine (other tenants take its cores), so the table shows the best run, as ``timeit``
takes the best of its repeats, and a line beside it prints every run with their median.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.hostspeed import loop_ms, probe_line  # noqa: E402

FORMATS = ("openai", "sharegpt", "hf", "dpo", "rl", "trl", "adp", "verl")
TARGETS = {"cascade_s": 45.0, "export_s": 60.0, "peak_mib": 2048.0}  # at 100,000 and below: issue 12
# above 100,000 (issue 34): bounded memory, and the cascade's time linear in size
LARGE_TARGETS = {"peak_mib": 4096.0, "linear": 1.15}  # linear: time ratio at most this times the size ratio
SHARD_EPISODES = 20_000


def _pool(pool_tasks: int, rollouts: int) -> dict[str, pa.Table]:
    """Real episodes: ``pool_tasks`` gated tasks, ``rollouts`` scripted rollouts each."""
    from generators.collect import run_episode
    from generators.phone.families import FAMILIES, get_family
    from generators.policies.scripted import ScriptedPolicy
    from generators.writers.template import TemplateWriter
    from warehouse.schemas import TABLES, to_table

    writer, policy = TemplateWriter(), ScriptedPolicy(seed=11)
    tasks, eps, steps, outs = [], [], [], []
    fams = sorted(FAMILIES)
    for i in range(pool_tasks):
        task = get_family(fams[i % len(fams)]).make_task(10_000 + i, 1 + i % 3, writer)
        tasks.append(task)
        for r in range(rollouts):
            rec = run_episode(task, policy, rollout=r, round_id="r0001", batch_id="r0001-b0",
                              created_at=datetime(2026, 3, 1, tzinfo=UTC))
            eps.append(rec.episode), steps.extend(rec.steps), outs.append(rec.outcome)
    return {"tasks": to_table(TABLES["tasks"], tasks), "episodes": to_table(TABLES["episodes"], eps),
            "steps": to_table(TABLES["steps"], steps), "outcomes": to_table(TABLES["outcomes"], outs)}


def _suffix(col: pa.ChunkedArray | pa.Array, text: str) -> pa.Array:
    return pc.binary_join_element_wise(col, pa.scalar(text), "")


def _clone(pool: dict[str, pa.Table], c: int) -> dict[str, pa.Table]:
    tag = f"~{c}"
    words = f" (ticket {c})" if c else ""
    t = pool["tasks"]
    t = t.set_column(t.schema.get_field_index("task_id"), "task_id", _suffix(t["task_id"], tag))
    t = t.set_column(t.schema.get_field_index("instruction"), "instruction", _suffix(t["instruction"], words))
    e = pool["episodes"]
    for col in ("episode_id", "task_id"):
        e = e.set_column(e.schema.get_field_index(col), col, _suffix(e[col], tag))
    e = e.set_column(e.schema.get_field_index("instruction"), "instruction", _suffix(e["instruction"], words))
    s = pool["steps"].set_column(0, "episode_id", _suffix(pool["steps"]["episode_id"], tag))
    if c:  # the clone's finish carries its ticket: clones share tool calls, not every call
        args = s["action_arguments"]
        ticket = pc.replace_substring_regex(args, pattern='^\\{"', replacement=f'{{"ticket":"{c}","',
                                            max_replacements=1)
        s = s.set_column(s.schema.get_field_index("action_arguments"), "action_arguments",
                         pc.if_else(pc.equal(s["action_kind"], "finish"), ticket, args))
    o = pool["outcomes"].set_column(0, "episode_id", _suffix(pool["outcomes"]["episode_id"], tag))
    return {"tasks": t, "episodes": e, "steps": s, "outcomes": o}


def build(data_dir: Path, episodes: int, pool_tasks: int, rollouts: int = 2) -> None:
    """A data directory with one uncurated round of ``episodes`` synthetic episodes."""
    from warehouse import state
    from warehouse.store import Store

    pool = _pool(pool_tasks, rollouts)
    per_clone = pool["episodes"].num_rows
    clones = -(-episodes // per_clone)
    store = Store(data_dir)
    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=episodes, seed=0, plan={"synthetic": True})
    batch: dict[str, list[pa.Table]] = {k: [] for k in pool}
    shard, held = 0, 0

    def flush():
        nonlocal shard, held
        if held:
            store.commit_tables(rnd.id, f"s{shard:05d}", {k: pa.concat_tables(v) for k, v in batch.items()})
            shard, held = shard + 1, 0
            for v in batch.values():
                v.clear()

    made = 0
    for c in range(clones):
        parts = _clone(pool, c)
        take = min(per_clone, episodes - made)
        if take < per_clone:  # the last clone is cut short: keep whole tasks' rollouts
            keep_eps = parts["episodes"].slice(0, take)
            ids = keep_eps["episode_id"]
            parts = {"episodes": keep_eps,
                     "tasks": parts["tasks"].filter(pc.is_in(parts["tasks"]["task_id"], keep_eps["task_id"])),
                     "steps": parts["steps"].filter(pc.is_in(parts["steps"]["episode_id"], ids)),
                     "outcomes": parts["outcomes"].filter(pc.is_in(parts["outcomes"]["episode_id"], ids))}
        for k, v in parts.items():
            batch[k].append(v)
        made += take
        held += take
        if held >= SHARD_EPISODES:
            flush()
    flush()


# --- phases (each in a child process) -------------------------------------------------

def phase(kind: str, data_dir: Path, out_dir: Path, fmt: str | None) -> dict:
    from flows.export_cmd import export
    from flows.stages.curate import CURATE_KEY, curate_round_cascade
    from warehouse.settings import load_settings
    from warehouse.store import Store

    store = Store(data_dir)
    t0 = time.perf_counter()  # the phase alone: Python's start and the imports before it are no part of it
    info: dict = {}
    if kind == "cascade":
        # the settings a round curates with: replay spreads over round.workers (the machine's cores)
        res = curate_round_cascade(store, "r0001", CURATE_KEY, load_settings(None, data_dir=data_dir))
        info = {"out": res["funnel"]["out"], "steps": res["seconds"],
                "near_dup": res["funnel"]["steps"].get("near_duplicate", {})}
    else:
        result, manifest = export(store, out_dir, fmt=fmt, include_verified=True)
        info = {"rows": result.rows}
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"seconds": round(seconds, 2), "peak_mib": round(peak, 1), **info}


def _child(kind: str, data_dir: Path, out_dir: Path, fmt: str | None = None) -> dict:
    cmd = [sys.executable, __file__, "--phase", kind, "--data", str(data_dir), "--out-dir", str(out_dir)]
    if fmt:
        cmd += ["--format", fmt]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"phase {kind} {fmt or ''} failed: {res.stderr.strip().splitlines()[-1:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _cascades(data: Path, out: Path, repeat: int) -> dict:
    """The cascade ``repeat`` times, each on a fresh copy of ``data`` as built, the last on ``data`` itself
    (which the exports read then): the best run's figures, with every run's seconds in ``runs``."""
    runs = []
    for r in range(repeat - 1):
        copy = data.with_name(f"{data.name}-run{r}")
        shutil.copytree(data, copy)
        runs.append(_child("cascade", copy, out))
        shutil.rmtree(copy)
    runs.append(_child("cascade", data, out))
    return {**min(runs, key=lambda x: x["seconds"]), "runs": [x["seconds"] for x in runs]}


def run(sizes: list[int], pool_tasks: int, workdir: Path, exports: bool = True, repeat: int = 3) -> dict:
    results: dict[int, dict[str, dict]] = {}
    for n in sizes:
        data = workdir / f"data-{n}"
        t0 = time.perf_counter()
        build(data, n, pool_tasks)
        print(f"built {n} episodes in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        # the repeats at the largest size alone: its cascade is the one with a target
        results[n] = {"cascade": _cascades(data, workdir / f"out-{n}", repeat if n == max(sizes) else 1)}
        for fmt in FORMATS if exports else ():
            results[n][f"export {fmt}"] = _child("export", data, workdir / f"out-{n}", fmt)
    return results


def report(results: dict[int, dict[str, dict]]) -> list[str]:
    sizes = sorted(results)
    lo, hi = sizes[0], sizes[-1]
    lines = [f"{'phase':<16}" + "".join(f"{f'{n:,} s':>13}{f'{n:,} MiB':>14}" for n in sizes)
             + f"{'time ratio':>12}{'mem ratio':>11}{'size ratio':>12}"]
    failures = []
    large = hi > 100_000
    for name in results[lo]:
        row = f"{name:<16}"
        for n in sizes:
            r = results[n][name]
            row += f"{r['seconds']:>13.2f}{r['peak_mib']:>14.0f}"
        a, b = results[lo][name], results[hi][name]
        row += f"{b['seconds'] / max(a['seconds'], 1e-3):>12.1f}{b['peak_mib'] / max(a['peak_mib'], 1):>11.1f}{hi / lo:>12.1f}"
        lines.append(row)
        if large:
            slow = name == "cascade" and b["seconds"] / max(a["seconds"], 1e-3) > LARGE_TARGETS["linear"] * hi / lo
            if slow or b["peak_mib"] > LARGE_TARGETS["peak_mib"]:
                failures.append(name)
        elif b["seconds"] > (TARGETS["cascade_s"] if name == "cascade" else TARGETS["export_s"]) \
                or b["peak_mib"] > TARGETS["peak_mib"]:
            failures.append(name)
    runs = results[hi]["cascade"]["runs"]
    lines.append(f"cascade runs at {hi:,} (s): best {min(runs):.2f}, median {statistics.median(runs):.2f}, "
                 f"all {', '.join(f'{r:.2f}' for r in runs)}")
    lines.append(f"cascade step seconds at {hi:,} (best run): {json.dumps(results[hi]['cascade']['steps'])}")
    lines.append(f"near-duplicate marks at {hi:,}: {json.dumps(results[hi]['cascade']['near_dup'])}")
    wanted = (f"cascade time ratio <= {LARGE_TARGETS['linear']:g} x size ratio, each phase's peak < "
              f"{LARGE_TARGETS['peak_mib']:g} MiB" if large else
              f"cascade < {TARGETS['cascade_s']:g} s, each export < {TARGETS['export_s']:g} s, "
              f"peak < {TARGETS['peak_mib']:g} MiB")
    lines.append(f"targets at {hi:,} ({wanted}): " + ("met" if not failures else "MISSED by " + ", ".join(failures)))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated episode counts")
    ap.add_argument("--pool-tasks", type=int, default=400, help="real tasks in the pool that is cloned")
    ap.add_argument("--quick", action="store_true", help="smoke mode: tiny sizes")
    ap.add_argument("--workdir", type=Path, default=None, help="where to build data (default: a temp dir)")
    ap.add_argument("--cascade-only", action="store_true", help="time the cascade, not the exports")
    ap.add_argument("--repeat", type=int, default=3,
                    help="cascade runs at the largest size, each on fresh data; the best is reported (default: 3)")
    ap.add_argument("--phase", choices=("cascade", "export"), help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--format", choices=FORMATS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.phase:
        print(json.dumps(phase(args.phase, args.data, args.out_dir, args.format)))
        return 0
    sizes = [300, 600] if args.quick else [int(s) for s in args.sizes.split(",")]
    pool = 20 if args.quick else args.pool_tasks
    before = loop_ms()
    with tempfile.TemporaryDirectory(prefix="bench-curation-") as tmp:
        results = run(sizes, pool, args.workdir or Path(tmp), exports=not args.cascade_only,
                      repeat=2 if args.quick else max(1, args.repeat))
    for line in report(results):
        print(line)
    print(probe_line(before, loop_ms()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
