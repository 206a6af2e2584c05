"""What a stage's Prefect task receives and opens.

Tasks take ids (round, shard) and one small value, the settings as a plain dict, so
they can be sent to a thread, a process or a Dask worker on another machine. Each task
opens what it needs from that: the settings object, the store (cached per process, so
a worker running many shards opens the state database once), its run logger.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from warehouse.settings import Settings
from warehouse.store import Store

SettingsDoc = dict[str, Any]


def settings_doc(settings: Settings) -> SettingsDoc:
    """The settings as plain values for a task's arguments (secrets stay SecretStr: never printed)."""
    return settings.model_dump()


def workers(settings: Settings) -> int:
    """How many shards of a round run at once (``round.workers``, default the machine's cores)."""
    return settings.round.workers or os.cpu_count() or 1


def open_settings(doc: SettingsDoc) -> Settings:
    return Settings.model_validate(doc)


@lru_cache(maxsize=8)
def _store(data_dir: str, state_url: str | None) -> Store:
    return Store(Path(data_dir), state_url)


def open_store(settings: Settings) -> Store:
    """The store of ``settings`` (one per process and data directory)."""
    return _store(str(settings.data_dir), settings.state_url)


def run_log() -> logging.Logger | logging.LoggerAdapter:
    """Prefect's run logger inside a flow or task run (its lines reach the Prefect UI), else a plain logger."""
    try:
        from prefect import get_run_logger
        from prefect.exceptions import MissingContextError

        try:
            logger = get_run_logger()
        except MissingContextError:
            pass
        else:
            # The round's lines are INFO: they go to the Prefect API (its handler is on the run
            # loggers) and not on to the terminal, which shows progress bars and the summary.
            logger.logger.setLevel(logging.INFO)
            logger.logger.propagate = False
            return logger
    except ImportError:  # pragma: no cover - prefect is a dependency
        pass
    return logging.getLogger("flywheel")


def die_with_parent() -> None:
    """In a worker process of this machine's pool: end when the round's process ends, even by
    SIGKILL, so no orphan goes on writing after a kill (Linux; elsewhere a no-op)."""
    import multiprocessing

    if multiprocessing.parent_process() is None:
        return
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@contextmanager
def workers_report_here() -> Iterator[None]:
    """Tasks submitted inside reach the Prefect API this flow run reports to.

    With no Prefect server configured, that API is this process's temporary server; a
    worker process (a process pool, a Dask worker) would otherwise start a temporary server
    of its own on the same database (slow, and its events fail to land)."""
    from prefect.context import FlowRunContext
    from prefect.settings import PREFECT_API_URL, temporary_settings

    ctx = FlowRunContext.get()
    if PREFECT_API_URL.value() or ctx is None:
        yield
        return
    with temporary_settings(updates={PREFECT_API_URL: str(ctx.client.api_url)}):
        yield
