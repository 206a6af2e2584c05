"""Issue 9's "done when": a round with two rollouts per task, reviewed through the app (its
own decision functions, and the episode view's buttons for a few episodes; the Chromium
test presses the recovered key itself), then exported in every format. No approved
episode is the rejected side of a pair, every approved episode with a first wrong step
has no loss from that step on (or only on it, when recovered), and no variant crosses
splits."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
from streamlit.testing.v1 import AppTest

from curation.export_source import episode_rows, episodes_with_steps, masked_steps
from curation.formats.openai_chat import chat_turns
from curation.formats.views import step_from_row
from curation.selection import sound_reason
from flows.export_cmd import export_release
from review_app import decisions, release
from review_app.agreement import Overlap
from review_app.final import final_decisions
from review_app.plain_text import as_text as shown
from tests.conftest import export_dir
from tests.curation_data import build_round
from tests.review_fixtures import PASSWORD, make_accounts
from warehouse.contract import variant_of

APP = str(Path(__file__).resolve().parents[1] / "review_app" / "app.py")
OV = Overlap(0.0, 2)


def _app_review(store, eid: str, step: int, recovered: bool) -> None:
    """Ann opens the episode in the app, marks the first wrong step, maybe 'recovered', approves."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="signin_name").input("ann")
    at.text_input(key="signin_password").input(PASSWORD)
    at.button[0].click().run()
    at.session_state["episode_id"] = eid
    at.session_state["nav_to"] = "Episode"
    at.run()
    for _ in range(step):
        at.button(key="kb_step_next").click().run()
    at.button(key="kb_mark_error").click().run()
    if recovered:
        at.button(key="kb_recovered").click().run()
    at.button(key="kb_approve").click().run()
    # the page's own errors, not a step's tool error that the conversation view shows in red
    assert not at.exception and not [shown(e.value) for e in at.error if not re.match(r"^[A-Z_]+: ", shown(e.value))]


def _rows(out: Path, manifest) -> list[dict]:
    rows = []
    for name in sorted(manifest["files"]):
        if name.endswith(".parquet"):
            rows += pq.read_table(export_dir(out, manifest) / name).to_pylist()
        else:
            rows += [json.loads(line) for line in (export_dir(out, manifest) / name).read_text().splitlines()]
    return rows


