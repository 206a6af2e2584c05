"""Near duplicates across splits reach every earlier round, not only the last
``near_dup_history_rounds``: a test episode repeating a training episode of an old round is marked."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd

from curation.cross_split import cross_split_marks
from curation.near_dup import CallSignatures, NearDupConfig, near_duplicate_marks
from generators.phone.families import FAMILIES, get_family
from generators.writers.template import TemplateWriter
from tests.test_near_dup import _episode


def _planted(n: int = 40):
    """``n`` distinct tasks as earlier episodes (b...) and a paraphrase of each, calls reordered (p...)."""
    writer, rng = TemplateWriter(), random.Random(3)
    prior, prior_steps, cur, cur_steps = [], [], [], []
    for i in range(n):
        fam = get_family(sorted(FAMILIES)[i % len(FAMILIES)])
        task = fam.make_task(1000 + i, 1, writer)
        actions = fam.reference_actions(task)
        e, s = _episode(f"b{i:03d}", task, task.instruction, actions)
        prior.append(e), prior_steps.extend(s)
        variant = task.template.split(".")[0]
        other = rng.choice([t for t in fam.all_templates() if t.startswith(variant + ".") and t != task.template])
        e, s = _episode(f"p{i:03d}", task, writer.word(fam.id, other, task.public_params),
                        rng.sample(actions[:-1], len(actions) - 1) + actions[-1:])
        cur.append(e | {"round_id": "r9"}), cur_steps.extend(s)
    def frame(rows):
        steps = pd.DataFrame(rows)
        return steps.assign(index=steps.groupby("episode_id").cumcount())

    return pd.DataFrame(prior), frame(prior_steps), pd.DataFrame(cur), frame(cur_steps)


def _marks(cur_split: str, prior_split: str):
    prior, prior_steps, cur, cur_steps = _planted()
    prior, cur = prior.assign(split=prior_split), cur.assign(split=cur_split)
    eligible = np.ones(len(cur), dtype=bool)
    num_perm = NearDupConfig().num_perm
    calls = CallSignatures.of(cur, cur_steps, cur_steps["near"], num_perm)
    near = near_duplicate_marks(cur, calls, eligible, pd.Series(dtype=float), NearDupConfig())
    assert near["passed"].all()  # distinct tasks within the round
    return cross_split_marks(near, cur, calls, eligible, pd.Series(dtype=float), NearDupConfig(),
                             prior, CallSignatures.of(prior, prior_steps, prior_steps["near"], num_perm))


def test_a_repeat_of_an_old_episode_of_another_split_is_a_near_duplicate_of_it():
    marks = _marks("test", "train")
    dup_of = {e: json.loads(d).get("duplicate_of") for e, d in zip(marks["episode_id"], marks["detail"], strict=True)}
    found = sum(dup_of[e] == "b" + e[1:] for e in dup_of)
    assert found >= 0.9 * len(marks) and not marks.loc[marks["mark"] == "near_duplicate", "passed"].any()
    assert marks.loc[marks["mark"] == "near_duplicate", "reason"].str.contains("in split train").all()


def test_within_a_split_the_old_rounds_are_left_to_the_history_window():
    marks = _marks("train", "train")
    assert marks["passed"].all()


def test_curation_reads_every_round_beyond_the_window_for_the_cross_split_check(tmp_path):
    from flows.stages.curate import cascade_input
    from tests.curation_data import build_round
    from warehouse.settings import load_settings

    for _ in range(3):
        store, last = build_round(tmp_path / "data", episodes=24, rollouts=1)
    settings = load_settings(None, data_dir=tmp_path / "data", curation={"near_dup_history_rounds": 1})
    inp = cascade_input(store, last, settings)
    assert set(inp.prior_near[0]["round_id"]) == {"r0002"}
    assert set(inp.prior_cross[0]["round_id"]) == {"r0001"} and inp.prior_cross[0]["split"].notna().all()
