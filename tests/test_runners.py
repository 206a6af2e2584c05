"""How a round's shards run: the runner the settings ask for, and when a small scripted round
collects in its own process instead of paying for worker processes."""

from __future__ import annotations

import urllib.error
import urllib.request
import warnings

import pytest

from flows.runners import (
    DASK_CONNECT_TIMEOUT_S,
    MODEL_PROCESSES_FROM,
    PROCESSES_PAY_FROM,
    check_dask_scheduler,
    cluster_lost,
    collects_inline,
    runner_kind,
    task_runner,
)
from flows.stages.collect import RUNS_PER_WORKER, CommitWatch, shard_runs
from tests.conftest import free_port, port_taken, wait_for
from warehouse import state
from warehouse.errors import OrchestratorError
from warehouse.settings import load_settings
from warehouse.store import Store


def _settings(tmp_path, policy: str = "scripted", **round_):
    return load_settings(None, data_dir=tmp_path, policy=policy, round={"workers": 2, **round_})


def test_the_automatic_runner_fits_the_policy(tmp_path):
    assert runner_kind(_settings(tmp_path)) == "processes"
    assert runner_kind(_settings(tmp_path, policy="openai")) == "threads"  # a small model round: threads
    assert runner_kind(_settings(tmp_path, policy="openai", episodes=MODEL_PROCESSES_FROM)) == "processes"
    assert runner_kind(_settings(tmp_path, workers=1)) == "threads"
    assert runner_kind(_settings(tmp_path, dask_address="tcp://127.0.0.1:8786")) == "dask"


@pytest.mark.parametrize("runner,policy,shards,episodes,inline", [
    ("auto", "scripted", 1, 10_000, True),  # a lone shard never pays for a pool
    ("auto", "scripted", 4, PROCESSES_PAY_FROM - 1, True),  # too little work for worker processes
    ("auto", "scripted", 40, PROCESSES_PAY_FROM, False),
    ("auto", "openai", 4, 40, False),  # threads cost nothing to start: a model round's shards overlap
    ("auto", "openai", 40, 5_000, False),  # on processes, never one shard at a time
    ("processes", "scripted", 2, 20, False),  # asked for by name: always used
    ("dask", "scripted", 2, 20, False),
])
def test_small_scripted_rounds_collect_in_their_own_process(tmp_path, runner, policy, shards, episodes, inline):
    assert collects_inline(_settings(tmp_path, policy=policy, runner=runner, episodes=episodes), shards, episodes) is inline


@pytest.mark.parametrize("shards,n_workers", [(1, 2), (7, 2), (8, 2), (100, 2), (101, 3), (5, 16)])
def test_shards_go_out_in_even_consecutive_runs_a_few_per_worker(shards, n_workers):
    keys = [f"s{i:05d}" for i in range(shards)]
    runs = shard_runs(keys, n_workers)
    assert [k for run in runs for k in run] == keys  # every shard once, in order
    assert all(runs) and len(runs) <= n_workers * RUNS_PER_WORKER
    assert max(map(len, runs)) - min(map(len, runs)) <= 1
    assert len(runs) == min(shards, n_workers * RUNS_PER_WORKER)


def _rounds(tmp_path, n: int = 2) -> tuple[Store, list[str]]:
    """A data directory with ``n`` open rounds, nothing committed yet."""
    store = Store(tmp_path / "data")
    ids = []
    for _ in range(n):
        with store.session() as s:
            ids.append(state.open_round(session=s, requested_episodes=10, seed=0, plan={}).id)
    return store, ids


def _commit(store: Store, round_id: str, key: str) -> None:
    """A shard committed as collection commits one (its episodes, steps and outcomes at once)."""
    store.commit_unit(round_id, key, {"episodes": [], "steps": [], "outcomes": []})


def test_progress_advances_once_per_shard_as_each_commits_wherever_it_ran(tmp_path, monkeypatch):
    monkeypatch.setattr("flows.stages.collect.PROGRESS_POLL_S", 0.01)
    store, (rid, other) = _rounds(tmp_path)
    _commit(store, rid, "s00009")  # committed by an earlier run: not this watch's to count
    advanced = []
    with CommitWatch(Store(tmp_path / "data"), rid, ["s00000", "s00001", "s00002"], lambda: advanced.append(1)):
        _commit(store, other, "s00002")  # a key of this watch, committed in another round: not this round's
        _commit(store, rid, "s00001")
        wait_for("the first commit to show", lambda: len(advanced) == 1, timeout=10, interval=0.01)
        _commit(store, rid, "s00000")
        wait_for("the second commit to show", lambda: len(advanced) == 2, timeout=10, interval=0.01)
    assert len(advanced) == 2


