"""How a round's shards run: the runner the settings ask for, and when a small scripted round
collects in its own process instead of paying for worker processes."""

from __future__ import annotations

import pytest

from flows.runners import PROCESSES_PAY_FROM, collects_inline, runner_kind
from warehouse.settings import load_settings


def _settings(tmp_path, policy: str = "scripted", **round_):
    return load_settings(None, data_dir=tmp_path, policy=policy, round={"workers": 2, **round_})


def test_the_automatic_runner_fits_the_policy(tmp_path):
    assert runner_kind(_settings(tmp_path)) == "processes"
    assert runner_kind(_settings(tmp_path, policy="openai")) == "threads"
    assert runner_kind(_settings(tmp_path, workers=1)) == "threads"
    assert runner_kind(_settings(tmp_path, dask_address="tcp://127.0.0.1:8786")) == "dask"


@pytest.mark.parametrize("runner,policy,shards,episodes,inline", [
    ("auto", "scripted", 1, 10_000, True),  # a lone shard never pays for a pool
    ("auto", "scripted", 4, PROCESSES_PAY_FROM - 1, True),  # too little work for worker processes
    ("auto", "scripted", 40, PROCESSES_PAY_FROM, False),
    ("auto", "openai", 4, 40, False),  # threads cost nothing to start: a model round's shards overlap
    ("processes", "scripted", 2, 20, False),  # asked for by name: always used
    ("dask", "scripted", 2, 20, False),
])
def test_small_scripted_rounds_collect_in_their_own_process(tmp_path, runner, policy, shards, episodes, inline):
    assert collects_inline(_settings(tmp_path, policy=policy, runner=runner), shards, episodes) is inline
