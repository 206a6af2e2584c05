"""The curate stage: read a round's columns, run the cascade, commit the marks as one shard."""

from __future__ import annotations

from typing import Any

from curation.cascade import CascadeConfig, CascadeInput, run_cascade
from curation.frame import episode_frame, prior_representatives, step_frame, step_results, task_lookup
from curation.judges import EndpointJudge
from curation.marking import to_arrow
from curation.near_dup import NearDupConfig
from warehouse.errors import ConfigError
from warehouse.settings import Settings
from warehouse.store import Store


def cascade_config(settings: Settings | None) -> CascadeConfig:
    """The cascade's knobs from the settings' ``[curation]`` table."""
    if settings is None:
        return CascadeConfig()
    c = settings.curation
    return CascadeConfig(
        near_dup=NearDupConfig(threshold=c.near_dup_threshold, action_weight=c.near_dup_action_weight),
        cost_tolerance=c.cost_tolerance,
        review_rate=c.review_sample_rate,
        pii_kinds=tuple(c.pii_kinds),
    )


def judges_from(settings: Settings | None) -> list:
    """k endpoint judges when ``curation.judge_base_url`` is set; none otherwise."""
    if settings is None or not settings.curation.judge_base_url:
        return []
    c = settings.curation
    if not c.judge_model:
        raise ConfigError("curation.judge_model must be set when curation.judge_base_url is")
    return [EndpointJudge(f"judge-{i + 1}", base_url=c.judge_base_url, model=c.judge_model, api_key=c.judge_api_key,
                          temperature=0.0 if c.judge_k == 1 else 0.7) for i in range(c.judge_k)]


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
    )


def curate_round_cascade(store: Store, round_id: str, key: str, settings: Settings | None = None) -> dict[str, Any]:
    """Run the cascade on a round and commit its marks; returns the funnel."""
    result = run_cascade(cascade_input(store, round_id, settings), cascade_config(settings))
    store.commit_tables(round_id, key, {"marks": to_arrow(result.marks)})
    return {"marks": len(result.marks), "funnel": result.funnel, "seconds": result.seconds}
