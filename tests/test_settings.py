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
    assert load_settings().data_dir == tmp_path.resolve() / "elsewhere"


def test_a_relative_data_dir_is_made_absolute_where_the_settings_load(tmp_path, monkeypatch):
    """A task gets the settings as plain values and runs them in another process, maybe on a Dask
    worker in a working directory of its own: it must find the same data directory there."""
    from flows.stages.context import open_settings, settings_doc

    here, worker = tmp_path / "here", tmp_path / "worker"
    here.mkdir(), worker.mkdir()
    monkeypatch.chdir(here)
    doc = settings_doc(load_settings(data_dir="data", local_dir="cache"))
    monkeypatch.chdir(worker)
    there = open_settings(doc)
    assert (there.data_dir, there.local_dir) == (here.resolve() / "data", here.resolve() / "cache")
    assert load_settings().data_dir == worker.resolve() / "flywheel-data"  # the default, too
    assert open_settings(settings_doc(load_settings(data_dir="s3://team-bucket/x"))).data_dir == "s3://team-bucket/x"


def test_unknown_and_invalid_settings_name_the_setting(tmp_path):
    cfg = tmp_path / "flywheel.toml"
    cfg.write_text("[round]\nepisodez = 3\n")
    with pytest.raises(ConfigError, match=r"round\.episodez"):
        load_settings(cfg)
    cfg.write_text('[scripted.error_rates]\ntool_use = 2\n')
    with pytest.raises(ConfigError, match="between 0 and 1"):
        load_settings(cfg)


def test_a_bad_value_names_where_it_came_from(tmp_path, monkeypatch):
    """The option, the variable (the nested one or its JSON parent) or the file that gave the bad value."""
    cfg = tmp_path / "flywheel.toml"
    cfg.write_text('data_dir = 5\n[round]\nepisodes = 40\n')

    def message(**over) -> str:
        with pytest.raises(ConfigError) as err:
            load_settings(cfg, **over)
        return str(err.value)

    assert message().startswith(f"config {cfg}: data_dir: ")  # not data_dir.constrained-str (pydantic's own name)
    cfg.write_text('[round]\nepisodes = 40\n')
    assert message(policy="bogus").startswith("--policy: policy: Input should be")
    assert message(round={"episodes": 0}).startswith("--episodes: round.episodes: ")
    monkeypatch.setenv("FLYWHEEL_ROUND__EPISODES", "abc")  # beats the file's 40, and is what is wrong
    assert message().startswith("FLYWHEEL_ROUND__EPISODES: round.episodes: ")
    monkeypatch.delenv("FLYWHEEL_ROUND__EPISODES")
    monkeypatch.setenv("FLYWHEEL_ROUND", '{"workers": "two"}')
    assert message().startswith("FLYWHEEL_ROUND: round.workers: ")
    monkeypatch.setenv("FLYWHEEL_ROUND", '{"workers": 0}')  # parses, and the setting refuses it
    assert message().startswith("FLYWHEEL_ROUND: round.workers: ")


def test_an_s3_data_dir_and_its_settings(tmp_path, monkeypatch):
    from pathlib import Path

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    cfg = tmp_path / "flywheel.toml"
    cfg.write_text('data_dir = "S3://team-bucket/flywheel/prod/"\n[s3]\nendpoint_url = "http://127.0.0.1:9000/"\n'
                   'access_key = "AKIA1"\nsecret_key = "flywheelSECRETs3key"\n')
    s = load_settings(cfg)
    assert (s.data_dir, s.in_object_storage, s.data_location()) == ("s3://team-bucket/flywheel/prod", True,
                                                                   "s3://team-bucket/flywheel/prod")
    assert s.s3.endpoint_url == "http://127.0.0.1:9000" and s.s3.checked_keys() == ("AKIA1", "flywheelSECRETs3key")
    assert s.local_root() == Path.home() / ".cache" / "agent-flywheel" / "team-bucket" / "flywheel" / "prod"
    assert "flywheelSECRETs3key" not in repr(s) + s.model_dump_json()  # a secret, as every key is
    # a URL that went through Path() on its way in is still the URL; a local data_dir keeps its own place
    assert load_settings(cfg, data_dir=Path("s3://other-bucket/x")).data_dir == "s3://other-bucket/x"
    assert load_settings(cfg, data_dir=tmp_path / "d").local_root() == tmp_path / "d"
    # the AWS tools' variables, as a pair, when the settings name no keys
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    assert load_settings(data_dir="s3://team-bucket").s3.checked_keys() == ("AKIA2", "aws-secret")
    for bad, words in (("gs://b/x", "gs:// is not supported"), ("s3://Team_Bucket", "not a bucket name"),
                       ("s3://team-bucket/a//b", "empty, '.' or '..' part")):
        with pytest.raises(ConfigError, match=words):
            load_settings(data_dir=bad)
    with pytest.raises(ConfigError, match="not an http"):
        load_settings(s3={"endpoint_url": "minio:9000"})


@pytest.mark.parametrize(("url", "says"), [
    ("localhost:8000/v1", "not an http(s) URL: 'localhost:8000/v1'"),  # the scheme forgotten
    ("ftp://127.0.0.1/v1", "not an http(s) URL"),
    ("http://127.0.0.1:99999/v1", "not a valid port in 'http://127.0.0.1:99999/v1'"),
    ("", "empty: leave it unset to use the OpenAI API"),  # not the hosted API by accident
])
def test_a_model_endpoint_url_that_is_none_is_refused_where_settings_load(tmp_path, monkeypatch, url, says):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as said:
        load_settings(openai={"base_url": url})
    assert str(said.value).startswith(f"--base-url: openai.base_url: {says}"), said.value
    (tmp_path / "flywheel.toml").write_text(f'[curation]\njudge_base_url = "{url}"\n')
    with pytest.raises(ConfigError, match="curation.judge_base_url: " + says.replace("(", r"\(").replace(")", r"\)")):
        load_settings()
    (tmp_path / "flywheel.toml").unlink()
    assert load_settings(openai={"base_url": "https://api.example.com/v1"}).openai.base_url == "https://api.example.com/v1"
