"""What every ``flywheel`` command shares: its consoles, the options it repeats and the
settings and store those options open.

The options are Annotated aliases rather than a callback on the app, so that they follow
the sub-command as they always have (``flywheel status --data-dir X``); a callback's
options would have to come before it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from warehouse.settings import Settings, load_settings

if TYPE_CHECKING:
    from warehouse.store import Store

out = Console()
if not out.is_terminal:  # piped or captured: tables 160 wide, and a line is never broken (a long path)
    out = Console(width=160, soft_wrap=True)
err = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 400)


def _config_file(value: str) -> Path:
    """--config's value as a path; an empty one is refused (a Path of '' would read as '.')."""
    if not value.strip():
        raise typer.BadParameter("an empty path names no settings file")
    return Path(value)


ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", parser=_config_file,
                              help="Settings file (default: ./flywheel.toml if present).")
]
DataDirOpt = Annotated[
    str | None, typer.Option("--data-dir", help="Data directory, or s3://bucket/prefix (default: ./flywheel-data or "
                                                "FLYWHEEL_DATA_DIR).")
]
StateUrlOpt = Annotated[
    str | None, typer.Option("--state-url", help="State database URL (default: SQLite in the data directory).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON (see the docs, JSON output).")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")]
PasswordStdinOpt = Annotated[
    bool, typer.Option("--password-stdin", help="Read the password from the first line of stdin instead of a prompt.")
]


def cli_settings(config: Path | None, data_dir: str | None, state_url: str | None, **extra: Any) -> Settings:
    """The settings of one command: the file, then FLYWHEEL_* variables, then these options."""
    return load_settings(config, data_dir=data_dir, state_url=state_url, **extra)


def open_store(settings: Settings, *, create: bool = True) -> Store:
    """The store the settings name; with ``create=False`` a data directory that does not exist is refused."""
    from warehouse.store import Store  # deferred: DuckDB, SQLAlchemy and Arrow, which --help never needs

    return Store.from_settings(settings, create=create)


def existing_store(config: Path | None, data_dir: str | None, state_url: str | None) -> tuple[Settings, Store]:
    """Settings and the store of a data directory that must already exist (nothing is created)."""
    settings = cli_settings(config, data_dir, state_url)
    return settings, open_store(settings, create=False)


def print_json(data: Any) -> None:
    """One JSON document on stdout, nothing else (no colour, no wrapping)."""
    sys.stdout.write(json.dumps(data, default=str) + "\n")
