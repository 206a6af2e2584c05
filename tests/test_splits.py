"""Splits are by variant: every wording, seed and difficulty of a task variant lands in one
split; every family has train, dev, test and challenge variants; challenge tasks are made at
the highest difficulty, counted apart by `flywheel status` and never land in a training file."""

from __future__ import annotations



from flows.views import split_cell, status_rows
from generators.phone.families import FAMILIES, SPLITS, split_for_template
from generators.phone.families.base import variant_of
from warehouse.store import Store

from tests.review_fixtures import make_round

N_TASKS = 10_000


def _written(n: int):
    fams = [FAMILIES[k] for k in sorted(FAMILIES)]
    for i in range(n):
        family = fams[i % len(fams)]
        seed = i // len(fams)
        yield family.make_task(seed, 1 + seed % family.max_difficulty)


def test_wordings_of_one_variant_share_its_split_whatever_the_wording():
    # the old per-wording hash put update_phone.direct and update_phone.terse in different splits
    for fid, family in FAMILIES.items():
        for template in family.templates:
            assert split_for_template(fid, template) == family.splits[variant_of(template)]


def test_imported_templates_split_by_variant_too():
    assert split_for_template("airline", "refund.polite") == split_for_template("airline", "refund.blunt")


def test_status_counts_episodes_per_split(tmp_path):
    store = Store(tmp_path / "d")
    make_round(store, n_tasks=12, families=tuple(sorted(FAMILIES)))
    [row] = status_rows(store)
    want = dict.fromkeys(SPLITS, 0)
    for split, n in store.duck().execute("SELECT split, count(*) FROM episodes GROUP BY 1").fetchall():
        want[split] = n
    assert row["splits"] == want and sum(want.values()) == 12 and want["train"] and want["dev"]
    assert split_cell(row["splits"]) == f"{want['train']}/{want['dev']}/{want['test']} | {want['challenge']}"
