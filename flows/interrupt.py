"""Ctrl+C during a round: stop at once, say how to go on, exit 130.

Every write of a round is atomic and a rerun finishes what was left (see the crash
tests), so stopping on the spot is as safe as a kill. Letting the interrupt unwind
through Prefect instead is slow and loud: the interrupt also reaches Prefect's
temporary server, and the client then retries against a server that is gone.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys

MESSAGE = "interrupted; rerun the same command to continue where it stopped\n"


def _stop_now(signum, frame) -> None:  # noqa: ARG001  (signal handler signature)
    try:
        for child in multiprocessing.active_children():  # shard workers stop with the round
            child.kill()
        sys.stderr.write("\n" + MESSAGE)
        sys.stderr.flush()
    finally:
        os._exit(128 + signal.SIGINT)


_armed = False


def stop_at_once_on_interrupt() -> None:
    """From here on, Ctrl+C (or SIGTERM) ends the process immediately with exit 130."""
    global _armed
    _armed = True
    signal.signal(signal.SIGINT, _stop_now)
    signal.signal(signal.SIGTERM, _stop_now)


def keep_stopping_at_once() -> None:
    """Inside a Prefect flow, when :func:`stop_at_once_on_interrupt` was asked for: Prefect's flow engine
    puts its own SIGTERM handler in place for the run, which reports the run crashed to its API first.
    A kill of the whole process group (a scheduler stopping the job) has stopped the temporary API
    server too, and that report retried for minutes, printing Prefect's errors. Ours again, until
    the flow ends and Prefect puts back what it found."""
    if _armed:
        try:
            signal.signal(signal.SIGTERM, _stop_now)
        except ValueError:  # not the main thread: signals are the main thread's
            pass
