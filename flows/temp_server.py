"""Prefect's temporary server, stopped when the command that started it is gone, however it went.

A round run without a Prefect server (PREFECT_API_URL unset) gets a temporary one from Prefect: a
uvicorn child process that Prefect stops when the command exits. A command killed outright (SIGKILL,
the OOM killer, a lost session) cannot stop it, and the server (about 250 MB) would stay for good,
one more per killed nightly round. So the command starts it here, as Prefect would have (Prefect's
clients then use this one), with a small watchdog process beside it that stops it once the command
is gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_ALLOW_EPHEMERAL_MODE

# The watchdog: polls once a second whether its parent (the command) still lives; once it does not,
# stops the server (SIGTERM, then SIGKILL after 5 s), unless the server went first (a normal exit
# stops it). A pid is only signalled while it is still the server's (its command line says so): a
# pid the system gave to another process meanwhile is left alone.
WATCHDOG = """
import os, signal, sys, time
parent, server = int(sys.argv[1]), int(sys.argv[2])

def is_server():
    try:
        with open(f"/proc/{server}/cmdline", "rb") as fh:
            return b"prefect.server.api.server" in fh.read()
    except OSError:
        return False

while os.getppid() == parent and is_server():
    time.sleep(1)
for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
    if not is_server():
        break
    os.kill(server, sig)
    end = time.monotonic() + wait
    while is_server() and time.monotonic() < end:
        time.sleep(0.1)
"""

_watchdog: list[subprocess.Popen[Any]] = []  # kept so it is never collected while it runs


def start_guarded_server() -> None:
    """Start Prefect's temporary server with its watchdog, unless a server is configured (PREFECT_API_URL)
    or this machine has no /proc (the watchdog checks a pid is the server's there): then Prefect starts
    its own as it would. Raises Prefect's RuntimeError if the server does not come up."""
    if PREFECT_API_URL.value() or not PREFECT_SERVER_ALLOW_EPHEMERAL_MODE.value() or not os.path.isdir("/proc"):
        return
    # deferred: Prefect's server stack, only when a round starts its own
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the instance Prefect's own clients ask for
    if server.running:
        return
    server.start()
    if server.server_process is None:
        return
    _watchdog.append(subprocess.Popen(
        [sys.executable, "-c", WATCHDOG, str(os.getpid()), str(server.server_process.pid)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl+C to the command's group is not the watchdog's: it waits for the end
    ))
