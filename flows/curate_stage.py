"""The curate stage: read a round's columns, run the cascade, commit the marks as one shard."""

from __future__ import annotations

from typing import Any

from curation.cascade import CascadeConfig, CascadeInput, run_cascade
from curation.frame import episode_frame, prior_representatives, step_frame, step_results, task_lookup
from curation.marking import to_arrow
from curation.near_dup import NearDupConfig
from curation.semantic import wordllama_embed
from flows.model_setup import engine_config
from generators.models import Engine, OpenAIEndpoint
from generators.models.blocking import BlockingEngine, EngineJudge
from warehouse import killpoints, state
from warehouse.errors import ConfigError
from warehouse.settings import Settings
from warehouse.store import Store


def cascade_config(settings: Settings | None) -> CascadeConfig:
    """The cascade's knobs from the settings' ``[curation]`` table."""
    if settings is None:
        return CascadeConfig()
    c = settings.curation
    return CascadeConfig(
        near_dup=NearDupConfig(threshold=c.near_dup_threshold, action_weight=c.near_dup_action_weight,
                               semantic_threshold=c.near_dup_semantic_threshold),
        cost_tolerance=c.cost_tolerance,
        review_rate=c.review_sample_rate,
        pii_kinds=tuple(c.pii_kinds),
    )


def judges_from(settings: Settings | None) -> list[EngineJudge]:
    """k judges over one engine (the ``[openai]`` limits, retries and breaker) when
    ``curation.judge_base_url`` is set; none otherwise. :func:`close_judges` when done."""
    if settings is None or not settings.curation.judge_base_url:
        return []
    c, limits = settings.curation, settings.openai
    if not c.judge_model:
        raise ConfigError("curation.judge_model must be set when curation.judge_base_url is")
    engine = BlockingEngine(lambda: Engine(OpenAIEndpoint(base_url=c.judge_base_url, api_key=c.judge_api_key.get_secret_value(),
                                                          model=c.judge_model, timeout_s=limits.timeout_s + 5),
                                           engine_config(limits)))
    return [EngineJudge(f"judge-{i + 1}", engine, temperature=0.0 if c.judge_k == 1 else 0.7)
            for i in range(c.judge_k)]


def close_judges(judges: list) -> None:
    """Stop the engines behind ``judges`` (each once)."""
    for engine in {id(j.engine): j.engine for j in judges if hasattr(j, "engine")}.values():
        engine.close()


def cascade_input(store: Store, round_id: str, settings: Settings | None = None) -> CascadeInput:
    """Everything the cascade reads for ``round_id``, plus what earlier rounds decided."""
    con = store.duck()
    prior = dict(con.execute(
        "SELECT json_extract_string(detail, '$.key'), episode_id FROM marks "
        "WHERE \"check\" = 'exact_duplicate' AND passed AND round_id <> ?", [round_id]
    ).fetchall())
    known = {t for (t,) in con.execute(
        "SELECT DISTINCT json_extract_string(o.failure, '$.type') FROM outcomes o JOIN episodes e USING (episode_id) "
        "WHERE e.round_id <> ? AND o.failure IS NOT NULL", [round_id]).fetchall() if t}
    tasks = task_lookup(con, round_id)
    history = settings.curation.near_dup_history_rounds if settings is not None else 3
    return CascadeInput(
        episodes=episode_frame(con, round_id), steps=step_frame(con, round_id), tasks=tasks,
        prior_exact=prior, known_failure_types=known, fetch_results=lambda ids: step_results(con, ids),
        judges=judges_from(settings),
        prior_near=prior_representatives(con, round_id, history) if history else None,
        embed=wordllama_embed if settings is None or settings.curation.near_dup_semantic else None,
        curriculum_families=failure_curriculum_families(store, round_id),
    )


def failure_curriculum_families(store: Store, round_id: str) -> frozenset[str]:
    """The families the round's plan drew for a failure curriculum (their episodes go to people)."""
    with store.session() as s:
        rnd = s.get(state.Round, round_id)
        curricula = (rnd.plan or {}).get("curricula", {}) if rnd is not None else {}
    return frozenset(f for f, c in curricula.items() if isinstance(c, dict) and c.get("kind") == "failure")


def curate_round_cascade(store: Store, round_id: str, key: str, settings: Settings | None = None) -> dict[str, Any]:
    """Run the cascade on a round and commit its marks; returns the funnel."""
    inputs = cascade_input(store, round_id, settings)
    try:
        result = run_cascade(inputs, cascade_config(settings))
    finally:
        close_judges(list(inputs.judges))
    killpoints.reached("curate.marked")
    store.commit_tables(round_id, key, {"marks": to_arrow(result.marks)})
    return {"marks": len(result.marks), "funnel": result.funnel, "seconds": result.seconds}
