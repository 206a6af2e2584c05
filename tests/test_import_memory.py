"""A one-document import's memory does not grow with its file (issue 33): a 40 MB JSON list of conversations
and 40 MB of τ²-bench results (one object whose simulations are the list) are read an item at a time. Parsed
whole, either takes over 150 MB above the process's start; read an item at a time, a few MB. Peak resident
memory of a fresh process, read with getrusage (bench/bench_import_memory.py prints it against the size)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench_import_memory as bench  # noqa: E402

CHILD = """
import resource, sys
from pathlib import Path
from flows.stages.importing import prepare_import
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
prepared = prepare_import(Path(sys.argv[1]), sys.argv[2])
print(base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, prepared.summary.records)
"""


def _json_list(path, megabytes):
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[\n")
        for n, text in enumerate(bench._conversations(megabytes), start=1):
            fh.write((",\n" if n > 1 else "") + text)
        fh.write("\n]\n")
    return n


@pytest.mark.parametrize(("fmt", "write"), [("openai-chat", _json_list), ("tau2", bench.write_tau2)])
def test_reading_a_40_mb_json_document_holds_an_item_not_the_file(tmp_path, fmt, write):
    path = tmp_path / "big.json"
    n = write(path, 40)
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), fmt], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    base, top, records = (int(x) for x in out.stdout.split())
    assert records == n
    assert (top - base) / 1024 < 60, f"{(top - base) / 1024:.0f} MB above the start for a 40 MB file"
