"""What a stage's Prefect task receives and opens.

Tasks take ids (round, shard) and one small value, the settings as a plain dict, so
they can be sent to a thread, a process or a Dask worker on another machine. Each task
opens what it needs from that: the settings object, the store (cached per process, so
a worker running many shards opens the state database once), its run logger.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prefect import get_run_logger
from prefect.context import FlowRunContext
from prefect.exceptions import MissingContextError
from prefect.settings import PREFECT_API_URL, temporary_settings

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


_STORES: dict[str, Store] = {}
_STORES_LOCK = threading.Lock()


def open_store(settings: Settings) -> Store:
    """The store of ``settings`` (one per process, data directory, state database and storage settings)."""
    where = settings.model_dump(include={"data_dir", "state_url", "s3", "local_dir"})
    for name in ("access_key", "secret_key"):  # the keys themselves, not their masks: other keys, another store
        if getattr(settings.s3, name) is not None:
            where["s3"][name] = getattr(settings.s3, name).get_secret_value()
    key = repr(where)
    with _STORES_LOCK:
        if key not in _STORES:
            _STORES[key] = Store.from_settings(settings)
        return _STORES[key]


def run_log() -> logging.Logger | logging.LoggerAdapter:
    """Prefect's run logger inside a flow or task run (its lines reach the Prefect UI), else a plain logger."""
    try:
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
    if multiprocessing.parent_process() is None:
        return
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@contextmanager
def workers_report_here() -> Iterator[None]:
    """Tasks submitted inside reach the Prefect API this flow run reports to.

    With no Prefect server configured, that API is this process's temporary server; a
    worker process (a process pool, a Dask worker) would otherwise start a temporary server
    of its own on the same database (slow, and its events fail to land)."""
    ctx = FlowRunContext.get()
    if PREFECT_API_URL.value() or ctx is None:
        yield
        return
    with temporary_settings(updates={PREFECT_API_URL: str(ctx.client.api_url)}):
        yield
