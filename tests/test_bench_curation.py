"""The curation bench runs in its smoke mode, so it cannot rot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_curation_quick_runs_and_prints_ratios():
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_curation.py"), "--quick"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "time ratio" in lines[0] and "mem ratio" in lines[0]
    phases = {line.split()[0] + (" " + line.split()[1] if line.startswith("export") else "") for line in lines[1:10]}
    assert phases == {"cascade", *(f"export {f}" for f in ("openai", "sharegpt", "hf", "dpo", "rl", "trl", "adp", "verl"))}
    assert any(line.startswith("targets at") for line in lines)
    runs = next(line for line in lines if line.startswith("cascade runs at"))  # two runs in smoke mode
    assert len(runs.split("all ")[1].split(", ")) == 2
    best = float(runs.split("best ")[1].split(",")[0])
    assert best == float(next(line for line in lines if line.startswith("cascade ")).split()[3])  # the larger size
    assert lines[-1].startswith("this core: a million-addition Python loop takes ")  # the host's speed then
    assert "Traceback" not in res.stderr
