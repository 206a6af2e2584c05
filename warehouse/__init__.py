"""The contract (pure models) and storage (Parquet shards, DuckDB, the state database)."""
