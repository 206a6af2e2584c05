"""Riding through a short cut of the state database (PostgreSQL restarting, a network blip).

Two layers, both bounded by one budget in seconds (``state_reconnect_s``):

- a new connection that the server refuses or drops while it is away is tried again, with
  a growing pause, until the budget is spent (:func:`reconnect_patiently`); the pool's
  pre-ping finds the connections the cut killed and opens new ones this way;
- a unit of the warehouse's work that lost its connection midway (its transaction rolled
  back by the server) is run again whole (:func:`retried`): every such unit is a repeatable
  write (a shard is put whole under a name from its content; recording it is a merge).

Past the budget the error stands: one line naming the database and saying to rerun. Errors
that are not a lost connection (a wrong password, a missing database, a full disk) are never
retried. Only a database reached over the network is retried; a SQLite file is not.
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event

from warehouse.errors import StateLost

RECONNECT_S = 10.0  # default budget: longer than a PostgreSQL restart, short enough to fail fast
FIRST_PAUSE_S = 0.05
LONGEST_PAUSE_S = 1.0

# words of a server that is away for now (refused, restarting, the connection cut), not of a mistake
_AWAY = ("connection refused", "server closed the connection", "connection reset", "starting up", "shutting down",
         "terminating connection", "could not receive data", "consuming input failed", "connection timed out",
         "timeout expired", "no connection to the server", "in recovery mode", "broken pipe")


def is_away(exc: BaseException) -> bool:
    """True when ``exc`` says the server is unreachable for now (not that we asked something wrong)."""
    text = str(getattr(exc, "orig", None) or exc).lower()
    return any(word in text for word in _AWAY)


class Outage:
    """When the state database was first found away, until a connection succeeds again: the one
    clock that both layers spend the budget on (a cut is waited for once, not once per layer)."""

    def __init__(self) -> None:
        self.since: float | None = None

    def pauses(self, budget_s: float) -> Iterator[float]:
        """Pauses (seconds) to sleep between tries, doubling, until the budget since the outage began
        would be passed."""
        if self.since is None:
            self.since = time.monotonic()
        since, pause = self.since, FIRST_PAUSE_S
        while time.monotonic() + pause <= since + budget_s:
            yield pause
            pause = min(pause * 2, LONGEST_PAUSE_S)

    def over(self) -> None:
        self.since = None


_OUTAGES: weakref.WeakKeyDictionary[sa.Engine, Outage] = weakref.WeakKeyDictionary()


def outage_of(engine: sa.Engine) -> Outage:
    """The outage clock of ``engine`` (one per engine, shared by its threads)."""
    return _OUTAGES.setdefault(engine, Outage())


def reconnect_patiently(engine: sa.Engine, budget_s: float) -> None:
    """Make ``engine`` try a refused or dropped new connection again for up to ``budget_s`` seconds."""
    if engine.dialect.name == "sqlite" or budget_s <= 0:
        return

    outage = outage_of(engine)

    @event.listens_for(engine, "do_connect")
    def _connect(dialect, _record, cargs, cparams):
        pauses = None
        while True:
            try:
                connection = dialect.connect(*cargs, **cparams)
                outage.over()
                return connection
            except dialect.loaded_dbapi.OperationalError as exc:
                if not is_away(exc):  # a wrong password or database name: not worth waiting for
                    raise
                pauses = pauses or outage.pauses(budget_s)
                pause = next(pauses, None)
                if pause is None:
                    raise
                time.sleep(pause)


F = TypeVar("F", bound=Callable[..., Any])


def retried(method: F) -> F:
    """Run a repeatable unit of work of a store (``self.reconnect_s`` its budget) again when it lost
    its connection to the state database, until the budget is spent."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        pauses = None
        while True:
            try:
                return method(self, *args, **kwargs)
            except StateLost:
                pauses = pauses or outage_of(self.engine).pauses(self.reconnect_s)
                pause = next(pauses, None)
                if pause is None:
                    raise
                time.sleep(pause)

    return run  # type: ignore[return-value]
