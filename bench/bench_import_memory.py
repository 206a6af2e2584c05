"""Peak memory of ``flywheel import`` against the file's size: flat within a constant (issue 33).

An import reads a JSON Lines file twice, a line at a time: the first pass checks every record and
keeps what the second needs (ids, task ids, tool names, inferred schemas); the second writes the
episodes a batch of shards at a time. Each size is imported in a fresh process (read, check and
write; curation is the round's own stage and is left out), which reports its peak resident memory.

    python bench/bench_import_memory.py            # 10, 20 and 40 MB
    python bench/bench_import_memory.py --quick    # 1, 2 and 4 MB (a smoke test)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHILD = """
import resource, sys
from pathlib import Path
from flows.import_cmd import commit_import, prepare_import
from warehouse.store import Store
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
store = Store(Path(sys.argv[2]))
prepared = prepare_import(Path(sys.argv[1]), "openai-chat")
with store.run_lock():
    store.clean_orphans()
    commit_import(store, prepared)
print(base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, prepared.summary.imported)
"""


def write_file(path: Path, megabytes: float) -> int:
    """Airline conversations (tests.data.airline) as JSON Lines, each its own, up to ``megabytes``."""
    from tests.data.airline import conversation

    size, n = 0, 0
    with path.open("w", encoding="utf-8") as fh:
        while size < megabytes * 2**20:
            rec = conversation(n % 200, seed=n // 200)
            rec["task"] = {"task_id": f"airline-{n}"}
            line = json.dumps(rec, ensure_ascii=False) + "\n"
            fh.write(line)
            size += len(line.encode())
            n += 1
    return n


def peak(path: Path, data: Path) -> tuple[float, float, int]:
    """(peak MB of the import's process, MB it held before reading, episodes imported)."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(data)], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    base, top, imported = int(out[0]), int(out[1]), int(out[2])
    return top / 1024, base / 1024, imported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small files (a smoke test)")
    args = parser.parse_args()
    sizes = (1, 2, 4) if args.quick else (10, 20, 40)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in sizes:
            path = Path(tmp) / f"airline-{mb}.jsonl"
            n = write_file(path, mb)
            top, base, imported = peak(path, Path(tmp) / f"data-{mb}")
            assert imported == n, (imported, n)
            rows.append((mb, n, top, top - base))
            print(f"{mb:>5} MB  {n:>7} conversations  peak {top:7.1f} MB  above start {top - base:6.1f} MB", flush=True)
    small, large = rows[0], rows[-1]
    growth = (large[3] - small[3]) / max(small[3], 1.0)
    print(f"import memory above start: {small[3]:.0f} MB at {small[0]} MB, {large[3]:.0f} MB at {large[0]} MB "
          f"(file x{large[0] / small[0]:.0f}); growth ratio (large - small) / small: {growth:.2f} (flat: well under "
          f"{large[0] / small[0] - 1:.0f}, the file's own growth)")


if __name__ == "__main__":
    main()
