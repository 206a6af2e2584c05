"""The command line: help everywhere, and bad input as one line with a non-zero exit."""

from __future__ import annotations

import pytest
import typer

from flows.cli import app
from tests.conftest import cli_env, flywheel


def _commands() -> list[tuple[str, ...]]:
    root = typer.main.get_command(app)
    paths: list[tuple[str, ...]] = [()]

    def walk(cmd, prefix: tuple[str, ...]) -> None:
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                paths.append(prefix + (name,))
                walk(sub, prefix + (name,))

    walk(root, ())
    return paths


def test_every_command_has_help_text():
    root = typer.main.get_command(app)
    missing = []
    for path in _commands()[1:]:
        cmd = root
        for part in path:
            cmd = cmd.commands[part]
        if not (cmd.help or "").strip():
            missing.append(" ".join(path))
        for param in cmd.params:
            if param.param_type_name == "option" and not (param.help or "").strip() and param.name != "help":
                missing.append(f"{' '.join(path)} {param.opts[0]}")
    assert missing == []


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "flywheel")
def test_help_works_for_every_command(path, tmp_path):
    proc = flywheel(*path, "--help", env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Usage: flywheel" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    short = flywheel(*path, "-h", env=cli_env(None), cwd=tmp_path)  # the short form, as most tools take it
    assert (short.returncode, short.stdout) == (0, proc.stdout), short.stderr


def _one_line_error(proc, *needles: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_unknown_option_is_one_line(tmp_path):
    proc = flywheel("run", "--no-such-thing", env=cli_env(None), cwd=tmp_path)
    _one_line_error(proc, "--no-such-thing", "flywheel run --help")
    assert proc.returncode == 2


def test_unreadable_config_is_one_line(tmp_path):
    bad = tmp_path / "flywheel.toml"
    bad.write_text("round = [not toml")
    proc = flywheel("run", "--config", str(bad), env=cli_env(None), cwd=tmp_path)
    _one_line_error(proc, "flywheel.toml", "not valid TOML")
    missing = flywheel("status", "--config", str(tmp_path / "nope.toml"), env=cli_env(None), cwd=tmp_path)
    _one_line_error(missing, "nope.toml")
    assert not (tmp_path / "flywheel-data").exists()


def test_invalid_setting_names_the_setting(tmp_path):
    cfg = tmp_path / "flywheel.toml"
    cfg.write_text("[round]\nrollouts = 0\n")
    proc = flywheel("status", env=cli_env(None), cwd=tmp_path)
    _one_line_error(proc, "round.rollouts")


def test_data_dir_that_is_a_file_is_one_line(tmp_path):
    f = tmp_path / "data"
    f.write_text("not a directory")
    proc = flywheel("run", "--data-dir", str(f), env=cli_env(None), cwd=tmp_path)
    _one_line_error(proc, "not a directory")
    assert f.read_text() == "not a directory"


def test_state_url_that_cannot_connect_is_one_line(tmp_path):
    env = cli_env(None, FLYWHEEL_STATE_URL="postgresql+psycopg://postgres@127.0.0.1:1/nope")
    proc = flywheel("run", "--data-dir", str(tmp_path / "d"), env=env, cwd=tmp_path)
    _one_line_error(proc, "cannot open the state database")
    assert not (tmp_path / "d").exists()


def test_unknown_family_is_one_line(tmp_path):
    proc = flywheel("run", "--families", "F99", "--data-dir", str(tmp_path / "d"), env=cli_env(None), cwd=tmp_path)
    _one_line_error(proc, "F99")


def test_read_only_commands_on_a_missing_data_dir_create_nothing(tmp_path):
    for args in (["status"], ["plan"], ["export", "--verified"], ["eval"]):
        proc = flywheel(*args, "--data-dir", str(tmp_path / "typo"), env=cli_env(None), cwd=tmp_path)
        _one_line_error(proc, "no flywheel data in", "typo")
    assert not (tmp_path / "typo").exists() and not (tmp_path / "exports").exists()
