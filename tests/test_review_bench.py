"""The review bench runs in its smoke mode, so it cannot rot."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT, cli_env


def test_bench_review_quick_prints_both_timings():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_review.py"), "--quick"],
        env=cli_env(None), cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("queue ") and "ratio" not in line for line in lines), proc.stdout
    assert any(line.startswith("episode (60 steps)") for line in lines), proc.stdout
    assert any(line.startswith("episode (200 kB text)") for line in lines), proc.stdout
    assert proc.stderr.strip() == ""
