"""Launching the Streamlit review app as a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rich.console import Console

import review_app
from warehouse import review_tables
from warehouse.settings import Settings
from warehouse.store import Store


def streamlit_command(settings: Settings, port: int, config: Path | None = None) -> list[str]:
    """The child's command line: the app gets the data dir, state URL and config file."""
    app_path = Path(next(iter(review_app.__path__))) / "app.py"
    args = [
        sys.executable, "-m", "streamlit", "run", str(app_path),
        "--server.port", str(port),
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        "--global.showWarningOnDirectExecution", "false",
        "--", "--data-dir", str(Path(settings.data_dir).resolve()),
    ]
    if settings.state_url:
        args += ["--state-url", settings.state_url]
    if config is not None:  # the app reads the rest of its settings (overlap, ...) from the same file
        args += ["--config", str(Path(config).resolve())]
    return args


def launch_review_app(settings: Settings, port: int, console: Console, config: Path | None = None) -> int:
    """Run the review app until interrupted; return its exit code."""
    store = Store(settings.data_dir, settings.state_url)  # fail early, in one line, on a bad data dir or URL
    with store.session() as s:
        if not review_tables.list_reviewers(session=s):
            console.print("No reviewer accounts yet; create one with: flywheel reviewer add NAME --role lead")
    console.print(f"Review app: http://localhost:{port}  (Ctrl+C to stop)")
    proc = subprocess.Popen(streamlit_command(settings, port, config), stdout=subprocess.DEVNULL)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(timeout=10)
        return 0
