"""What the nightly deployment hands its rounds, checked without a Prefect server: the parameters
``flywheel deploy`` and ``flywheel serve`` register (tests/test_schedule.py runs them for real)."""

from __future__ import annotations

import os

import pytest

from flows.cli import main


@pytest.fixture
def registered(monkeypatch) -> dict[str, dict]:
    """The parameters each command registers, by command, captured instead of sent to a server."""
    from prefect.deployments.runner import RunnerDeployment

    from flows.schedule import scheduled_round

    for name in [k for k in os.environ if k.startswith("FLYWHEEL_")]:
        monkeypatch.delenv(name)
    got: dict[str, dict] = {}
    monkeypatch.setattr("flows.schedule_cmd._ready", lambda *args, **kwargs: None)  # no server, no checks
    monkeypatch.setattr("flows.schedule_cmd.ensure_work_pool", lambda name: False)
    monkeypatch.setattr(RunnerDeployment, "apply", lambda self, **kwargs: got.update(deploy=dict(self.parameters)))
    monkeypatch.setattr(scheduled_round, "serve", lambda **kwargs: got.update(serve=dict(kwargs["parameters"])))
    return got


def test_the_config_file_read_is_recorded_as_an_absolute_path(tmp_path, monkeypatch, registered):
    # the team section's way: flywheel.toml in the working directory, no --config
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flywheel.toml").write_text('data_dir = "data"\n[round]\nepisodes = 8\n')
    main(["deploy", "--pool", "night"])
    main(["serve"])
    here = tmp_path.resolve()
    for command in ("deploy", "serve"):
        assert registered[command]["config"] == str(here / "flywheel.toml"), command
        assert registered[command]["data_dir"] == str(here / "data"), command
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "night.toml").write_text("[round]\nepisodes = 4\n")
    main(["deploy", "--pool", "night", "--config", "team/night.toml"])  # a relative --config, as typed
    assert registered["deploy"]["config"] == str(here / "team" / "night.toml")
    (tmp_path / "flywheel.toml").unlink()
    main(["deploy", "--pool", "night"])  # no config file at all: none to record
    assert registered["deploy"]["config"] is None
