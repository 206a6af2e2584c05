"""Stage 4, curate: read a round's columns, run the cascade, commit the marks as one shard."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from curation.cascade import ROUND_WIDE, CascadeConfig, CascadeInput, run_cascade
from curation.frame import episode_frame, prior_representatives, step_frame, step_results, task_lookup
from curation.near_dup import NearDupConfig
from curation.semantic import wordllama_embed
from flows.model_setup import engine_for
from flows.progress import StepProgress
from flows.stages.context import SettingsDoc, open_settings, open_store, run_log, workers
from generators.models.blocking import BlockingEngine, EngineJudge
from warehouse import killpoints, state
from warehouse.errors import ConfigError
from warehouse.settings import Settings
from warehouse.store import Store


def cascade_config(settings: Settings | None, executor: Executor | None = None) -> CascadeConfig:
    """The cascade's knobs from the settings' ``[curation]`` table; ``executor``: the round's Dask
    cluster, where replay and the near-duplicate search of a large round run."""
    if settings is None:
        return CascadeConfig(executor=executor)
    c = settings.curation
    return CascadeConfig(
        near_dup=NearDupConfig(threshold=c.near_dup_threshold, action_weight=c.near_dup_action_weight,
                               semantic_threshold=c.near_dup_semantic_threshold),
        cost_tolerance=c.cost_tolerance,
        review_rate=c.review_sample_rate,
        pii_kinds=tuple(c.pii_kinds),
        workers=workers(settings),
        executor=executor,
    )


@dataclass
class JournaledJudge:
    """A judge whose replies are journaled in the state database before they are used: a
    curation killed midway and rerun asks no judge again what it has answered (an endpoint
    error is not journaled, so the rerun asks again)."""

    inner: EngineJudge
    store: Store
    round_id: str
    model: str

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def engine(self) -> BlockingEngine:  # close_judges closes it
        return self.inner.engine

    def reply(self, messages: list[dict[str, str]]) -> str:
        key = hashlib.sha256(json.dumps([self.name, self.model, self.inner.temperature, messages],
                                        sort_keys=True).encode()).hexdigest()
        with self.store.session() as s:
            known = state.judge_reply(session=s, key=key)
        if known is not None:
            return known
        reply = self.inner.chat(messages)
        text = reply.content or ""
        with self.store.session() as s:
            state.append_judge_reply(session=s, key=key, round_id=self.round_id, judge=self.name, text=text,
                                     usage=(reply.model or self.model, reply.prompt_tokens, reply.completion_tokens))
        return text


def judges_from(settings: Settings | None, store: Store | None = None, round_id: str = "") -> list:
    """k judges over one engine (the ``[openai]`` limits, retries and breaker) when
    ``curation.judge_base_url`` is set, journaled in ``store``'s state database when given;
    none otherwise. :func:`close_judges` when done."""
    if settings is None or not settings.curation.judge_base_url:
        return []
    c, limits = settings.curation, settings.openai
    if not c.judge_model:
        raise ConfigError("curation.judge_model must be set when curation.judge_base_url is")
    engine = BlockingEngine(lambda: engine_for(limits, base_url=c.judge_base_url,
                                               api_key=c.judge_api_key.get_secret_value(), model=c.judge_model))
    judges = [EngineJudge(f"judge-{i + 1}", engine, temperature=0.0 if c.judge_k == 1 else 0.7)
              for i in range(c.judge_k)]
    return judges if store is None else [JournaledJudge(j, store, round_id, c.judge_model) for j in judges]


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
    history = settings.curation.near_dup_history_rounds if settings is not None else 3
    return CascadeInput(
        # steps and tasks are read a chunk of episodes at a time (a large round's would not fit in memory at once)
        episodes=episode_frame(con, round_id), steps=None, tasks=None,
        steps_of=lambda ids: step_frame(con, round_id, ids), tasks_of=lambda ids: task_lookup(con, round_id, ids),
        prior_exact=prior, known_failure_types=known, fetch_results=lambda ids: step_results(con, ids),
        judges=judges_from(settings, store, round_id),
        prior_near=prior_representatives(con, round_id, history) if history else None,
        prior_cross=prior_representatives(con, round_id, history, beyond=True),  # across splits: every round
        embed=wordllama_embed if settings is None or settings.curation.near_dup_semantic else None,
        curriculum_families=failure_curriculum_families(store, round_id),
    )


def failure_curriculum_families(store: Store, round_id: str) -> frozenset[str]:
    """The families the round's plan drew for a failure curriculum (their episodes go to people)."""
    with store.session() as s:
        rnd = s.get(state.Round, round_id)
        curricula = (rnd.plan or {}).get("curricula", {}) if rnd is not None else {}
    return frozenset(f for f, c in curricula.items() if isinstance(c, dict) and c.get("kind") == "failure")


