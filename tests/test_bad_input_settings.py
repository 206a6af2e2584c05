"""Bad input to the settings: flywheel.toml and FLYWHEEL_* variables, fed hostile values by
hypothesis. Each is valid settings or one ConfigError line; nothing else escapes."""

from __future__ import annotations

import json
import os
from unittest import mock

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz import FUZZ, HOSTILE_STRINGS, assert_clear_error, hostile_scalar, hostile_text
from warehouse.errors import ConfigError
from warehouse.settings import Settings, load_settings

# every settings path a user can write (sections and their keys), plus misspellings
KEYS = {
    "": ["data_dir", "state_url", "state_reconnect_s", "local_dir", "review_port", "review_session_hours", "policy", "writer", "review_overlap",
         "review_overlap_reviewers", "datadir"],
    "round": ["episodes", "rollouts", "shard_size", "seed", "families", "difficulty", "adaptive", "unreleased_share",
              "episode"],
    "curation": ["near_dup_threshold", "cost_tolerance", "review_sample_rate", "pii_kinds", "judge_k",
                 "judge_base_url", "judge_api_key"],
    "openai": ["base_url", "model", "api_key", "concurrency", "rpm", "tpm", "timeout_s", "retries", "prices"],
    "label_studio": ["url", "token", "project", "page_size", "timeout_s"],
    "scripted.error_rates": ["tool_use", "memory"],
    "s3": ["endpoint_url", "access_key", "secret_key", "region", "timeout_s", "retries", "download_threads"],
}
ENV_NAMES = ["FLYWHEEL_DATA_DIR", "FLYWHEEL_STATE_URL", "FLYWHEEL_REVIEW_PORT", "FLYWHEEL_POLICY", "FLYWHEEL_ROUND",
             "FLYWHEEL_ROUND__EPISODES", "FLYWHEEL_ROUND__FAMILIES", "FLYWHEEL_ROUND__SEED", "FLYWHEEL_OPENAI",
             "FLYWHEEL_OPENAI__CONCURRENCY", "FLYWHEEL_OPENAI__PRICES", "FLYWHEEL_CURATION__PII_KINDS",
             "FLYWHEEL_SCRIPTED__ERROR_RATES", "FLYWHEEL_LABEL_STUDIO__PAGE_SIZE", "FLYWHEEL_REVIEW_SESSION_HOURS",
             "FLYWHEEL_NOT_A_SETTING", "FLYWHEEL_ROUND__NOPE", "FLYWHEEL_CURATION", "FLYWHEEL_S3__ENDPOINT_URL",
             "FLYWHEEL_S3__RETRIES", "FLYWHEEL_LOCAL_DIR", "FLYWHEEL_STATE_RECONNECT_S"]


def _toml_value(value) -> str:
    """A TOML literal for a hostile Python value (TOML has no null: None becomes a bare word, itself bad TOML)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {float("inf"): "inf", float("-inf"): "-inf"}.get(value, "nan" if value != value else repr(value))
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)  # a basic TOML string is a JSON string


toml_value = st.one_of(
    hostile_scalar.map(_toml_value),
    st.lists(hostile_scalar, max_size=3).map(lambda xs: "[" + ", ".join(_toml_value(x) for x in xs) + "]"),
    st.sampled_from(["{}", "{ a = 1 }", "[[]]", "'unterminated", "1979-05-27T07:32:00Z"]),
)


@st.composite
def toml_documents(draw) -> str:
    lines = []
    for section in draw(st.lists(st.sampled_from(list(KEYS)), min_size=1, max_size=3, unique=True)):
        if section:
            lines.append(f"[{section}]")
        for key in draw(st.lists(st.sampled_from(KEYS[section]), min_size=1, max_size=3, unique=True)):
            lines.append(f"{key} = {draw(toml_value)}")
    return "\n".join(lines) + "\n"


def _load(**kwargs) -> Settings | None:
    try:
        return load_settings(**kwargs)
    except Exception as exc:  # noqa: BLE001  (the property: only a one-line ConfigError escapes)
        assert isinstance(exc, ConfigError), f"{type(exc).__name__}: {exc}"
        assert_clear_error(exc)
        return None


@FUZZ
@given(doc=st.one_of(toml_documents(), st.text(max_size=200)))
@example(doc='[round]\nepisodes = "many"\n')
@example(doc="[round]\nepisodes = nan\n")
@example(doc="review_session_hours = inf\n")
@example(doc='[openai]\nprices = "free"\n')
def test_any_config_file_is_settings_or_one_config_error(tmp_path_factory, doc):
    path = tmp_path_factory.mktemp("cfg") / "flywheel.toml"
    path.write_text(doc, encoding="utf-8")
    with mock.patch.dict(os.environ, {k: v for k, v in os.environ.items() if not k.startswith("FLYWHEEL_")}, clear=True):
        settings = _load(config=path)
    if settings is not None:  # what was accepted is usable as it says
        assert settings.round.episodes >= 1 and settings.review_session_hours > 0


@FUZZ
@given(env=st.dictionaries(st.sampled_from(ENV_NAMES), st.one_of(hostile_text, st.sampled_from(
    ['{"episodes": -1}', '{"episodes": "x"}', "[1,2]", '{"nope": 1}', '{"prices": 3}', '["email", "ssn"]',
     '{"tool_use": 2}', '{"tool_use": NaN}'])), min_size=1, max_size=3))
@example(env={"FLYWHEEL_ROUND": "{"})
@example(env={"FLYWHEEL_ROUND": "[]"})
@example(env={"FLYWHEEL_ROUND__FAMILIES": "F01"})
@example(env={"FLYWHEEL_SCRIPTED__ERROR_RATES": '{"tool_use": NaN}'})
@example(env={"FLYWHEEL_DATA_DIR": "a\x00b"})
def test_any_environment_is_settings_or_one_config_error(env):
    # NUL cannot be in a real environment variable; the rest is what a shell could export
    env = {k: v.replace("\x00", "") for k, v in env.items()}
    base = {k: v for k, v in os.environ.items() if not k.startswith("FLYWHEEL_")}
    with mock.patch.dict(os.environ, {**base, **env}, clear=True):
        _load()


@FUZZ
@given(value=st.sampled_from(HOSTILE_STRINGS))
@example(value="line\nbreak")  # found by the long run: the path's line break made two lines
def test_a_config_path_that_is_not_a_readable_file_is_one_line(tmp_path_factory, value):
    root = tmp_path_factory.mktemp("cfgpath")
    (root / "dir").mkdir()
    for path in (root / "dir", root / "missing.toml", root / value.replace("\x00", "") if value.strip() else root):
        _load(config=path)