def test_the_shards_committed_as_the_runs_end_are_counted_too(tmp_path, monkeypatch):
    monkeypatch.setattr("flows.stages.collect.PROGRESS_POLL_S", 3600)  # no poll before the end
    store, (rid, _) = _rounds(tmp_path)
    advanced = []
    with CommitWatch(store, rid, ["s00000", "s00001"], lambda: advanced.append(1)):
        _commit(store, rid, "s00000")
        _commit(store, rid, "s00001")
    assert len(advanced) == 2


def test_a_local_dask_cluster_starts_no_dashboard_and_leaves_8787_alone(tmp_path):
    runner = task_runner(_settings(tmp_path, runner="dask", workers=1))
    with port_taken(8787), warnings.catch_warnings(record=True) as caught:  # 8787 held by another cluster
        warnings.simplefilter("always")
        with runner:
            runner.client  # the cluster starts with the first submission
            http = runner._cluster.scheduler.http_server  # its health and metrics endpoints
            assert (http.address, http.port != 8787) == ("127.0.0.1", True)
            with pytest.raises(urllib.error.HTTPError) as page:
                urllib.request.urlopen(f"http://127.0.0.1:{http.port}/status", timeout=10)
            assert page.value.code == 404  # no dashboard pages
    assert not [w for w in caught if issubclass(w.category, UserWarning)], [str(w.message) for w in caught]


def test_a_dask_scheduler_that_does_not_answer_is_one_line_at_once(tmp_path, monkeypatch):
    import socket
    import threading
    import time
    from contextlib import suppress

    from distributed import LocalCluster

    port = free_port()  # nothing listens there
    address = f"tcp://127.0.0.1:{port}"
    start = time.monotonic()
    with pytest.raises(OrchestratorError) as refused:
        check_dask_scheduler(_settings(tmp_path, dask_address=address))
    assert time.monotonic() - start < DASK_CONNECT_TIMEOUT_S
    assert str(refused.value).startswith(
        f"cannot reach the Dask scheduler at round.dask_address={address} (FLYWHEEL_ROUND__DASK_ADDRESS): ")
    assert "\n" not in str(refused.value)
    check_dask_scheduler(_settings(tmp_path, dask_address=address, runner="threads"))  # not used: not checked
    monkeypatch.setattr("flows.runners.DASK_CONNECT_TIMEOUT_S", 0.5)
    with socket.socket() as silent:  # accepts connections, never answers (a proxy, another server)
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        with pytest.raises(OrchestratorError, match="no answer as a Dask scheduler within 0.5 s"):
            check_dask_scheduler(_settings(tmp_path, dask_address=f"127.0.0.1:{silent.getsockname()[1]}"))
    with socket.socket() as web:  # another server: answers, but not as Dask
        web.bind(("127.0.0.1", 0))
        web.listen()

        def answer() -> None:
            with suppress(OSError):  # until the socket closes
                while True:
                    web.accept()[0].sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4)

        threading.Thread(target=answer, daemon=True).start()
        with pytest.raises(OrchestratorError, match="not a Dask scheduler"):
            check_dask_scheduler(_settings(tmp_path, dask_address=f"tcp://127.0.0.1:{web.getsockname()[1]}"))
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster:
        check_dask_scheduler(_settings(tmp_path, dask_address=cluster.scheduler_address))


def test_a_dask_cluster_lost_mid_round_is_one_line(tmp_path, monkeypatch):
    from distributed.client import FutureCancelledError

    import flows.round
    import flows.temp_server

    lost = FutureCancelledError("collect_run_task-f38be9", reason="scheduler-connection-lost",
                                msg="Client lost the connection to the scheduler.")

    class RoundLosingItsCluster:
        def with_options(self, **options):
            return self

        def __call__(self, *args):
            raise lost

    monkeypatch.setattr(flows.round, "_round", RoundLosingItsCluster())
    # the round never reaches Prefect here: no temporary server (its start can time out on a busy machine)
    monkeypatch.setattr(flows.temp_server, "start_guarded_server", lambda: None)
    with pytest.raises(OrchestratorError) as said:
        flows.round.round_flow(_settings(tmp_path, dask_address="tcp://dask.internal:8786"))
    assert str(said.value) == ("lost the Dask cluster at round.dask_address=tcp://dask.internal:8786 "
                               "(FLYWHEEL_ROUND__DASK_ADDRESS) mid-round (collect_run_task-f38be9 cancelled for "
                               "reason: scheduler-connection-lost); the shards committed so far are kept: rerun to "
                               "finish the round")
    assert "the local cluster" in str(cluster_lost(_settings(tmp_path, runner="dask"), lost))
    assert cluster_lost(_settings(tmp_path, dask_address="tcp://dask.internal:8786"), ValueError("a bug")) is None
    assert cluster_lost(_settings(tmp_path), lost) is None  # not a Dask round: not the cluster's doing


