"""Competence that remembers, and the plan's rules with their reasons (pure, no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from generators.competence import Competence, capability_competence, competence_table
from generators.mix import (
    FLOOR,
    KEEP_ALIVE,
    FailureCount,
    MixInputs,
    harness_reports,
    learnability,
    next_mix,
)
from warehouse.contract import FeedbackRecord

T0 = datetime(2026, 3, 2, tzinfo=UTC)
MAXIMA = {f: 3 for f in ("F01", "F02", "F03", "F04", "F05", "F06", "F07")}


def batch(name: str, day: int, results: dict[tuple[str, int], list[bool]], *, model: str = "m1",
          template: str = "v.direct", split: str | None = None, source: str = "trainer") -> list[FeedbackRecord]:
    out = []
    for (fam, level), oks in results.items():
        for i, ok in enumerate(oks):
            out.append(FeedbackRecord(task_id=f"{name}-{fam}-{i}", family=fam, difficulty=level, success=ok,
                                      model=model, batch=name, recorded_at=T0 + timedelta(days=day),
                                      template=template, split=split, source=source))
    return out


def rate(k: int, n: int = 20) -> list[bool]:
    return [True] * k + [False] * (n - k)


def test_an_older_batch_still_counts_when_a_newer_one_omits_a_family():
    old = batch("b1", 0, {("F01", 1): rate(10), ("F05", 1): rate(15), ("F06", 1): rate(14)})
    new = batch("b2", 1, {("F01", 1): rate(12), ("F02", 1): rate(8), ("F03", 1): rate(9), ("F04", 1): rate(11)})
    table = competence_table(old + new)
    f05 = table[("F05", 1)]
    assert f05.n == 20 and f05.evidence == pytest.approx(10.0)  # half weight: one batch older
    assert f05.zone == "learning" and 0.65 < f05.mean < 0.8
    mix = {m.family: m for m in next_mix(sorted(MAXIMA), table, base_difficulty=1, max_difficulty=MAXIMA)}
    assert mix["F05"].reason.startswith("learning at level 1") and "no feedback" not in mix["F05"].reason
    assert mix["F07"].reason.startswith("no feedback yet")
    # Less certain than a family measured in full by the newest batch.
    assert f05.sd > table[("F02", 1)].sd


def test_the_newest_batch_weighs_most():
    table = competence_table(batch("b1", 0, {("F01", 1): rate(0)}) + batch("b2", 1, {("F01", 1): rate(20)}))
    c = table[("F01", 1)]
    assert c.n == 40 and c.successes == 20
    assert c.mean > 0.6  # a plain average would say one half


def test_a_batch_of_another_model_counts_less():
    same = competence_table(batch("b1", 0, {("F01", 1): rate(0)}) + batch("b2", 1, {("F01", 1): rate(20)}))
    other = competence_table(batch("b1", 0, {("F01", 1): rate(0)}, model="old")
                             + batch("b2", 1, {("F01", 1): rate(20)}, model="new"))
    assert other[("F01", 1)].mean > same[("F01", 1)].mean
    assert other[("F01", 1)].models == ("new", "old")


def test_too_little_evidence_is_uncertain_not_mastery_or_failure():
    table = competence_table(batch("b1", 0, {("F01", 1): [True, True], ("F02", 1): [False, False]}))
    assert table[("F01", 1)].zone == table[("F02", 1)].zone == "uncertain"
    mix = {m.family: m for m in next_mix(["F01", "F02"], table, base_difficulty=1, max_difficulty=MAXIMA)}
    assert all(m.weight == 1.0 and m.difficulty == 1 and "too little evidence" in m.reason for m in mix.values())
    assert Competence("X", 1, 0, 0).zone == "unexplored"


def test_mastery_needs_several_batches():
    one = competence_table(batch("b1", 0, {("F01", 1): rate(20)}))
    assert one[("F01", 1)].zone == "learning"
    two = competence_table(batch("b1", 0, {("F01", 1): rate(20)}) + batch("b2", 1, {("F01", 1): rate(19)}))
    assert two[("F01", 1)].zone == "mastered" and two[("F01", 1)].mastered_batches == 2
    # A bad newest batch breaks the streak.
    broken = competence_table(batch("b1", 0, {("F01", 1): rate(20)}) + batch("b2", 1, {("F01", 1): rate(20)})
                              + batch("b3", 2, {("F01", 1): rate(10)}))
    assert broken[("F01", 1)].mastered_batches == 0


def test_mastered_moves_up_a_level_then_keeps_a_share_at_the_top():
    records = (batch("b1", 0, {("F01", 1): rate(20), ("F02", 3): rate(20), ("F03", 1): rate(10)})
               + batch("b2", 1, {("F01", 1): rate(20), ("F02", 3): rate(20), ("F03", 1): rate(10)}))
    mix = {m.family: m for m in next_mix(["F01", "F02", "F03"], competence_table(records), base_difficulty=1,
                                          max_difficulty=MAXIMA)}
    assert (mix["F01"].difficulty, mix["F01"].weight) == (2, 1.0) and "up to level 2" in mix["F01"].reason
    assert (mix["F02"].difficulty, mix["F02"].weight) == (3, KEEP_ALIVE) and "keep-alive" in mix["F02"].reason
    assert mix["F03"].weight == pytest.approx(learnability(table_mean(records, "F03")))


def test_a_high_rate_in_one_batch_probes_the_level_above_until_it_is_measured():
    one = batch("b1", 0, {("F01", 1): rate(19)})
    (f01,) = next_mix(["F01"], competence_table(one), base_difficulty=1, max_difficulty=MAXIMA)
    assert f01.difficulty == 2 and f01.weight == 1.0 and "probe level 2" in f01.reason
    # measured and failing up there: back to level 1 and learning it, no second probe
    probed = one + batch("b2", 1, {("F01", 2): rate(1)})
    (f01,) = next_mix(["F01"], competence_table(probed), base_difficulty=1, max_difficulty=MAXIMA)
    assert f01.difficulty == 1 and "learning at level 1" in f01.reason
    # a high rate well short of mastery's threshold is not a probe
    (f01,) = next_mix(["F01"], competence_table(batch("b1", 0, {("F01", 1): rate(15)})), base_difficulty=1,
                      max_difficulty=MAXIMA)
    assert f01.difficulty == 1


def table_mean(records, fam):
    return competence_table(records)[(fam, 1)].mean


def test_learnability_peaks_at_one_half_with_a_floor():
    assert learnability(0.5) == 1.0
    assert learnability(0.5) > learnability(0.7) > learnability(0.9)
    assert learnability(0.99) == FLOOR


def test_failing_at_the_lowest_level_gets_a_failure_curriculum_of_easier_variants():
    records = (batch("b1", 0, {("F04", 1): rate(0)}, template="hard_one.direct")
               + batch("b1", 0, {("F04", 1): rate(2)}, template="hard_two.terse")
               + batch("b1", 0, {("F04", 1): rate(1)}, template="easier.direct")
               + batch("b1", 0, {("F04", 1): rate(3)}, template="easiest.polite")
               + batch("b1", 0, {("F05", 2): rate(0)}))
    table = competence_table(records)
    variants = competence_table(records, by_variant=True)
    assert table[("F04", 1)].zone == "failing"
    mix = {m.family: m for m in next_mix(["F04", "F05"], table, base_difficulty=1, max_difficulty=MAXIMA,
                                          inputs=MixInputs(max_difficulty=MAXIMA, variants=variants))}
    f04 = mix["F04"]
    assert f04.curriculum == "failure" and f04.difficulty == 1 and f04.weight < 1.0
    assert f04.variants == ("easiest", "hard_two")  # the upper half by measured success
    assert "failure curriculum: easier variants easiest, hard_two" in f04.reason
    # Failing above the lowest level steps down instead.
    assert (mix["F05"].difficulty, mix["F05"].curriculum) == (1, "")


def test_variants_that_fail_alike_are_none_of_them_easier():
    # every variant failed every time: none is easier, whatever the alphabet says
    records = sum((batch("b1", 0, {("F04", 1): rate(0)}, template=f"{v}.direct") for v in ("alpha", "beta", "gamma")),
                  [])
    table, variants = competence_table(records), competence_table(records, by_variant=True)
    (f04,) = next_mix(["F04"], table, base_difficulty=1, max_difficulty=MAXIMA,
                      inputs=MixInputs(max_difficulty=MAXIMA, variants=variants))
    assert f04.curriculum == "failure" and f04.variants == ()
    assert "any variant (no train variant measured easier)" in f04.reason


def test_a_capability_gap_boosts_its_families():
    records = batch("b1", 0, {("F01", 1): rate(14), ("F02", 1): rate(14), ("F07", 1): rate(5)})
    caps = {"F01": "tool_use", "F02": "tool_use", "F07": "memory"}
    table = competence_table(records)
    plain = {m.family: m for m in next_mix(list(caps), table, base_difficulty=1, max_difficulty=MAXIMA)}
    mix = {m.family: m for m in next_mix(list(caps), table, base_difficulty=1, max_difficulty=MAXIMA,
                                          inputs=MixInputs(max_difficulty=MAXIMA, capabilities=caps))}
    assert mix["F07"].weight == pytest.approx(plain["F07"].weight * 1.5)
    assert "capability gap: memory" in mix["F07"].reason
    assert mix["F01"].weight == plain["F01"].weight
    pooled = capability_competence(table, {f: [c] for f, c in caps.items()})
    assert pooled["tool_use"].n == 40 and pooled["memory"].n == 20


def test_model_side_failures_target_tasks_and_harness_side_ones_are_reported():
    table = competence_table(batch("b1", 0, {("F01", 1): rate(10), ("F02", 1): rate(10)}))
    failures = [FailureCount("F01", "model", "wrong_argument", 6), FailureCount("F01", "model", "premature_finish", 2),
                FailureCount("F02", "model", "recovery", 2), FailureCount("F02", "harness", "tool_not_exposed", 5)]
    mix = {m.family: m for m in next_mix(["F01", "F02"], table, base_difficulty=1, max_difficulty=MAXIMA,
                                          inputs=MixInputs(max_difficulty=MAXIMA, failures=failures))}
    assert mix["F01"].weight == pytest.approx(1.0 + 0.5 * 0.8)
    assert "wrong_argument 6, premature_finish 2" in mix["F01"].reason
    assert mix["F02"].weight == pytest.approx(1.0 + 0.5 * 0.2)
    reports = harness_reports(failures)
    assert reports == ["F02: harness-side failures (tool_not_exposed 5): fix the harness (skills, exposed tools, "
                       "retrieval, memory), not the data"]


def test_a_test_split_eval_is_reported_not_planned_from():
    assert competence_table(batch("b1", 0, {("F01", 1): rate(20)}, split="test", source="eval")) == {}
    # A trainer's own results count whatever split their tasks came from; a dev eval counts.
    assert competence_table(batch("b1", 0, {("F01", 1): rate(20)}, split="test"))[("F01", 1)].n == 20
    assert competence_table(batch("b1", 0, {("F01", 1): rate(20)}, split="dev", source="eval"))[("F01", 1)].n == 20


def test_the_level_decided_at_is_the_hardest_one_not_failed():
    records = (batch("b1", 0, {("F01", 3): rate(0), ("F01", 2): rate(0)})  # fails 3 and 2: down to 1
               + batch("b1", 0, {("F02", 1): rate(12), ("F02", 2): rate(0)}))  # moved up too early: back to 1
    mix = {m.family: m for m in next_mix(["F01", "F02"], competence_table(records), base_difficulty=1,
                                          max_difficulty=MAXIMA)}
    assert mix["F01"].difficulty == 1 and mix["F01"].reason.startswith("failing level 2")
    assert mix["F02"].difficulty == 1 and mix["F02"].reason.startswith("learning at level 1")


def test_a_level_with_too_little_evidence_does_not_hide_failure_below_it():
    records = batch("b1", 0, {("F03", 1): rate(0), ("F03", 2): rate(0), ("F03", 3): [False, False]})
    [m] = next_mix(["F03"], competence_table(records), base_difficulty=1, max_difficulty=MAXIMA)
    assert m.curriculum == "failure" and m.difficulty == 1


def test_a_failure_curriculum_draws_train_variants_never_the_held_out_ones_an_eval_measured(tmp_path):
    """A dev eval measures held-out variants: its better one (archive_mail) is no curriculum, as a round of
    it would add no training row. The trainer's results on train variants name the easier ones."""
    from flows.planning import mix_for
    from warehouse.settings import load_settings
    from warehouse.store import Store

    dev = sum((batch("eval-1", 1, {("F01", 1): rate(k, 10)}, template=f"{v}.direct", split="dev", source="eval")
               for v, k in (("archive_mail", 2), ("complete_todo", 0), ("build_playlist", 0))), [])
    settings = load_settings(None, data_dir=tmp_path)
    (f01,), _ = mix_for(Store(tmp_path), settings, ["F01"], records=dev)
    assert f01.curriculum == "failure" and f01.variants == ()
    assert "any variant" in f01.reason
    trained = dev + sum((batch("t-1", 0, {("F01", 1): rate(k, 10)}, template=f"{v}.direct", split="train")
                         for v, k in (("set_timer", 3), ("delete_note", 0), ("add_todo", 0))), [])
    (f01,), _ = mix_for(Store(tmp_path), settings, ["F01"], records=trained)
    assert f01.curriculum == "failure" and f01.variants == ("set_timer",)
    only_dev = load_settings(None, data_dir=tmp_path, round={"splits": ["dev"]})
    (f01,), _ = mix_for(Store(tmp_path), only_dev, ["F01"], records=trained)
    assert f01.variants == ()  # a round of held-out variants only has no train variant to lean on
