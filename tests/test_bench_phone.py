"""The phone benchmark runs in its smoke mode, so it cannot rot."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_phone_quick_prints_every_measure():
    proc = subprocess.run([sys.executable, "bench/bench_phone.py", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for measure in ("raw tool calls / s", "env tool calls / s (PhoneEnv.step, verified)", "world build (us)",
                    "world copy (us)", "world hash (us)"):
        assert measure in proc.stdout
    assert "target" in proc.stdout and not proc.stderr
