"""Past one machine, curation too: a round's replay and near-duplicate search on a Dask cluster
(a local one with two worker processes) give the same marks as one process."""

from __future__ import annotations

import pandas as pd
import pytest

from curation import near_dup, replay
from curation.cascade import CascadeConfig, run_cascade
from flows.stages.curate import cascade_input
from tests.curation_data import build_round

pytestmark = pytest.mark.slow


class Counting:
    """An executor that counts what is submitted to the one it wraps."""

    def __init__(self, inner):
        self.inner, self.submitted = inner, 0

    def submit(self, fn, *args, **kwargs):
        self.submitted += 1
        return self.inner.submit(fn, *args, **kwargs)


def test_the_cascade_on_a_local_dask_cluster_gives_the_same_marks_as_one_process(tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    store, round_id = build_round(tmp_path / "data", episodes=120, rollouts=3)
    # a small round, spread as a large one would be: replay in chunks of 16, the bands on the cluster
    monkeypatch.setattr(replay, "CHUNK", 16)
    monkeypatch.setattr(replay, "PARALLEL_FROM", 32)
    monkeypatch.setattr(near_dup, "BANDS_SPREAD_FROM", 1)
    alone = run_cascade(cascade_input(store, round_id)).marks
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        executor = Counting(client.get_executor())
        clustered = run_cascade(cascade_input(store, round_id), CascadeConfig(executor=executor)).marks
        ran_on = client.run(lambda: True)
    bands, _ = near_dup.NearDupConfig().bands()
    assert len(ran_on) == 2
    assert executor.submitted > bands  # every band, and replay's chunks
    n = alone["episode_id"].nunique()
    replayed = alone[alone["check"] == "replay"]
    assert n > 100 and len(replayed) == n and set(replayed["mark"]) == {"match"}
    assert (alone["check"] == "near_duplicate").sum() == n
    pd.testing.assert_frame_equal(alone, clustered)
