"""Peak memory of ``flywheel import`` against the file's size: flat within a constant (issue 33).

An import reads its file twice, a record at a time (a JSON Lines line, or an item of a one-document file's
list: here τ²-bench results, whose ``simulations`` are read one at a time): the first pass checks every
record and keeps what the second needs (ids, task ids, tool names, inferred schemas); the second writes the
episodes a batch of shards at a time. Each size is imported in a fresh process (read, check and write;
curation is the round's own stage and is left out), which reports its peak resident memory.

    python bench/bench_import_memory.py            # 10, 20 and 40 MB, JSON Lines and one .json document
    python bench/bench_import_memory.py --quick    # 1, 2 and 4 MB (a smoke test)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHILD = """
import resource, sys
from collections.abc import Callable, Iterator
from pathlib import Path
from flows.stages.importing import commit_import, prepare_import
from warehouse.store import Store
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
store = Store(Path(sys.argv[2]))
prepared = prepare_import(Path(sys.argv[1]), sys.argv[3])
with store.run_lock():
    store.clean_orphans()
    commit_import(store, prepared)
print(base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, prepared.summary.imported)
"""


def _conversations(megabytes: float) -> Iterator[str]:
    """Airline conversations (tests.data.airline) as JSON text, each its own, up to ``megabytes`` in all."""
    from tests.data.airline import conversation

    size, n = 0, 0
    while size < megabytes * 2**20:
        rec = conversation(n % 200, seed=n // 200)
        rec["task"] = {"task_id": f"airline-{n}"}
        text = json.dumps(rec, ensure_ascii=False)
        size += len(text.encode()) + 1
        n += 1
        yield text


def write_file(path: Path, megabytes: float) -> int:
    """Airline conversations as JSON Lines, up to ``megabytes``; how many."""
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for n, text in enumerate(_conversations(megabytes), start=1):
            fh.write(text + "\n")
    return n


def write_tau2(path: Path, megabytes: float) -> int:
    """τ²-bench results (tests/data/tau2's, pretty-printed) whose simulations are repeated, each its own task,
    up to ``megabytes``: one JSON document; how many simulations."""
    results = json.loads((ROOT / "tests" / "data" / "tau2" / "airline_results.json").read_text())
    sims = [s for s in results.pop("simulations") if s["termination_reason"] != "agent_error"]  # not the malformed one
    head = json.dumps(results, indent=1)[:-2]
    size, n = len(head), 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write(head + ',\n "simulations": [\n')
        while size < megabytes * 2**20:
            text = json.dumps({**sims[n % len(sims)], "task_id": f"t{n}"}, indent=1)
            fh.write((",\n" if n else "") + text)
            size += len(text) + 2
            n += 1
        fh.write("\n ]\n}\n")
    return n


FILES: dict[str, tuple[str, str, Callable[[Path, float], int]]] = {  # kind -> (format, suffix, writer)
    "JSON Lines": ("openai-chat", "jsonl", write_file),
    "one .json document": ("tau2", "json", write_tau2),
}


def peak(path: Path, data: Path, fmt: str = "openai-chat") -> tuple[float, float, int]:
    """(peak MB of the import's process, MB it held before reading, episodes imported)."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(data), fmt], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    base, top, imported = int(out[0]), int(out[1]), int(out[2])
    return top / 1024, base / 1024, imported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small files (a smoke test)")
    args = parser.parse_args()
    sizes = (1, 2, 4) if args.quick else (10, 20, 40)
    growths = {}
    for kind, (fmt, suffix, write) in FILES.items():
        rows = []
        print(f"{kind} ({fmt})", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            for mb in sizes:
                path = Path(tmp) / f"import-{mb}.{suffix}"
                n = write(path, mb)
                top, base, imported = peak(path, Path(tmp) / f"data-{mb}", fmt)
                assert imported == n, (imported, n)
                rows.append((mb, n, top, top - base))
                print(f"{mb:>5} MB  {n:>7} conversations  peak {top:7.1f} MB  above start {top - base:6.1f} MB",
                      flush=True)
        small, large = rows[0], rows[-1]
        growths[kind] = (large[3] - small[3]) / max(small[3], 1.0)
        print(f"{kind}: {small[3]:.0f} MB above start at {small[0]} MB, {large[3]:.0f} MB at {large[0]} MB", flush=True)
    kind = max(growths, key=growths.get)
    print(f"import memory above start, file x{sizes[-1] / sizes[0]:.0f}: growth ratio (large - small) / small: "
          f"{growths[kind]:.2f} ({kind}; {', '.join(f'{k} {g:.2f}' for k, g in growths.items())}; flat: well under "
          f"{sizes[-1] / sizes[0] - 1:.0f}, the file's own growth)")


if __name__ == "__main__":
    main()
