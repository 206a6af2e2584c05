"""The benchmarks run in their smoke mode, so they cannot rot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_engine_quick_prints_ratios_and_cpu_per_call():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_engine.py"), "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [r[0] for r in rows] == ["8", "32"]
    for _, calls, plain, engine, ratio, plain_cpu, engine_cpu in rows:
        assert int(calls) > 0 and float(plain) > 0 and float(engine) > 0
        assert abs(float(ratio) - float(engine) / float(plain)) < 0.01
        assert float(plain_cpu) > 0 and float(engine_cpu) > 0
    assert "worst ratio" in proc.stdout


def test_bench_round_quick_prints_both_runners_and_their_ratio():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_round.py"), "--episodes", "60"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.split() and line.split()[0] in ("1", "2")]
    assert [(r[0], r[1], r[2]) for r in rows] == [("1", "threads", "60"), ("2", "processes", "60")]
    assert abs(float(rows[1][5]) - float(rows[1][3]) / float(rows[0][3])) < 0.02
    assert "ratio workers=2 / workers=1" in proc.stdout
