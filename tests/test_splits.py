"""Splits are by variant: every wording, seed and difficulty of a task variant lands in one
split; every family has train, dev, test and challenge variants; challenge tasks are made at
the highest difficulty, counted apart by `flywheel status` and never land in a training file."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from flows.export_cmd import export
from flows.views import split_cell, status_rows
from generators.phone.families import FAMILIES, SPLITS, get_family, split_for_template
from tests.conftest import export_dir
from tests.review_fixtures import make_round
from warehouse.contract import variant_of
from warehouse.settings import Settings
from warehouse.store import Store

N_TASKS = 10_000


def _written(n: int):
    fams = [FAMILIES[k] for k in sorted(FAMILIES)]
    for i in range(n):
        family = fams[i % len(fams)]
        seed = i // len(fams)
        yield family.make_task(seed, 1 + seed % family.max_difficulty)


def test_ten_thousand_written_tasks_split_by_variant_and_every_family_has_every_split():
    by_variant: dict[tuple[str, str], set[str]] = defaultdict(set)
    wordings: dict[tuple[str, str], set[str]] = defaultdict(set)
    per_family: dict[str, set[str]] = defaultdict(set)
    for task in _written(N_TASKS):
        key = (task.family, variant_of(task.template))
        by_variant[key].add(task.split)
        wordings[key].add(task.template)
        per_family[task.family].add(task.split)
        if task.split == "challenge":
            assert task.difficulty == get_family(task.family).max_difficulty, task.task_id
    straddling = {k: v for k, v in by_variant.items() if len(v) > 1}
    assert not straddling, straddling
    assert all(len(w) >= 3 for w in wordings.values())  # several wordings per variant were written, in one split
    assert {f: sorted(s) for f, s in per_family.items()} == {f: sorted(SPLITS) for f in FAMILIES}


def test_wordings_of_one_variant_share_its_split_whatever_the_wording():
    # the old per-wording hash put update_phone.direct and update_phone.terse in different splits
    for fid, family in FAMILIES.items():
        for template in family.all_templates():
            assert split_for_template(fid, template) == family.splits[variant_of(template)]


def test_imported_templates_split_by_variant_too():
    assert split_for_template("airline", "refund.polite") == split_for_template("airline", "refund.blunt")


@pytest.mark.parametrize("fid", sorted(FAMILIES))
def test_each_family_declares_six_or_more_variants_over_every_split(fid):
    family = get_family(fid)
    variants = {variant_of(t) for t in family.all_templates()}
    assert set(family.splits) == variants  # declared, so no variant falls back to a hash
    assert len(variants) >= 6
    assert set(family.splits.values()) == set(SPLITS)
    assert sum(s == "train" for s in family.splits.values()) >= 3  # training keeps most of the diversity


def test_a_challenge_variant_is_made_at_the_highest_difficulty_whatever_is_asked():
    family = get_family("F01")
    seed = next(s for s in range(200) if family.split_of(family.make_task(s).template) == "challenge")
    task = family.make_task(seed, 1)
    assert task.split == "challenge" and task.difficulty == family.max_difficulty
    assert task == family.make_task(seed, 2)  # one task per seed: the difficulty asked does not matter


def test_status_counts_episodes_per_split_and_challenge_apart(tmp_path):
    store = Store(tmp_path / "d")
    make_round(store, n_tasks=24, families=tuple(sorted(FAMILIES)))
    [row] = status_rows(store)
    want = dict.fromkeys(SPLITS, 0)
    for split, n in store.duck().execute("SELECT split, count(*) FROM episodes GROUP BY 1").fetchall():
        want[split] = n
    assert row["splits"] == want and sum(want.values()) == 24
    assert want["challenge"] > 0 and want["test"] > 0
    assert split_cell(row["splits"]).endswith(f"| {want['challenge']}")


def test_export_never_puts_challenge_episodes_in_a_training_file(tmp_path):
    store = Store(tmp_path / "d")
    make_round(store, n_tasks=24, families=tuple(sorted(FAMILIES)))
    split_of = dict(store.duck().execute("SELECT episode_id, split FROM episodes").fetchall())
    assert "challenge" in split_of.values()
    for fmt in ("openai", "dpo", "rl"):
        out = tmp_path / fmt
        _, manifest = export(store, out, fmt=fmt, include_verified=True, settings=Settings(data_dir=tmp_path / "d"))
        for name, info in manifest["files"].items():
            for line in (export_dir(out, manifest) / name).read_text().splitlines():
                meta = json.loads(line).get("metadata") or json.loads(line)
                ids = [meta.get(k) for k in ("episode_id", "chosen_id", "rejected_id") if meta.get(k)]
                splits = {split_of[i] for i in ids} or {meta["split"]}
                assert splits == {info["split"]}, (name, splits)
                assert ("challenge" in splits) == (".challenge." in name)

