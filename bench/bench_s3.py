"""Reading an s3:// warehouse: the local read cache against DuckDB reading S3 directly.

    python bench/bench_s3.py             # 200 shards of 2,000 step rows each
    python bench/bench_s3.py --quick     # 10 shards, a smoke run

Shards are committed through the Store into a bucket of moto's S3 server (its own process,
on this machine; every request is signed and checked). Then one query over all of them, three
ways, side by side: DuckDB scanning the shards straight from S3 as a pyarrow dataset on
pyarrow's S3 file system; the Store's way with an empty cache (fetch every
shard in parallel, check its checksum, query the local copies); and again with the cache
warm (what every later query, page render and export costs). Wall and CPU seconds of this
process (moto's server runs in another); the machine is shared, so ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERY = "SELECT count(*), count(DISTINCT episode_id), sum(cost_prompt_tokens) FROM steps"


def _steps(shard: int, rows: int):
    import pyarrow as pa

    from warehouse.schemas import TABLES

    schema = TABLES["steps"].schema
    cols = {}
    for f in schema:
        if f.name == "episode_id":
            cols[f.name] = [f"e{shard:05d}-{i // 20:04d}" for i in range(rows)]
        elif f.name == "index":
            cols[f.name] = [i % 20 for i in range(rows)]
        elif pa.types.is_string(f.type):
            cols[f.name] = [f"{f.name} {shard} {i} " * 3 for i in range(rows)]
        elif pa.types.is_integer(f.type):
            cols[f.name] = [i % 97 for i in range(rows)]
        elif pa.types.is_floating(f.type):
            cols[f.name] = [i / 7 for i in range(rows)]
        elif pa.types.is_boolean(f.type):
            cols[f.name] = [i % 3 == 0 for i in range(rows)]
        else:
            cols[f.name] = [None] * rows
    return pa.table(cols, schema=schema)


def _timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - w0, time.process_time() - c0


def _direct(objects, recorded) -> tuple:
    """DuckDB over the bucket itself: the shards as one pyarrow dataset on pyarrow's S3 file
    system, scanned by DuckDB (ranged reads straight from S3, nothing kept locally).

    Not DuckDB's fsspec bridge: handing it pyarrow's file system through fsspec gave a wrong
    sum now and then (file handles shared by DuckDB's reader threads), and a baseline that
    answers wrongly measures nothing."""
    import duckdb
    import pyarrow.dataset as ds

    dataset = ds.dataset([objects._key(path) for path, _ in recorded["steps"]],
                         filesystem=objects.fs, format="parquet")
    con = duckdb.connect()
    con.register("steps", dataset)
    return con.execute(QUERY).fetchone()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=200)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="10 shards")
    args = parser.parse_args()
    shards = 10 if args.quick else args.shards
    root = Path(tempfile.mkdtemp(prefix="bench-s3-"))

    from tests import s3_server as moto
    from tests.conftest import free_port, wait_for
    from warehouse.settings import S3Settings
    from warehouse.store import Store

    server = moto.start(free_port(), root / "moto.log", wait_for)
    try:
        bucket = server.new_bucket()
        s3 = S3Settings(endpoint_url=server.endpoint, access_key=server.access_key, secret_key=server.secret_key)
        store = Store(f"s3://{bucket}/bench", f"sqlite:///{root / 'state.db'}", s3=s3, local_dir=root / "local")
        _, write_s, _ = _timed(lambda: [store.commit_tables("r0001", f"s{i:05d}", {"steps": _steps(i, args.rows)})
                                        for i in range(shards)])
        recorded = store.recorded()
        direct, direct_s, direct_cpu = _timed(lambda: _direct(store.objects, recorded))
        cold, cold_s, cold_cpu = _timed(lambda: store.duck().execute(QUERY).fetchone())
        warm, warm_s, warm_cpu = _timed(lambda: store.duck().execute(QUERY).fetchone())
        assert direct == cold == warm, (direct, cold, warm)
        cache_mb = sum(p.stat().st_size for p in (root / "local").rglob("*.parquet")) / 1e6
        print(f"{shards} shards of {args.rows} step rows ({cache_mb:.1f} MB) in moto's S3; committed in {write_s:.1f} s")
        print(f"{'read':<34} {'wall s':>8} {'cpu s':>8} {'ratio':>7}")
        for name, wall, cpu in (("DuckDB straight from S3 (pyarrow)", direct_s, direct_cpu),
                                ("read cache, empty (fetch + query)", cold_s, cold_cpu),
                                ("read cache, warm", warm_s, warm_cpu)):
            print(f"{name:<34} {wall:>8.2f} {cpu:>8.2f} {wall / direct_s:>7.2f}")
        print(f"empty cache / straight from S3: {cold_s / direct_s:.2f}; warm cache / straight from S3: "
              f"{warm_s / direct_s:.3f} (wall)")
    finally:
        moto.stop(server.pid)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
