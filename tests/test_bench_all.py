"""``python -m bench`` gathers every benchmark into one table (its smoke mode, on one bench:
each script's own smoke test runs the rest)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench.__main__ import BENCHES

ROOT = Path(__file__).resolve().parents[1]


def test_every_bench_script_is_registered():
    scripts = {p.name for p in (ROOT / "bench").glob("bench_*.py")}
    assert scripts == {b.script for b in BENCHES}


def test_python_m_bench_quick_prints_one_row_with_its_ratio():
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", "phone"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    header, row, probe = proc.stdout.splitlines()
    assert header.split()[:2] == ["benchmark", "ratio"]
    assert row.split()[0] == "phone" and float(row.split()[1]) > 0
    # how fast the host was, at the start and the end: the figures of a slow spell can be told apart
    start, end = re.fullmatch(r"this core: a million-addition Python loop takes ([\d.]+) ms at the start, "
                              r"([\d.]+) ms at the end \(quiet host: [\d-]+ ms\)", probe).groups()
    assert float(start) > 0 and float(end) > 0


def test_write_rewrites_the_sections_run_and_keeps_the_others(tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text("# old\n<!-- bench:engine -->\n<!-- row: engine | >= 0.90 | plain | 0.97 | kept | 2026-01-01 -->\n"
                    "## engine\n\nkept as it was\n\n<!-- /bench:engine -->\n"
                    "<!-- bench:review under load -->\n<!-- row: review under load | p95 < 2 s | x | 0.6 | kept too | "
                    "2026-01-01 -->\n## review under load\n\n<!-- /bench:review under load -->\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", "phone", "--write", str(page)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Benchmarks") and "# old" not in text
    assert "kept as it was" in text and "| engine | >= 0.90 | plain | 0.97 | kept | 2026-01-01 |" in text
    phone = text[text.index("<!-- bench:phone -->"):text.index("<!-- /bench:phone -->")]
    assert "```\n" in phone and "PhoneEnv.step" in phone and "(smoke run)" in phone
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert "| review under load | p95 < 2 s | x | 0.6 | kept too | 2026-01-01 |" in text  # names with spaces too
    assert [line.split(" | ")[0] for line in table] == ["| benchmark", "| phone", "| engine",
                                                        "| review under load"]  # BENCHES' order
