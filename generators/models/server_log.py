"""Where the model servers we start on this machine write their logs, so an engine can quote one when
the server fails (the test server's llama.cpp launcher, ``scripts/llama-server.sh serve``)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse


def logs_dir() -> Path:
    """Where the servers we start (the tests' llama.cpp launcher, ``scripts/llama-server.sh serve``) write their logs."""
    return Path.home() / ".cache" / "flywheel" / "servers"


def log_path(port: int) -> Path:
    """The log of the llama.cpp server we started last on loopback port ``port``."""
    return logs_dir() / f"llama-{port}.log"


def log_for(base_url: str | None) -> Path | None:
    """The log of the server at ``base_url`` when it is one we started on this machine, else None."""
    url = urlparse(base_url or "")
    try:
        port = url.port
    except ValueError:
        return None
    if url.hostname not in ("127.0.0.1", "localhost", "::1") or not port:
        return None
    path = log_path(port)
    return path if path.exists() else None
