"""Launching the Streamlit review app as a child process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from rich.console import Console

import review_app
from warehouse import review_tables
from warehouse.errors import ConfigError
from warehouse.settings import Settings
from warehouse.store import Store


def streamlit_command(settings: Settings, port: int, config: Path | None = None, host: str = "127.0.0.1") -> list[str]:
    """The child's command line: the app gets the data dir and config file. The state URL
    goes through the environment (see :func:`child_env`), never the command line, where
    any user of the machine could read a password in it."""
    app_path = Path(next(iter(review_app.__path__))) / "app.py"
    args = [
        sys.executable, "-m", "streamlit", "run", str(app_path),
        "--server.address", host,
        "--server.port", str(port),
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        "--global.showWarningOnDirectExecution", "false",
        # no Deploy button, and no menu with Rerun and Clear cache: reviewers review, they do not develop
        "--client.toolbarMode", "minimal",
        "--logger.level", "error",
        "--", "--data-dir", settings.data_location(),
    ]
    if config is not None:  # the app reads the rest of its settings (overlap, ...) from the same file
        args += ["--config", str(Path(config).resolve())]
    return args


def child_env(settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    if settings.state_url:
        env["FLYWHEEL_STATE_URL"] = settings.state_url
    return env


def check_port_free(port: int) -> None:
    """ConfigError naming the port if something already listens on it.

    Streamlit would otherwise log the clash deep in its own output and exit; binding
    with SO_REUSEADDR (as Streamlit's server does) fails only on a live listener, not on
    connections of an earlier run still in TIME_WAIT."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError as exc:
            raise ConfigError(
                f"port {port} is already in use ({exc.strerror}); stop what listens there or pass --port"
            ) from None


def launch_review_app(
    settings: Settings, port: int, console: Console, config: Path | None = None, host: str = "127.0.0.1"
) -> int:
    """Run the review app until interrupted; return its exit code."""
    check_port_free(port)
    store = Store.from_settings(settings)  # fail early, in one line, on a bad data dir or URL
    with store.session() as s:
        if not review_tables.list_reviewers(session=s):
            console.print("No reviewer accounts yet; create one with: flywheel reviewer add NAME --role lead")
    shown = "localhost" if host in ("127.0.0.1", "localhost") else host
    console.print(f"Review app: http://{shown}:{port}  (Ctrl+C to stop)")
    proc = subprocess.Popen(
        streamlit_command(settings, port, config, host), stdout=subprocess.DEVNULL, env=child_env(settings)
    )
    try:
        code = proc.wait()
        if code != 0:
            console.print(f"error: the review app stopped with exit code {code}", markup=False, highlight=False)
        return code
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(timeout=10)
        return 0
