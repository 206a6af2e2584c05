"""One typed settings object, read from ``flywheel.toml`` and ``FLYWHEEL_*`` variables.

Built once at the edge (the command line, the review app's entry point) and passed
down; no deeper code reads the environment.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_serializer,
    field_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from warehouse.errors import ConfigError, one_line
from warehouse.ids import SHARD_SIZE

DEFAULT_CONFIG = Path("flywheel.toml")


def http_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host and a valid port, else ValueError saying which."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"not an http(s) URL: {one_line(url, 80)!r} (e.g. http://127.0.0.1:8000/v1)")
    try:
        parsed.port
    except ValueError:
        raise ValueError(f"not a valid port in {one_line(url, 80)!r}") from None
    return url


def _endpoint_url(url: str | None) -> str | None:
    """A model endpoint's base URL: unset, or an http(s) URL (an empty one is refused: unset it)."""
    if url is None:
        return None
    if not url.strip():
        raise ValueError("empty: leave it unset to use the OpenAI API")
    return http_url(url)


class _Section(BaseModel):
    """A settings section: a misspelt key is an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class ScriptedPolicySettings(_Section):
    """The offline policy: how often it makes a mistake, per capability."""

    # Keyed by capability tag (tool_use, disambiguation, aggregation, ordering, ...);
    # a tag not listed keeps the policy's own default rate.
    error_rates: dict[str, float] = Field(default_factory=dict)

    @field_validator("error_rates")
    @classmethod
    def _rates_are_probabilities(cls, rates: dict[str, float]) -> dict[str, float]:
        for key, value in rates.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"error rate for {key!r} must be between 0 and 1, got {value}")
        return rates


class RoundSettings(_Section):
    """The shape of one round when no feedback says otherwise."""

    episodes: int = Field(100, ge=1, le=10_000_000)
    rollouts: int = Field(2, ge=1, le=64)
    shard_size: int = Field(SHARD_SIZE, ge=1, le=100_000)
    seed: int = 0
    families: list[str] = Field(default_factory=list)  # empty: every family
    difficulty: int = Field(1, ge=1, le=5)
    adaptive: bool = True  # the mix and difficulty follow the latest feedback
    # Draw tasks only of these splits' templates (empty: every split). ["train"] spends a round on
    # trainable data only and keeps the held-out variants for evals.
    splits: list[Literal["train", "dev", "test", "challenge"]] = Field(default_factory=list)
    # Of a family in a failure curriculum, this share of its episodes are reference demonstrations
    # (the reference solution followed exactly, by the ``reference`` policy); 0: none.
    reference_share: float = Field(0.25, ge=0.0, le=1.0)
    # A nightly round with no release approved since the last round runs this share of the
    # usual batch (0: it waits for people; the review gate decides what comes next).
    unreleased_share: float = Field(0.0, ge=0.0, le=1.0)
    # shards collected at once (default: the machine's cores); processes for scripted rounds and
    # model rounds of 500+ episodes, threads for smaller model rounds, Dask when asked (see README)
    workers: int | None = Field(None, ge=1, le=4096)
    runner: Literal["auto", "threads", "processes", "dask"] = "auto"
    dask_address: str | None = None  # a running Dask scheduler (tcp://host:8786); empty: a local cluster


class CurationSettings(_Section):
    """Knobs of the curation cascade (see README, Curation)."""

    near_dup_threshold: float = Field(0.8, gt=0.0, le=1.0)
    near_dup_action_weight: float = Field(0.8, ge=0.0, le=1.0)
    near_dup_history_rounds: int = Field(3, ge=0, le=1000)  # earlier rounds near duplicates are sought in
    near_dup_semantic: bool = True  # instructions of one meaning (WordLlama embeddings + anchors) count
    near_dup_semantic_threshold: float = Field(0.6, gt=0.0, le=1.0)  # embedding cosine for one meaning
    cost_tolerance: float = Field(0.25, ge=0.0)
    review_sample_rate: float = Field(0.05, ge=0.0, le=1.0)
    pii_kinds: list[Literal["email", "card", "account", "phone", "address"]] = Field(
        default_factory=lambda: ["email", "card", "account", "phone", "address"]
    )
    # model judges run only when an OpenAI-compatible endpoint is set
    judge_base_url: str | None = None
    judge_model: str = ""
    judge_api_key: SecretStr = SecretStr("none")  # FLYWHEEL_CURATION__JUDGE_API_KEY; never shown
    judge_k: int = Field(3, ge=1, le=9)

    _judge_url = field_validator("judge_base_url")(_endpoint_url)


class ModelPrice(_Section):
    """What a model costs, in dollars per million tokens."""

    input_per_mtok: float = Field(0.0, ge=0)
    output_per_mtok: float = Field(0.0, ge=0)


# Values people leave in example configs; a key like these is refused, never sent.
PLACEHOLDER_KEYS = {"changethis", "change-me", "changeme", "your-api-key", "your_api_key", "sk-...", "sk-xxx",
                    "xxx", "todo", "none", "null", "placeholder", "api-key", "apikey", "<api-key>", "secret"}
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


class OpenAISettings(_Section):
    """An OpenAI-compatible endpoint (a hosted API, vLLM, SGLang, Ollama, llama.cpp's server)."""

    base_url: str | None = None  # e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1
    model: str | None = None
    api_key: SecretStr | None = None  # FLYWHEEL_OPENAI__API_KEY, or OPENAI_API_KEY read at the edge
    # model calls in flight at once, at most; with adaptive_concurrency, as many as the server keeps up with
    concurrency: int = Field(64, ge=1, le=4096)
    adaptive_concurrency: bool = True  # false: always ``concurrency`` calls in flight
    rpm: int | None = Field(None, ge=1)  # requests per minute (None: no limit)
    tpm: int | None = Field(None, ge=1)  # tokens per minute (None: no limit)
    # per call, from when it is sent: long enough for a first prompt of ~2k tokens on a 2-core CPU server
    timeout_s: float = Field(120.0, gt=0)
    retries: int = Field(4, ge=0, le=20)  # on 429, 5xx, timeouts, connection errors
    backoff_s: float = Field(0.5, ge=0)  # first backoff; doubles each retry, with jitter
    backoff_max_s: float = Field(30.0, ge=0)
    breaker_failures: int = Field(12, ge=1)  # consecutive failed attempts that mean "the endpoint is down"
    max_invalid_replies: int = Field(3, ge=1)  # unusable replies in a row that end an episode
    max_tokens: int | None = Field(None, ge=1)  # per reply (None: the endpoint's default)
    max_steps: int | None = Field(None, ge=1)  # replies per episode (None: the task's own step budget)
    writer_rounds: int = Field(3, ge=1, le=10)  # tries of the model writer before the template wording
    prices: dict[str, ModelPrice] = Field(default_factory=dict)  # model -> price

    _base_url = field_validator("base_url")(_endpoint_url)

    def checked_key(self) -> str:
        """The API key to send; ConfigError for a placeholder, or for no key with a remote endpoint.

        Local servers (vLLM, Ollama, llama.cpp) usually want no key: any string will do there.
        """
        key = self.api_key.get_secret_value().strip() if self.api_key else ""
        if key and (key.lower() in PLACEHOLDER_KEYS or key.startswith("<") or set(key) <= {"x", "X", "*", "."}):
            raise ConfigError("openai.api_key is a placeholder; set FLYWHEEL_OPENAI__API_KEY or OPENAI_API_KEY "
                              "to the real key")
        if not key:
            host = urlparse(self.base_url or "").hostname or ""
            if host not in LOCAL_HOSTS:
                raise ConfigError(f"no API key for {self.base_url or 'the OpenAI API'}; set FLYWHEEL_OPENAI__API_KEY "
                                  "or OPENAI_API_KEY")
            return "not-needed"
        return key


class UserSettings(_Section):
    """The simulated user over a model (see README, The simulated user). Off (no ``base_url``): the
    scripted user answers. Its calls keep the ``[openai]`` limits, timeouts, retries and breaker."""

    base_url: str | None = None  # e.g. http://127.0.0.1:8000/v1; unset: the scripted user
    model: str | None = None
    api_key: SecretStr | None = None  # FLYWHEEL_USER__API_KEY; never shown
    max_tokens: int = Field(96, ge=1, le=4096)  # an answer is one short sentence

    @field_validator("base_url")
    @classmethod
    def _user_url(cls, url: str | None) -> str | None:
        return None if url is None or not url.strip() else http_url(url)  # empty: the scripted user

    @property
    def enabled(self) -> bool:
        return bool(self.base_url)


class LabelStudioSettings(_Section):
    """A Label Studio server the review queue is mirrored to (see README, Label Studio)."""

    url: str | None = None  # e.g. http://127.0.0.1:8080; unset: Label Studio is not used
    token: SecretStr | None = None  # a personal access token (FLYWHEEL_LABEL_STUDIO__TOKEN); never logged
    project: str = Field("agent-flywheel review", min_length=1, max_length=50)  # the project's title
    timeout_s: float = Field(60.0, gt=0)  # per request
    page_size: int = Field(500, ge=1, le=5000)  # tasks per request when pushing and pulling
    screens_url: str | None = None  # where `flywheel label-studio screens` serves step screens, if anywhere

    @property
    def configured(self) -> bool:
        return bool(self.url)

    def checked_token(self) -> str:
        """The token to send; ConfigError (never naming the token) when it is missing or a placeholder."""
        key = self.token.get_secret_value().strip() if self.token else ""
        if not key:
            raise ConfigError("no Label Studio token; set FLYWHEEL_LABEL_STUDIO__TOKEN to a personal access token")
        if key.lower() in PLACEHOLDER_KEYS or key.startswith("<"):
            raise ConfigError("label_studio.token is a placeholder; set FLYWHEEL_LABEL_STUDIO__TOKEN to a real "
                              "personal access token")
        return key


# A data directory in object storage: s3://bucket or s3://bucket/prefix (AWS S3, MinIO, Ceph, R2, ...)
S3Url = Annotated[str, StringConstraints(pattern=r"^s3://")]
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def split_s3_url(url: str) -> tuple[str, str]:
    """(bucket, prefix) of ``s3://bucket/prefix`` (prefix without slashes at either end, maybe empty)."""
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    return bucket, prefix.strip("/")


class S3Settings(_Section):
    """Object storage for an ``s3://bucket/prefix`` data directory (see README, Storage).

    Any S3-compatible service: AWS S3 (no ``endpoint_url``), MinIO, Ceph, Cloudflare R2, ..."""

    endpoint_url: str | None = None  # e.g. http://127.0.0.1:9000 (MinIO); unset: AWS S3 in `region`
    access_key: SecretStr | None = None  # FLYWHEEL_S3__ACCESS_KEY, or AWS_ACCESS_KEY_ID read at the edge; not shown
    secret_key: SecretStr | None = None  # FLYWHEEL_S3__SECRET_KEY, or AWS_SECRET_ACCESS_KEY; never shown
    region: str | None = None  # e.g. eu-west-1 (default: us-east-1)
    timeout_s: float = Field(10.0, gt=0, le=600)  # to connect, and per request
    retries: int = Field(3, ge=0, le=20)  # on throttling, 5xx and dropped connections
    download_threads: int = Field(16, ge=1, le=256)  # shards fetched at once into the local read cache

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint_is_http(cls, url: str | None) -> str | None:
        return None if url is None else http_url(url).rstrip("/")

    def checked_keys(self) -> tuple[str, str]:
        """(access key, secret key) to sign requests with; ConfigError (never naming a key) if unset."""
        access = self.access_key.get_secret_value().strip() if self.access_key else ""
        secret = self.secret_key.get_secret_value().strip() if self.secret_key else ""
        if not access or not secret:
            missing = " and ".join(n for n, v in (("s3.access_key", access), ("s3.secret_key", secret)) if not v)
            raise ConfigError(f"no {missing} for the s3:// data directory; set FLYWHEEL_S3__ACCESS_KEY and "
                              "FLYWHEEL_S3__SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
        if secret.lower() in PLACEHOLDER_KEYS or secret.startswith("<"):
            raise ConfigError("s3.secret_key is a placeholder; set FLYWHEEL_S3__SECRET_KEY to the real key")
        return access, secret


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="FLYWHEEL_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    data_dir: S3Url | Path = Path("flywheel-data")  # a local directory, or s3://bucket/prefix (then set state_url)
    state_url: str | None = None  # default: SQLite inside the data directory
    # how long a state database over the network (PostgreSQL) that went away is waited for before a
    # command stops in one line; a cut shorter than this is ridden through (0: stop at once)
    state_reconnect_s: float = Field(10.0, ge=0, le=3600)
    s3: S3Settings = Field(default_factory=S3Settings)  # endpoint and keys of an s3:// data directory
    # what cannot live in object storage (the read cache, DuckDB's spill, Prefect's home, the writer lock
    # with SQLite state); default: the data directory itself, or ~/.cache/agent-flywheel/BUCKET/PREFIX
    local_dir: Path | None = None
    round: RoundSettings = Field(default_factory=RoundSettings)
    scripted: ScriptedPolicySettings = Field(default_factory=ScriptedPolicySettings)
    review_port: int = Field(8501, ge=1, le=65535)  # 0 would serve on a random port the app cannot name
    review_session_hours: float = Field(12.0, gt=0, le=720)  # a review-app sign-in lasts this long
    curation: CurationSettings = Field(default_factory=CurationSettings)
    policy: Literal["scripted", "openai"] = "scripted"  # who acts in the phone
    writer: Literal["template", "openai"] = "template"  # who words the instructions
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    review_overlap: float = Field(0.1, ge=0.0, le=1.0)  # share of episodes sent to several reviewers
    review_overlap_reviewers: int = Field(2, ge=2, le=10)  # how many reviewers each of those needs
    label_studio: LabelStudioSettings = Field(default_factory=LabelStudioSettings)
    user: UserSettings = Field(default_factory=UserSettings)  # a model-backed simulated user, when set
    redis_url: str | None = None  # shared rate limits in Redis (default: in the state database)

    @field_validator("data_dir", mode="before")
    @classmethod
    def _object_store_url(cls, value: Any) -> Any:
        if isinstance(value, Path) and value.as_posix().lower().startswith("s3:/"):
            value = "s3://" + value.as_posix()[4:]  # a URL that went through Path() lost a slash
        if not isinstance(value, str) or not (m := _SCHEME.match(value)):
            return value
        if m.group(1).lower() != "s3":
            raise ValueError(f"{one_line(value, 80)!r}: object storage is s3://bucket/prefix ({m.group(1)}:// is not "
                             "supported)")
        url = "s3://" + value[m.end():]
        bucket, prefix = split_s3_url(url)
        if not _BUCKET.match(bucket) or ".." in bucket:
            raise ValueError(f"{one_line(value, 80)!r}: {one_line(bucket, 70)!r} is not a bucket name (3 to 63 "
                             "lowercase letters, digits, dots and hyphens)")
        if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
            raise ValueError(f"{one_line(value, 80)!r}: the prefix has an empty, '.' or '..' part")
        return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"

    @field_validator("data_dir", "local_dir")
    @classmethod
    def _absolute(cls, value: Any) -> Any:
        # resolved once, where the settings are loaded: a task runs them in other processes and
        # on other machines (Dask workers), each in a working directory of its own
        return value.absolute() if isinstance(value, Path) else value

    @property
    def in_object_storage(self) -> bool:
        """True when the data directory is an s3:// URL."""
        return isinstance(self.data_dir, str)

    def data_location(self) -> str:
        """The data directory as a user should see it: s3://bucket/prefix, or an absolute path."""
        return self.data_dir if isinstance(self.data_dir, str) else str(self.data_dir.resolve())

    def local_root(self) -> Path:
        """Where what cannot live in object storage goes (see ``local_dir``)."""
        if self.local_dir is not None:
            return self.local_dir
        if isinstance(self.data_dir, str):
            bucket, prefix = split_s3_url(self.data_dir)
            return Path.home() / ".cache" / "agent-flywheel" / bucket / prefix
        return self.data_dir

    @field_serializer("state_url", when_used="json")
    def _state_url_without_password(self, url: str | None) -> str | None:
        # JSON is what leaves the process (Prefect stores a flow's parameters and shows them in its UI)
        return redact_url(url) if url else url

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Explicit values (the command line) win over the environment, which wins over the file.
        return (init_settings, env_settings)


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (also when the URL does not parse)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url if "@" not in url else "***"
    userinfo, at, host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read config {one_line(str(path))}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {one_line(str(path))} is not valid TOML: {one_line(str(exc))}") from exc


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _env_values() -> dict[str, Any]:
    """The FLYWHEEL_* variables as settings; ConfigError naming the variable whose value does not parse
    (a list or a table in a variable is JSON, e.g. FLYWHEEL_ROUND__FAMILIES='["F01", "F02"]')."""
    try:
        return Settings().model_dump(exclude_unset=True)
    except ValidationError as exc:  # a variable that parses, with a value the setting does not take
        err = exc.errors()[0]
        path = _setting_path(err.get("loc", ()))
        raise ConfigError(f"{_variable(path) or 'FLYWHEEL_*'}: {'.'.join(path) or '?'}: "
                          f"{_message(err)}") from None
    except SettingsError as exc:
        field = str(exc).split('"')[1] if str(exc).count('"') >= 2 else ""
        names = sorted(k for k in os.environ if k.upper().startswith(f"FLYWHEEL_{field.upper()}")) or ["FLYWHEEL_*"]
        raise ConfigError(f"{', '.join(names)}: not a valid value for {field or 'a setting'} (a list or a table "
                          "in a variable is JSON, e.g. FLYWHEEL_ROUND__FAMILIES='[\"F01\", \"F02\"]')") from None


def _message(err: dict[str, Any]) -> str:
    """A validation error's message, without pydantic's "Value error, " before our own words."""
    return str(err.get("msg", "invalid value")).removeprefix("Value error, ")


def config_in_use(config: Path | None = None) -> Path | None:
    """The config file settings are read from: ``config``, else ./flywheel.toml if present, else none."""
    return config if config is not None else (DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None)


def load_settings(config: Path | None = None, **overrides: Any) -> Settings:
    """Settings from the config file (see :func:`config_in_use`), the environment, and explicit
    overrides, in rising order. One-line ConfigError if wrong."""
    file_values: dict[str, Any] = {}
    path = config_in_use(config)
    if path is not None:
        file_values = _read_toml(Path(path))
    source = f"config {one_line(str(path))}" if path else "settings"
    try:
        env_values = _env_values()
        merged = _merge(_merge(file_values, env_values), {k: v for k, v in overrides.items() if v is not None})
        openai = merged.get("openai") or {}
        if not openai.get("api_key") and os.environ.get("OPENAI_API_KEY"):
            # the openai client's own variable, read here at the edge like every other one
            merged["openai"] = {**openai, "api_key": os.environ["OPENAI_API_KEY"]}
        s3 = merged.get("s3") or {}
        if isinstance(s3, dict) and not s3.get("access_key") and not s3.get("secret_key"):
            # the AWS tools' own variables, read here at the edge too (the pair, never one of a pair)
            aws = {k: os.environ[v] for k, v in (("access_key", "AWS_ACCESS_KEY_ID"),
                                                 ("secret_key", "AWS_SECRET_ACCESS_KEY")) if os.environ.get(v)}
            if aws:
                merged["s3"] = {**s3, **aws}
        return Settings.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        path = _setting_path(err.get("loc", ()))
        given = _given_by(path, {k: v for k, v in overrides.items() if v is not None}, env_values, source)
        raise ConfigError(f"{given}: {'.'.join(path) or '?'}: {_message(err)}") from exc


def _setting_path(loc: tuple) -> list[str]:
    """The setting's own path in a validation error's ``loc``, without the names pydantic gives its
    validators (``constrained-str``, ``function-after[...]``); a list's index stays."""
    path: list[str] = []
    for part in loc:
        if not (isinstance(part, int) or str(part).isidentifier()):
            break
        path.append(str(part))
    return path


def _has(values: dict[str, Any], path: list[str]) -> bool:
    for part in path:
        if not isinstance(values, dict) or part not in values:
            return False
        values = values[part]
    return True


def _variable(path: list[str]) -> str | None:
    """The FLYWHEEL_* variable that set ``path``: FLYWHEEL_ROUND__EPISODES, or FLYWHEEL_ROUND as JSON."""
    names = {k.upper() for k in os.environ}
    for depth in range(len(path), 0, -1):
        name = "FLYWHEEL_" + "__".join(path[:depth]).upper()
        if name in names:
            return name
    return None


def _given_by(path: list[str], options: dict[str, Any], env_values: dict[str, Any], source: str) -> str:
    """Where a bad value came from: the command line's option, the environment's variable, or the file."""
    if path and _has(options, path):
        return f"--{path[-1].replace('_', '-')}"
    if path and _has(env_values, path):
        return _variable(path) or source
    return source