def test_a_reviewed_round_exports_what_people_approved_with_the_loss_where_they_put_it(tmp_path, monkeypatch):
    store, rid = build_round(tmp_path / "data", episodes=80, rollouts=2)
    make_accounts(store)
    monkeypatch.setenv("FLYWHEEL_DATA_DIR", str(store.data_dir))
    monkeypatch.setenv("FLYWHEEL_REVIEW_OVERLAP", "0")
    eps = [e for e in episode_rows(store.duck(), [rid]) if sound_reason(e) is None]
    held_out = {e["episode_id"] for e in eps if (e.get("task_split") or e.get("split")) == "challenge"}
    steps = {ep["episode_id"]: ep["n_steps"] for ep in eps}
    by_task = defaultdict(list)
    for e in eps:
        by_task[e["task_id"]].append(e)
    marks: dict[str, tuple[int, bool]] = {}  # approved episode -> (first wrong step, recovered)
    approved, rejected = set(), set()
    via_app = 0
    for i, (task, group) in enumerate(sorted(by_task.items())):
        for e in sorted(group, key=lambda x: not x["success"]):
            eid = e["episode_id"]
            if not e["success"] and i % 3 == 0:  # people disagree with the verifier now and then
                decisions.record_decision(store, reviewer="ann", round_id=rid, episode_id=eid, decision="approve")
                approved.add(eid)
            elif not e["success"] or i % 5 == 1:
                decisions.record_decision(store, reviewer="bob", round_id=rid, episode_id=eid, decision="reject",
                                          reason_code="wrong_result")
                rejected.add(eid)
            elif steps[eid] >= 3:
                step, recovered = 1, i % 2 == 0
                if via_app < 2:
                    _app_review(store, eid, step, recovered)
                    via_app += 1
                else:
                    decisions.record_decision(store, reviewer="ann", round_id=rid, episode_id=eid, decision="approve",
                                              first_wrong_step=step, recovered=recovered)
                marks[eid] = (step, recovered)
                approved.add(eid)
            else:
                decisions.record_decision(store, reviewer="ann", round_id=rid, episode_id=eid, decision="approve")
                approved.add(eid)
    assert via_app == 2 and any(r for _, r in marks.values()) and any(not r for _, r in marks.values())
    assert len(rejected) >= 3 and sum(1 for e in eps if e["episode_id"] in approved and not e["success"]) >= 1
    finals = final_decisions(store, None, OV)
    assert {e for e, f in finals.items() if f.decision == "approve"} == approved
    assert {e: (f.first_wrong_step, f.recovered) for e, f in finals.items() if f.first_wrong_step is not None} == marks

    turns = {ep["episode_id"]: (chat_turns(ep["instruction"], [step_from_row(r) for r in st]), masked_steps(ep))
             for ep, st in episodes_with_steps(store.duck(), [rid])}
    rel = release.approve_release(store, lead="lea", dataset_version="v1", round_ids=[rid],
                                  sampling_plan={"episodes": 10, "families": {"F01": 1.0}}, overlap=OV)
    variants = defaultdict(set)
    for fmt in ("openai", "sharegpt", "hf", "dpo", "rl"):
        out = tmp_path / fmt
        kw = {"pairs": "both"} if fmt == "dpo" else {}
        _, manifest = export_release(store, out, rel.id, fmt=fmt, scrub=False, **kw)
        rows = _rows(out, manifest)
        assert rows, fmt
        for r in rows:
            meta = r.get("metadata") or r
            variants[(meta["family"], variant_of(meta["template"]))].add(meta["split"])
        if fmt == "dpo":
            for r in rows:
                assert r["metadata"]["rejected_id"] not in approved, "an approved episode is a rejected side"
                assert r["metadata"]["chosen_id"] not in rejected, "a rejected episode is a chosen side"
            assert manifest["pairs"]["by_source"]["human"] > 0
            continue
        if fmt == "rl":
            continue
        # the challenge split is never written, nor an episode whose every agent turn gets no loss
        untrainable = {e for e, (k, rec) in marks.items() if all(
            (i == k if rec else i >= k) or i in turns[e][1] for m, i in turns[e][0] if m["role"] == "assistant")}
        trained = {e: m for e, m in marks.items() if e not in held_out | untrainable}
        assert manifest["excluded"].get("no_trainable_turn", 0) == len(untrainable - held_out)
        assert manifest["loss_mask"]["episodes"] == {
            "from_first_wrong_step": sum(not r for _, r in trained.values()),
            "first_wrong_step_only_recovered": sum(r for _, r in trained.values())}
        exported = {(r.get("metadata") or r).get("episode_id") or r.get("id"): r for r in rows}
        assert set(exported) == approved - held_out - untrainable  # what people approved, held-out split aside
        for eid, (k, recovered) in trained.items():
            chat, heuristic = turns[eid]
            indices = [i for m, i in chat if m["role"] == "assistant"]
            row = exported[eid]
            if fmt == "openai":
                losses = [m.get("weight", 1) == 1 for m in row["messages"] if m["role"] == "assistant"]
            elif fmt == "hf":
                losses = [m["loss"] for m in row["messages"] if m["role"] == "assistant"]
            else:  # sharegpt: one flag per call (or text) of a turn; the scripted agent makes one call a turn
                losses = [t["loss"] for t in row["conversations"] if t["from"] == "function_call"]
            assert len(losses) == len(indices)
            for idx, loss in zip(indices, losses, strict=True):
                masked = idx == k if recovered else idx >= k
                assert loss is (not masked and idx not in heuristic), (fmt, eid, idx, k, recovered)
    assert all(len(s) == 1 for s in variants.values()), {v: s for v, s in variants.items() if len(s) > 1}
    assert not any("challenge" in s for s in variants.values())