def test_a_model_runs_shards_overlap_and_keep_the_workers_concurrency_share(tmp_path, monkeypatch):
    """A worker of a model round keeps two shards going at once (the next one's calls fill the
    last one's tail) over one engine: its calls in flight never pass its share of openai.concurrency,
    and every shard is committed once."""
    import asyncio
    import json

    from flows import stages
    from flows.stages import collect
    from generators.models import OpenAIEndpoint
    from tests.conftest import single_session_families
    from tests.modelserver import FaultConfig, serve_in_thread

    with serve_in_thread(FaultConfig(latency_ms=10)) as server:
        settings = load_settings(None, data_dir=tmp_path / "d", policy="openai",
                                 openai={"base_url": server.base_url, "model": "flywheel-test", "concurrency": 6},
                                 round={"episodes": 24, "workers": 2, "shard_size": 6, "seed": 3,
                                        "families": json.loads(single_session_families())})
        store = Store(tmp_path / "d")
        rnd, _ = stages.open_or_resume_round(store, settings)
        stages.write_tasks(store, rnd.id, rnd.plan)
        seen = {"calls": 0, "peak_calls": 0, "shards": 0, "peak_shards": 0}

        def counted(what: str, real):
            async def wrapper(*args, **kwargs):
                seen[what] += 1
                seen[f"peak_{what}"] = max(seen[f"peak_{what}"], seen[what])
                try:
                    return await real(*args, **kwargs)
                finally:
                    seen[what] -= 1
            return wrapper

        monkeypatch.setattr(OpenAIEndpoint, "complete", counted("calls", OpenAIEndpoint.complete))
        monkeypatch.setattr(collect, "collect_episodes", counted("shards", collect.collect_episodes))
        keys = stages.shard_keys(rnd.plan)
        counts = asyncio.run(collect.collect_run(store, rnd.id, keys, settings, at_once=collect.MODEL_SHARDS_AT_ONCE))
    assert len(keys) == 4 and store.done_keys(rnd.id, "episodes") == set(keys)
    assert sum(c["episodes"] for c in counts.values()) == 24
    assert seen["peak_shards"] == 2  # overlapped, never more than asked
    assert seen["peak_calls"] == 3  # the worker's share of 6 across 2 workers, filled and never passed


def test_an_episode_cut_off_again_is_kept_only_when_cut_off_at_the_same_step(tmp_path):
    """The escape from a request that always fails is narrow: a rerun that gets further and is cut
    off at a later step has not failed the same way, and its shard is refused again."""
    from datetime import UTC, datetime

    from flows.stages.collect import commit_records
    from generators.collect import run_episode
    from generators.phone.families import FAMILIES
    from generators.policies import ScriptedPolicy
    from warehouse.errors import EndpointGaveUp

    store = Store(tmp_path / "d")
    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=1, seed=1, plan={})
    family = FAMILIES["F01"]  # a task of three steps or more, whichever variant a seed gives
    task = next(t for t in map(family.make_task, range(50)) if len(family.reference_actions(t)) >= 3)
    full = run_episode(task, ScriptedPolicy(seed=1, error_rates={}), rollout=0,
                       round_id=rnd.id, batch_id="b", created_at=datetime.now(UTC))
    assert len(full.steps) >= 3

    def cut_at(step: int):
        rec = full.model_copy(deep=True)
        rec.steps = rec.steps[:step]
        rec.outcome.termination = "endpoint_error"
        return rec

    with pytest.raises(EndpointGaveUp, match="1 of 1 episodes"):
        commit_records(store, rnd.id, "s00000", [cut_at(1)])
    with pytest.raises(EndpointGaveUp):  # further this time, cut off elsewhere: not the same failure
        commit_records(store, rnd.id, "s00000", [cut_at(2)])
    assert not store.done_keys(rnd.id, "episodes")
    commit_records(store, rnd.id, "s00000", [cut_at(2)])  # the same step again: kept, as endpoint_error
    assert store.done_keys(rnd.id, "episodes") == {"s00000"}
    assert store.duck().execute("SELECT termination FROM outcomes").fetchall() == [("endpoint_error",)]