CURATE_KEY = "curate-v1"


def curate_round_cascade(store: Store, round_id: str, key: str, settings: Settings | None = None,
                         on_progress: Callable[[int, int], None] | None = None,
                         executor: Executor | None = None) -> dict[str, Any]:
    """Run the cascade on a round and commit its marks as one shard, written as the cascade makes them
    (a large round's marks are never held at once); returns the funnel."""
    inputs = cascade_input(store, round_id, settings)
    with store.streaming_shard(round_id, key, "marks") as shard:
        try:
            result = run_cascade(inputs, cascade_config(settings, executor), on_progress=on_progress,
                                 sink=shard.write)
        finally:
            close_judges(list(inputs.judges))
        killpoints.reached("curate.marked")
    return {"marks": result.rows, "funnel": result.funnel, "seconds": result.seconds}


def curate_round(store: Store, round_id: str, settings: Settings | None = None,
                 on_progress: Callable[[int, int], None] | None = None) -> int:
    """The curation cascade's marks for every episode of the round (see curation.cascade);
    exact duplicates also against earlier rounds. Returns the number of marks written (0 when
    the round was curated already)."""
    return curate_round_logged(store, round_id, settings, on_progress)["marks"]


def curate_round_logged(store: Store, round_id: str, settings: Settings | None = None,
                        on_progress: Callable[[int, int], None] | None = None,
                        executor: Executor | None = None) -> dict[str, Any]:
    """:func:`curate_round`, with the funnel logged to the run (empty result when already curated)."""
    if CURATE_KEY in store.done_keys(round_id, "marks"):
        return {"marks": 0, "funnel": None, "seconds": {}}
    result = curate_round_cascade(store, round_id, CURATE_KEY, settings, on_progress, executor)
    run_log().info(funnel_line(round_id, result["funnel"]))
    return result


def funnel_line(round_id: str, funnel: dict[str, Any]) -> str:
    """The curation funnel as one log line: in, what each step marked, out."""
    steps = "; ".join(f"{step}: " + ", ".join(f"{mark} {n}" for mark, n in sorted(marks.items()))
                      for step, marks in funnel["steps"].items())
    return f"{round_id} curated: {funnel['in']} in, {funnel['out']} passed every gating check ({steps})"


@task(name="curate", cache_policy=NO_CACHE)
def curate_task(round_id: str, settings: SettingsDoc, show_progress: bool = False,
                executor: Executor | None = None) -> int:
    """The cascade over the round, with a progress bar on a terminal over its parts (each chunk of
    episodes, then each round-wide check); ``executor``: the round's Dask cluster (see
    :func:`cascade_config`)."""
    cfg = open_settings(settings)
    store = open_store(cfg)
    # the parts are known once the round's episodes are read: till then, one per round-wide check and one chunk
    with StepProgress(enabled=show_progress, total=len(ROUND_WIDE) + 1, label=f"{round_id} curating",
                      unit="parts") as bar:
        return curate_round_logged(store, round_id, cfg, on_progress=bar.update, executor=executor)["marks"]
