"""No task of one split is a task of another: over every family, seed and difficulty, no two
variants in different splits share (parameters, reference calls). F03's ``meeting`` (train) and
``cinema`` (test) variants once did at difficulty 1."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from generators.phone.families import FAMILIES

SEEDS = range(120)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_no_two_variants_in_different_splits_share_parameters_and_reference_calls(family):
    fam = FAMILIES[family]
    splits: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for difficulty in range(1, fam.max_difficulty + 1):
        for seed in SEEDS:
            task = fam.make_task(seed, difficulty)
            calls = [(a.tool, a.arguments) for a in fam.reference_actions(task)]
            key = (json.dumps(task.public_params, sort_keys=True, default=str), json.dumps(calls, sort_keys=True, default=str))
            splits[key].add((task.split, task.template.split(".")[0]))
    leaks = {k: sorted(v) for k, v in splits.items() if len({split for split, _ in v}) > 1}
    assert not leaks, next(iter(leaks.items()))
