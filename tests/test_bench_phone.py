"""The phone benchmark runs in its smoke mode, so it cannot rot."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_phone_quick_prints_every_measure():
    proc = subprocess.run([sys.executable, "bench/bench_phone.py", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for measure in ("raw tool calls / s", "verified steps / s, full recomputation (CPU, best round)",
                    "verified steps / s, incremental (CPU, median round)",
                    "verified steps / s, incremental (wall)", "world build (us)", "world copy (us)",
                    "world hash, from scratch (us)", "against issue 34's goal", "next, towards 50,000"):
        assert measure in proc.stdout
    summary = proc.stdout.strip().splitlines()[-1]  # the line `python -m bench` reads
    assert summary.startswith("verified steps / s per core (PhoneEnv.step, incremental, CPU, best round)")
    assert "target (20,000)" in summary and "full recomputation" in summary and not proc.stderr
