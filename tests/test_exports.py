"""Every export format on a real curated round: loadable, split by template, manifest true."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import UTC, datetime

import pytest
from sqlmodel import select

from curation import export_common
from curation.formats.openai_chat import check_record
from flows.export_cmd import export
from review_app.agreement import Overlap, in_overlap
from tests.conftest import cli_env, export_dir, flywheel
from tests.curation_data import build_round
from warehouse import state
from warehouse.errors import InputError


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    store, round_id = build_round(tmp_path_factory.mktemp("exports") / "data", episodes=240, rollouts=3)
    return store, round_id


def _rows(out, manifest):
    rows = []
    for name in sorted(manifest["files"]):
        if name.endswith(".jsonl"):
            rows += [json.loads(line) for line in (export_dir(out, manifest) / name).read_text().splitlines()]
    return rows


def _funnel_out(store, held_out: bool = True):
    """Episodes curation lets through; with ``held_out=False`` only those of training splits
    (the challenge split is never written into a training file)."""
    return store.duck().execute(
        """SELECT count(*) FROM (SELECT m.episode_id FROM marks m JOIN episodes e USING (episode_id)
           JOIN tasks t USING (task_id) WHERE "check" IN
           ('schema','replay','exact_duplicate','near_duplicate','selection') AND (? OR t.split <> 'challenge')
           GROUP BY 1 HAVING bool_and(passed))""", [held_out]
    ).fetchone()[0]


@pytest.mark.parametrize("fmt", ["openai", "sharegpt", "hf", "dpo", "rl"])
def test_each_format_writes_split_files_and_a_true_manifest(curated, tmp_path, fmt):
    store, round_id = curated
    result, manifest = export(store, tmp_path, fmt=fmt, include_verified=True)
    assert result.rows > 0 and manifest["schema_version"] and manifest["lineage"]["rounds"] == [round_id]
    total = sum(f["rows"] for f in manifest["files"].values())
    assert total == result.rows == sum(manifest["splits"].values())
    episodes = store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0]
    assert episodes > 240  # the planned 240 plus the later sessions of scenarios (F09)
    assert manifest["funnel"]["total"]["in"] == episodes
    assert manifest["funnel"]["total"]["out"] == _funnel_out(store)
    for split, weights in manifest["mixing_weights"].items():
        assert abs(sum(weights.values()) - 1) < 1e-3
    # every format (tasks too) says why the episodes it read failed: side and category of each failure
    failed = dict(store.duck().execute(
        "SELECT json_extract_string(failure, '$.side') || ':' || json_extract_string(failure, '$.category'), count(*) "
        "FROM outcomes WHERE NOT success GROUP BY 1").fetchall())
    assert failed and manifest["failure_attribution"] == failed
    templates = defaultdict(set)
    if fmt == "hf":
        import datasets

        files = {f["split"]: str(export_dir(tmp_path, manifest) / name) for name, f in manifest["files"].items()}
        ds = datasets.load_dataset("parquet", data_files=files)
        assert sum(len(ds[s]) for s in ds) == result.rows
        row = ds["train"][0]
        assert row["messages"][0]["role"] == "system" and any(m["loss"] for m in row["messages"])
        for s in ds:
            for t in ds[s]["template"]:
                templates[t].add(s)
    else:
        rows = _rows(tmp_path, manifest)
        for r in rows:
            meta = r.get("metadata", r)
            templates[(meta["family"], meta["template"])].add(meta["split"])
        if fmt == "openai":
            assert manifest["episodes_in"] == episodes
            assert sum(manifest["excluded"].values()) + len(rows) == episodes
            assert all(check_record(r) == [] for r in rows)
            assert len(rows) == _funnel_out(store, held_out=False)
        if fmt == "dpo":
            assert set(manifest["pair_kinds"]) <= {"approved_vs_rejected", "success_vs_failure", "cheaper_vs_costlier"}
            assert sum(manifest["pairs"]["by_source"].values()) == len(rows)
            for r in rows:
                assert r["metadata"]["chosen_id"] != r["metadata"]["rejected_id"]
                assert r["prompt"][1]["role"] == "user" and r["chosen"] and r["rejected"]
        if fmt == "rl":
            con = store.duck()
            stats = dict(con.execute(
                "SELECT task_id, count(*) FILTER (WHERE success) FROM episodes JOIN outcomes USING (episode_id) GROUP BY 1"
            ).fetchall())
            assert manifest["tasks_in"] == len(stats) == len(rows) + sum(manifest["excluded"].values())
            for r in rows:
                assert r["group"]["successes"] == stats[r["task_id"]]
                assert r["task_spec"]["seed"] == r["verifier"]["seed"]
    # no template straddles two splits (so none straddles train and test)
    assert all(len(splits) == 1 for splits in templates.values()), {k: v for k, v in templates.items() if len(v) > 1}


def _agent_losses(row):
    return [t["loss"] for t in row["conversations"] if t["from"] in ("function_call", "gpt")]


@pytest.mark.parametrize("recovered", [False, True])
def test_loss_is_masked_from_the_first_wrong_step_or_only_on_it_when_recovered(curated, tmp_path, recovered):
    store, round_id = curated
    _, manifest = export(store, tmp_path / "before", fmt="sharegpt", include_verified=True)
    rows = _rows(tmp_path / "before", manifest)
    # an episode with at least four agent turns, none masked by the heuristics, so every position shows;
    # outside the overlap share, where one approval decides it
    victim = next(r["id"] for r in rows if len(_agent_losses(r)) >= 4 and all(_agent_losses(r))
                  and not in_overlap(r["id"], Overlap().share))
    with store.session() as s:
        s.add(state.Review(episode_id=victim, round_id=round_id, reviewer="ana", decision="approve",
                           first_wrong_step=1, recovered=recovered, decided_at=datetime.now(UTC)))
        s.commit()
    try:
        out = tmp_path / "after"
        _, manifest = export(store, out, fmt="sharegpt", include_verified=True)
        row = next(r for r in _rows(out, manifest) if r["id"] == victim)
        agent = _agent_losses(row)
        expected = [True, False] + [recovered] * (len(agent) - 2)
        assert agent == expected
        assert all(not t["loss"] for t in row["conversations"] if t["from"] in ("human", "observation"))
        assert "ana" in manifest["lineage"]["reviewers"]
        kinds = manifest["loss_mask"]["episodes"]
        assert kinds == {"from_first_wrong_step": int(not recovered), "first_wrong_step_only_recovered": int(recovered)}
        assert "every later assistant turn" in manifest["loss_mask"]["rule"]
        _, manifest = export(store, out, fmt="openai", include_verified=True)
        chat = next(r for r in _rows(out, manifest) if r["metadata"]["episode_id"] == victim)
        weights = [m.get("weight", 1) for m in chat["messages"] if m["role"] == "assistant"]
        assert weights == [int(x) for x in expected]
        import pyarrow.parquet as pq

        _, manifest = export(store, out, fmt="hf", include_verified=True)
        hf_rows = [r for name in manifest["files"] for r in pq.read_table(export_dir(out, manifest) / name).to_pylist()]
        hf_row = next(r for r in hf_rows if r["episode_id"] == victim)
        assert [m["loss"] for m in hf_row["messages"] if m["role"] == "assistant"] == expected
    finally:
        with store.session() as s:  # the module's round is shared: leave it unreviewed
            for r in s.exec(select(state.Review).where(state.Review.episode_id == victim)).all():
                s.delete(r)
            s.commit()


def test_pii_is_scrubbed_and_counted(curated, tmp_path):
    store, _ = curated
    _, manifest = export(store, tmp_path, fmt="openai", include_verified=True)
    text = "".join((export_dir(tmp_path, manifest) / n).read_text() for n in manifest["files"])
    assert manifest["pii_replacements"].get("phone", 0) > 0
    assert "555-01" not in text and "<PHONE_1>" in text
    _, plain = export(store, tmp_path / "plain", fmt="openai", include_verified=True, scrub=False)
    assert plain["pii_replacements"] == "scrubbing off"


def test_a_failed_export_leaves_the_previous_one_intact(curated, tmp_path, monkeypatch):
    store, _ = curated
    _, first = export(store, tmp_path, fmt="openai", include_verified=True)
    shown = export_dir(tmp_path, first)
    before = {n: (shown / n).read_bytes() for n in first["files"]}
    hidden = sorted(p.name for p in tmp_path.iterdir())
    real = export_common.chat_turns
    calls = {"n": 0}

    def boom(*args):
        calls["n"] += 1
        if calls["n"] > 5:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(export_common, "chat_turns", boom)
    with pytest.raises(KeyboardInterrupt):
        export(store, tmp_path, fmt="openai", include_verified=True)
    assert {n: (shown / n).read_bytes() for n in first["files"]} == before
    assert json.loads((shown / "openai-chat.manifest.json").read_text())["files"] == first["files"]
    assert sorted(p.name for p in tmp_path.iterdir()) == hidden  # the failed export's own version is gone


def test_unknown_format_and_round_are_one_line_errors(curated, tmp_path):
    store, _ = curated
    with pytest.raises(InputError, match="unknown format"):
        export(store, tmp_path, fmt="csv", include_verified=True)
    with pytest.raises(InputError, match="unknown round"):
        export(store, tmp_path, fmt="rl", include_verified=True, round_ids=["r9999"])
    res = flywheel("export", "--format", "csv", "--data-dir", str(store.data_dir), env=cli_env(None), cwd=tmp_path)
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "unknown format 'csv'" in res.stderr


def test_a_new_export_removes_versions_no_link_points_at_and_never_what_is_not_ours(tmp_path):
    from curation.exporter import ExportWriter

    out = tmp_path / "out"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep.jsonl").write_text("theirs")
    dead = out / ".openai-chat.export-999999999-0123abcd"  # a killed export's version: no such process
    dead.mkdir(parents=True)
    (dead / "openai-chat.train.jsonl").write_text("partial")
    (dead / "into-elsewhere").symlink_to(tmp_path / "elsewhere")  # removed as a link, never followed
    (out / ".openai-chat.link-999999999").symlink_to(dead.name)  # a link it was making
    alive = out / f".openai-chat.export-{os.getppid()}-0123abcd"  # a process still writing: left alone
    alive.mkdir()
    for other in (".sft.export-999999999-0123abcd", "openai-chat.export-999999999-0123abcd", ".openai-chat.mine"):
        (out / other).mkdir()  # another export's version, or names without our mark: not ours to remove
    with ExportWriter(out, "openai-chat") as writer:
        writer.write("train", {"x": 1})
        first = writer.finish({"format": "openai"})
    assert not dead.exists() and not (out / ".openai-chat.link-999999999").is_symlink()
    assert (tmp_path / "elsewhere" / "keep.jsonl").read_text() == "theirs"
    assert alive.is_dir() and all((out / other).is_dir() for other in (".sft.export-999999999-0123abcd",
                                                                          "openai-chat.export-999999999-0123abcd", ".openai-chat.mine"))
    assert first.manifest_path == out / "openai-chat" / "openai-chat.manifest.json"
    assert (out / "openai-chat" / "openai-chat.train.jsonl").read_text().strip() == '{"x": 1}'
    version = os.readlink(out / "openai-chat")
    with ExportWriter(out, "openai-chat") as writer:  # the next export replaces the version, and removes the old
        writer.write("dev", {"x": 2})
        writer.finish({"format": "openai"})
    assert not (out / version).exists() and sorted(p.name for p in (out / "openai-chat").iterdir()) == [
        "openai-chat.dev.jsonl", "openai-chat.manifest.json"]


@pytest.mark.parametrize("in_the_way", ["a directory", "a file", "a link elsewhere"])
def test_an_export_refuses_a_name_in_the_way_of_its_link_and_writes_nothing(tmp_path, in_the_way):
    from curation.exporter import ExportWriter

    out = tmp_path / "out"
    out.mkdir()
    where = out / "openai-chat"
    if in_the_way == "a directory":
        where.mkdir()
    elif in_the_way == "a file":
        where.write_text("mine")
    else:
        where.symlink_to(tmp_path)
    with pytest.raises(InputError, match="openai-chat.*move it away"):
        ExportWriter(out, "openai-chat")
    assert sorted(p.name for p in out.iterdir()) == ["openai-chat"]


def test_an_export_in_the_flat_layout_of_earlier_versions_is_removed_by_the_first_new_one(tmp_path):
    """Exports once wrote NAME.SPLIT.EXT straight into --out: the first export of the name in the
    new layout removes those (and a killed swap's journal), so no reader takes the stale files."""
    from curation.exporter import ExportWriter

    out = tmp_path / "out"
    out.mkdir()
    for name in ("openai-chat.train.jsonl", "openai-chat.dev.jsonl", ".openai-chat.test.jsonl.tmp-1", "notes.txt"):
        (out / name).write_text("old")
    (out / "openai-chat.manifest.json").write_text(json.dumps(
        {"files": {"openai-chat.train.jsonl": {}, "openai-chat.dev.jsonl": {}, "../notes.txt": {}, "openai-chat": {}}}))
    (out / ".openai-chat.swap.json").write_text(json.dumps(  # hostile names in it are passed over
        {"manifest": [], "remove": [["x"], {"y": 1}, None], "moves": [[".openai-chat.test.jsonl.tmp-1", "openai-chat.test.jsonl"]]}))
    with ExportWriter(out, "openai-chat") as writer:
        writer.write("train", {"x": 1})
        writer.finish({"format": "openai"})
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".openai-chat.export-")) == [
        "notes.txt", "openai-chat"]
    assert (out / "openai-chat" / "openai-chat.train.jsonl").read_text().strip() == '{"x": 1}'


def test_every_format_reads_each_episode_once_for_its_progress_bar(curated, tmp_path):
    from curation.export_run import FORMATS, run_export
    from curation.export_source import episode_count

    store, round_id = curated
    con = store.duck([round_id])
    episodes = store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0]
    assert episode_count(con, [round_id]) == episodes
    for fmt in FORMATS:
        ticks = []
        run_export(con, fmt, tmp_path / fmt, rounds=[round_id], decisions={}, include_verified=True, scrubber=None,
                   on_episode=lambda: ticks.append(1))
        assert len(ticks) == episodes, fmt
