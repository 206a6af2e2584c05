"""Prefect configured for this project: its own home, quiet, no telemetry.

Set before Prefect is imported (Prefect reads its settings at import time). A user's
own PREFECT_* variables win: we only fill in what they did not set.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path


def quiet_prefect() -> None:
    """Prefect's settings that need no data directory: quiet, no telemetry. Set before Prefect is
    imported, by every command (any of them may import it)."""
    defaults = {
        # Prefect's client telemetry: in a terminal it prints a notice on first import and sends
        # events to Prefect's servers; ours sends nothing to third parties and prints only our own
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_LOGGING_SERVER_LEVEL": "WARNING",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_LOGGING_LOG_PRINTS": "false",
        # Run logs still reach the Prefect API (and its UI); the terminal gets our own summary.
        "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
        "PREFECT_SERVER_UI_ENABLED": "false",
        "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        # a local Dask cluster (round.runner = "dask") and its worker processes: quiet (a shard's
        # failure comes back through its task; a worker's heartbeat racing the cluster's close is noise)
        "DASK_LOGGING__DISTRIBUTED": "critical",
        "DASK_DISTRIBUTED__WORKER__DAEMON": "true",
        # a round stopped at once (Ctrl+C, a kill) leaves its worker pool's semaphores to
        # multiprocessing's resource tracker, which removes them; its warning is not for users
        "PYTHONWARNINGS": "ignore::UserWarning:multiprocessing.resource_tracker",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", module="prefect")
    # Shutdown-time chatter (telemetry, task_run_recorder) is not for users' eyes.
    for name in ("prefect", "prefect.server", "uvicorn", "httpx", "asyncio", "distributed"):
        logging.getLogger(name).setLevel(logging.ERROR)


def configure_prefect(local_dir: Path) -> None:
    """Prefect's defaults for this project (see :func:`quiet_prefect`); its home (when PREFECT_HOME is
    unset) is ``local_dir/prefect`` (the data directory, or the local directory of an s3:// one: see
    Settings.local_root)."""
    home = (local_dir / "prefect").resolve()
    if "PREFECT_HOME" not in os.environ:
        # Prefect's temporary server cannot start without its home (it fails slowly and loudly).
        home.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_HOME", str(home))
    quiet_prefect()
