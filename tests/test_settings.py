"""Settings: defaults < flywheel.toml < FLYWHEEL_* variables < explicit options."""

from __future__ import annotations

import pytest

from warehouse.errors import ConfigError
from warehouse.settings import load_settings


def test_environment_beats_the_file_even_with_a_default_value(tmp_path, monkeypatch):
    cfg = tmp_path / "flywheel.toml"
    cfg.write_text("[round]\nadaptive = false\nepisodes = 50\nrollouts = 3\n")
    monkeypatch.setenv("FLYWHEEL_ROUND__ADAPTIVE", "true")  # true is also the default
    monkeypatch.setenv("FLYWHEEL_ROUND__EPISODES", "100")
    s = load_settings(cfg)
    assert (s.round.adaptive, s.round.episodes, s.round.rollouts) == (True, 100, 3)
    assert load_settings(cfg, round={"episodes": 7}).round.episodes == 7


def test_the_file_is_read_from_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flywheel.toml").write_text('data_dir = "elsewhere"\n')
    assert str(load_settings().data_dir) == "elsewhere"


def test_unknown_and_invalid_settings_name_the_setting(tmp_path):
    cfg = tmp_path / "flywheel.toml"
    cfg.write_text("[round]\nepisodez = 3\n")
    with pytest.raises(ConfigError, match=r"round\.episodez"):
        load_settings(cfg)
    cfg.write_text('[scripted.error_rates]\ntool_use = 2\n')
    with pytest.raises(ConfigError, match="between 0 and 1"):
        load_settings(cfg)
