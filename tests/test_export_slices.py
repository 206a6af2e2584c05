"""Exports in bounded memory: read a slice of whole tasks at a time (the files are the same bytes whatever
the slice size), and verl's task specs written to their file as they come."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest

from curation import export_source
from curation.export_run import FORMATS
from flows.export_cmd import export
from tests.conftest import export_dir
from tests.curation_data import build_round
from warehouse.query import iter_records


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """Two curated rounds (a task may have rollouts in both) and decisions of every kind."""
    data = tmp_path_factory.mktemp("slices") / "data"
    store, first = build_round(data, episodes=60, rollouts=3)
    _, second = build_round(data, episodes=60, rollouts=3, seed=1)
    rng, decisions = random.Random(3), {}
    for e in iter_records(store.duck(), "episodes"):
        pick = rng.random()
        if pick < 0.5:
            decisions[e.episode_id] = SimpleNamespace(decision="approve", reviewer=rng.choice("ab"),
                                                      first_wrong_step=rng.choice([None, None, 1, 2]),
                                                      recovered=rng.random() < 0.5)
        elif pick < 0.85:
            decisions[e.episode_id] = SimpleNamespace(decision="reject", reviewer="c", first_wrong_step=1,
                                                      recovered=False)
    return store, [first, second], decisions


def _files(out, manifest) -> dict[str, bytes]:
    """The export's files; the manifest without the time it was made."""
    files = {}
    for path in sorted(export_dir(out, manifest).iterdir()):
        data = path.read_bytes()
        if path.name.endswith(".manifest.json"):
            data = json.dumps({k: v for k, v in json.loads(data).items() if k != "created_at"}).encode()
        files[path.name] = data
    return files


def test_slices_are_whole_tasks_in_order_and_cover_every_episode_once(reviewed):
    store, rounds, _ = reviewed
    con = store.duck(rounds)
    slices = export_source.task_slices(con, rounds, size=25)
    assert len(slices) > 4 and slices[0][0] is None and slices[-1][1] is None
    assert all(a[1] == b[0] for a, b in zip(slices, slices[1:]))  # each starts where the one before ends
    per_slice = [[ep["task_id"] for ep in export_source.episode_rows(con, rounds, bounds=b)] for b in slices]
    every = [ep["task_id"] for ep in export_source.episode_rows(con, rounds, bounds=export_source.WHOLE)]
    assert [t for s in per_slice for t in s] == every
    tasks = [set(s) for s in per_slice]
    assert all(not (a & b) for i, a in enumerate(tasks) for b in tasks[i + 1:])  # no task in two slices
    assert max(len(s) for s in per_slice) < 25 + 10  # about the size asked: a slice ends with its last whole task


@pytest.mark.parametrize("fmt,pairs", [(f, None) for f in FORMATS if f != "dpo"] + [("dpo", "both")])
def test_every_format_writes_the_same_bytes_in_slices_as_at_once(reviewed, tmp_path, monkeypatch, fmt, pairs):
    store, rounds, decisions = reviewed
    kw = {"fmt": fmt, "include_verified": True, "round_ids": rounds, "decisions": decisions, "pairs": pairs}
    _, whole = export(store, tmp_path, **kw)  # one slice: the round is smaller than SLICE_EPISODES
    before = _files(tmp_path, whole)
    monkeypatch.setattr(export_source, "SLICE_EPISODES", 7)
    assert len(export_source.task_slices(store.duck(rounds), rounds)) > 10
    _, sliced = export(store, tmp_path, **kw)  # the same --out: verl's configs name their directory
    assert sum(whole["splits"].values()) > 5 and _files(tmp_path, sliced) == before


def test_a_file_attached_as_a_stream_is_written_as_lines_come_and_a_failure_midway_keeps_the_old_export(tmp_path):
    from curation.exporter import ExportWriter

    with ExportWriter(tmp_path, "verl", "jsonl") as writer:
        writer.attach("verl.task-specs.jsonl", "old\n")
        writer.finish({"format": "verl"})
    seen = []

    def lines():
        for i in range(3):
            seen.append(i)
            yield f"{i}\n"
        assert seen == [0, 1, 2] and (writer.version / "verl.task-specs.jsonl").exists()  # written, not gathered
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"), ExportWriter(tmp_path, "verl", "jsonl") as writer:
        writer.attach_lines("verl.task-specs.jsonl", lines())
    assert not writer.version.exists()
    assert (tmp_path / "verl" / "verl.task-specs.jsonl").read_text() == "old\n"
