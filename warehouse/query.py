"""DuckDB in-process views over the recorded shards.

Each connection is in-memory: no process holds a DuckDB file lock, so a reviewer's
browser session and a running flow never trip on each other. Only shards recorded
in the state database are read; orphans and temporary files are invisible.
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pyarrow as pa

from warehouse.schemas import TABLES, TableSpec, from_row


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def connect(files_by_table: dict[str, list[str]]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per warehouse table over its local shard files
    (see Store.readable: a bucket's shards are read from their local copies)."""
    con = duckdb.connect(":memory:")
    # DuckDB's allocator keeps what a large query freed (a million episodes' frame: about a GiB) unless
    # a background thread hands it back to the system (each connection here is a database of its own)
    con.execute("SET allocator_background_threads = true")
    for name, spec in TABLES.items():
        paths = files_by_table.get(name, [])
        if paths:
            files = "[" + ", ".join(_sql_str(p) for p in paths) + "]"
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({files}, union_by_name=true)")
        else:
            # A real (empty) table, not a registered Arrow object: cursors cannot see those.
            empty = spec.schema.empty_table()
            con.register(f"_{name}_empty", empty)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM _{name}_empty")
            con.unregister(f"_{name}_empty")
    return con


def records(table: pa.Table, name: str) -> list:
    """The records of an Arrow table of warehouse table ``name``'s schema, in its row order."""
    spec: TableSpec = TABLES[name]
    return [from_row(spec, row) for row in table.to_pylist()]


def iter_records(
    con: duckdb.DuckDBPyConnection, table: str, where: str = "", params: list | None = None, batch: int = 2000
) -> Iterator:
    """Stream records of ``table`` (optionally filtered), ``batch`` rows at a time."""
    spec: TableSpec = TABLES[table]
    order = ", ".join(f'"{k}"' for k in spec.key)
    sql = f"SELECT * FROM {table} {('WHERE ' + where) if where else ''} ORDER BY {order}"
    # A cursor of its own, so a caller can query the connection while this streams.
    reader = con.cursor().sql(sql, params=params or None).to_arrow_reader(batch)
    for rb in reader:
        for row in rb.to_pylist():
            yield from_row(spec, row)
