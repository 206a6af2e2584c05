"""The model path of a round, built from settings: endpoint, engine, journal, probe."""

from __future__ import annotations

from typing import Any

from generators.model_collect import ModelPolicy
from generators.model_user import ModelUser
from generators.models import EndpointRefused, Engine, EngineConfig
from generators.models.journal import GroupCommitJournal
from generators.models.limits import Bookings
from generators.models.server_log import log_for
from warehouse import killpoints, state
from warehouse.contract import USER_KEY
from warehouse.errors import ConfigError
from warehouse.ratelimit import RedisBookings, SqlBookings
from warehouse.settings import OpenAISettings, Settings
from warehouse.store import Store


def require_model(cfg: OpenAISettings) -> str:
    if not cfg.model:
        raise ConfigError("the openai policy needs a model: --model NAME or openai.model in flywheel.toml")
    return cfg.model


def probe(settings: Settings) -> None:
    """One clear line before any work if the endpoint is unreachable, refuses the key or lacks the model."""
    cfg = settings.openai
    from generators.models import probe_endpoint  # deferred: the openai client, about a second

    probe_endpoint(base_url=cfg.base_url, api_key=cfg.checked_key(), model=require_model(cfg),
                   timeout_s=min(cfg.timeout_s, 15.0))


def engine_config(cfg: OpenAISettings) -> EngineConfig:
    return EngineConfig(concurrency=cfg.concurrency, adaptive=cfg.adaptive_concurrency, rpm=cfg.rpm, tpm=cfg.tpm, timeout_s=cfg.timeout_s,
                        retries=cfg.retries, backoff_s=cfg.backoff_s, backoff_max_s=cfg.backoff_max_s,
                        breaker_failures=cfg.breaker_failures)


def shared_bookings(settings: Settings, store: Store) -> Bookings | None:
    """Where the round's RPM and TPM schedules live, so every worker keeps to the same limits:
    Redis when ``redis_url`` is set, else the state database (None when no rate is limited)."""
    if not (settings.openai.rpm or settings.openai.tpm):
        return None
    if settings.redis_url:
        return RedisBookings(settings.redis_url)
    return SqlBookings(store.engine)


def engine_for(cfg: OpenAISettings, *, base_url: str | None, api_key: str, model: str, workers: int = 1,
               bookings: Bookings | None = None) -> Engine:
    """An engine over ``model`` at ``base_url`` with ``cfg``'s limits, timeouts, retries and breaker: the
    one way the product reaches a model (planner, task writer, judges). Create it inside its event loop.

    ``workers`` engines run at once (one per shard being collected): each gets its share of
    ``cfg.concurrency``, and all book their calls in ``bookings`` (shared limits) when given."""
    # the client's own timeout is a backstop; the engine times each attempt itself
    from generators.models import OpenAIEndpoint  # deferred: the openai client, about a second

    endpoint = OpenAIEndpoint(base_url=base_url, api_key=api_key, model=model, timeout_s=cfg.timeout_s + 5,
                              server_log=log_for(base_url))
    config = engine_config(cfg)
    config.concurrency = max(1, -(-cfg.concurrency // workers))
    return Engine(endpoint, config, bookings=bookings, limit_key=f"openai:{base_url}:{model}")


def make_model_engine(settings: Settings, store: Store | None = None, *, workers: int = 1) -> Engine:
    """The engine of the round's own model (``[openai]``), its limits shared through ``store``."""
    cfg = settings.openai
    return engine_for(cfg, base_url=cfg.base_url, api_key=cfg.checked_key(), model=require_model(cfg),
                      workers=workers, bookings=shared_bookings(settings, store) if store is not None else None)


def user_checked(settings: Settings) -> tuple[str, str]:
    """(model, API key) of the model user; ConfigError for no model or a missing or placeholder key."""
    cfg = settings.user
    if not cfg.model:
        raise ConfigError("the model user needs a model: user.model in flywheel.toml or FLYWHEEL_USER__MODEL")
    key_check = settings.openai.model_copy(update={"base_url": cfg.base_url, "api_key": cfg.api_key})
    try:
        return cfg.model, key_check.checked_key()
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("openai.api_key", "user.api_key")
                          .replace("FLYWHEEL_OPENAI__API_KEY or OPENAI_API_KEY", "FLYWHEEL_USER__API_KEY")) from None


def probe_user(settings: Settings) -> None:
    """One clear line before any work if the model user's endpoint is unusable (when one is set)."""
    if not settings.user.enabled:
        return
    model, key = user_checked(settings)
    from generators.models import probe_endpoint  # deferred: the openai client, about a second

    try:
        probe_endpoint(base_url=settings.user.base_url, api_key=key, model=model,
                       timeout_s=min(settings.openai.timeout_s, 15.0),
                       setting="user.base_url or FLYWHEEL_USER__BASE_URL")
    except EndpointRefused as exc:
        raise EndpointRefused(f"the model user: {exc}") from None


def make_model_user(settings: Settings, store: Store, round_id: str, *, workers: int = 1) -> ModelUser:
    """The model user of ``settings.user`` (its engine keeps the ``[openai]`` limits), journaled in the
    state database under ``round_id``."""
    model, key = user_checked(settings)
    engine = engine_for(settings.openai, base_url=settings.user.base_url, api_key=key, model=model, workers=workers,
                        bookings=shared_bookings(settings, store))
    return ModelUser(engine, StateJournal(store, round_id), max_tokens=settings.user.max_tokens)


def model_policy(cfg: OpenAISettings) -> ModelPolicy:
    return ModelPolicy(model=require_model(cfg), max_invalid_replies=cfg.max_invalid_replies,
                       max_tokens=cfg.max_tokens, max_steps=cfg.max_steps)


def log_refusals(engine: Engine, who: str) -> None:
    """One warning in the Prefect log per distinct message the model server refused requests with."""
    if not engine.stats.rejections:
        return
    # deferred: Prefect, a second; the CLI's probe imports this module and must fail fast
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger  # deferred: as above

    try:
        logger = get_run_logger()
    except MissingContextError:  # called outside a flow (a test, a script): nothing to log to
        return
    for message, n in engine.stats.rejections.most_common():
        logger.warning("the model server refused %d request(s) of %s (not retried): %s", n, who, message)


class StateJournal(GroupCommitJournal):
    """The reply journal of one round in the state database (SQLite or PostgreSQL). A conversation's
    replies are read when it starts, if it has any (a shard reads its own, not the whole round's);
    replies that arrive together are committed together, in one transaction, off the event loop."""

    def __init__(self, store: Store, round_id: str):
        super().__init__()
        self.store, self.round_id = store, round_id
        with store.session() as s:
            # a conversation journaled elsewhere after this is found when its place is written
            self.journaled = state.journaled_keys(session=s, round_id=round_id)

    def load(self, key: str) -> dict[int, dict[str, Any]]:
        if key not in self.journaled:
            return {}
        with self.store.session() as s:
            return state.replies_at(session=s, round_id=self.round_id, key=key)

    def write(self, rows: list[tuple[str, int, dict[str, Any]]]) -> dict[tuple[str, int], dict[str, Any]]:
        with self.store.session() as s:
            return state.append_replies(session=s, round_id=self.round_id, replies=rows)

    def committed(self, key: str, index: int) -> None:
        if key.startswith(USER_KEY):
            killpoints.reached("user.answered")  # the kill tests: dead right after a committed user answer
