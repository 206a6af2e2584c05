"""What reaches training is what people approved: preference pairs people first (never an
approved episode rejected, never a rejected one chosen), step pairs at the divergence, the
RL set under the release and the scrubber, manifests that name every approved episode left
out, and the challenge split never in a training file. On a real curated round."""

from __future__ import annotations

import json
import re

import pytest
from sqlmodel import delete

from curation.export_source import episode_rows, episodes_with_steps, masked_steps
from curation.formats.openai_chat import chat_turns
from curation.formats.views import step_from_row
from curation.selection import sound_reason
from flows.export_cmd import export, export_release
from review_app import decisions, release
from review_app.data import Overlap
from review_app.final import final_decisions
from tests.conftest import cli_env, export_dir, flywheel
from tests.curation_data import build_round
from tests.review_fixtures import make_accounts
from warehouse import review_tables as rt
from warehouse import state

OV = Overlap(0.0, 2)  # one reviewer decides


def _challenge_round(store) -> str:
    """A second round whose tasks are held out as ``challenge`` (at the highest difficulty)."""
    from datetime import UTC, datetime

    from flows.stages import curate_round
    from generators.collect import run_episode
    from generators.phone.families import FAMILIES
    from generators.policies import ScriptedPolicy

    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=8, seed=9, plan={})
    tasks = [FAMILIES[f].make_task(1000 + i, 3).model_copy(update={"split": "challenge"})
             for i, f in enumerate(["F01", "F02", "F03", "F04"])]
    policy = ScriptedPolicy(seed=5)
    recs = [run_episode(t, policy, rollout=k, round_id=rnd.id, batch_id="b", created_at=datetime.now(UTC))
            for t in tasks for k in range(2)]
    store.commit_unit(rnd.id, "batch-0000", {"tasks": tasks})
    store.commit_unit(rnd.id, "s00000", {"episodes": [r.episode for r in recs], "steps": [x for r in recs for x in r.steps],
                                         "outcomes": [r.outcome for r in recs]})
    curate_round(store, rnd.id)
    with store.session() as s:
        state.finish_round(session=s, round_id=rnd.id)
    return rnd.id


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    store, round_id = build_round(tmp_path_factory.mktemp("trust") / "data", episodes=150, rollouts=3)
    _challenge_round(store)
    make_accounts(store)
    return store, round_id


@pytest.fixture
def world(built):
    store, round_id = built
    yield store, round_id
    with store.session() as s:  # the round is shared by the module's tests: leave it unreviewed
        for table in (state.Review, rt.Adjudication, rt.Release, rt.ReviewDraft):
            s.exec(delete(table))
        s.commit()


def _export(store, out, **kw):
    """An export as the tests' reviewers decide it: one reviewer settles an episode. Under the
    default overlap a tenth of the episodes wait for a second reviewer, so a single decision on
    one of those would be ``partial`` and silently count for nothing."""
    return export(store, out, decisions=final_decisions(store, None, OV), **kw)


def _episodes(store, round_id=None) -> list[dict]:
    with store.session() as s:
        rounds = [round_id] if round_id else [r.id for r in state.list_rounds(session=s)]
    return list(episode_rows(store.duck(), rounds))


def _rows(out, manifest) -> list[dict]:
    return [json.loads(line) for name in sorted(manifest["files"]) for line in (export_dir(out, manifest) / name).read_text().splitlines()]


def _decide(store, round_id, eid, decision, **kw):
    if decision == "reject":
        kw.setdefault("reason_code", "wrong_result")
    decisions.record_decision(store, reviewer="ann", round_id=round_id, episode_id=eid, decision=decision, **kw)


def _trainable(ep) -> bool:
    return sound_reason(ep) is None and (ep["task_split"] or ep["split"]) != "challenge"


def test_pairs_never_reject_an_approved_episode_nor_choose_a_rejected_one(world, tmp_path):
    store, round_id = world
    by_task: dict[str, list[dict]] = {}
    for ep in _episodes(store, round_id):
        if _trainable(ep):
            by_task.setdefault(ep["task_id"], []).append(ep)
    # people disagree with the verifier: the failure is approved, a success rejected, another success unreviewed
    # (a failure with a step the heuristics masked is no episode pair's chosen side, approved or not)
    task, eps = next((t, e) for t, e in sorted(by_task.items())
                     if sum(not x["success"] and not masked_steps(x) for x in e) >= 1
                     and sum(bool(x["success"]) for x in e) >= 2)
    failure = next(x["episode_id"] for x in eps if not x["success"] and not masked_steps(x))
    s1, s2 = [x["episode_id"] for x in eps if x["success"]][:2]
    _decide(store, round_id, failure, "approve")
    _decide(store, round_id, s1, "reject")
    approved, rejected = {failure}, {s1}
    for verified in (True, False):
        out = tmp_path / f"v{verified}"
        _, manifest = _export(store, out, fmt="dpo", include_verified=verified, pairs="both")
        rows = _rows(out, manifest)
        assert rows
        for r in rows:
            assert r["metadata"]["rejected_id"] not in approved and r["metadata"]["chosen_id"] not in rejected
        mine = [r["metadata"] for r in rows if r["metadata"]["task_id"] == task]
        # people's pair comes first for the task, then the verifier's
        assert (mine[0]["chosen_id"], mine[0]["rejected_id"], mine[0]["source"], mine[0]["kind"]) == (
            failure, s1, "human", "approved_vs_rejected")
        assert [m["source"] for m in mine] == sorted((m["source"] for m in mine), key=lambda s: s != "human")
        sources = manifest["pairs"]["by_source"]
        assert sources["human"] == sum(r["metadata"]["source"] == "human" for r in rows) >= 1
        assert sources["verifier"] == sum(r["metadata"]["source"] == "verifier" for r in rows)
        # the unreviewed success is rejected only as the verifier's costlier alternative
        s2_ep = next(x for x in eps if x["episode_id"] == s2)
        for m in mine:
            if m["rejected_id"] == s2:
                assert (m["source"], s2_ep["m_selection"]) == ("verifier", "alternative")


def _turns(store, round_id) -> dict[str, list]:
    return {ep["episode_id"]: chat_turns(ep["instruction"], [step_from_row(r) for r in steps])
            for ep, steps in episodes_with_steps(store.duck(), [round_id])}


def _plain(msg: dict) -> str:
    """A message without its shape: arguments as objects (dpo) or JSON text (chat turns)."""
    calls = [(c["function"]["name"], a if isinstance(a := c["function"]["arguments"], dict) else json.loads(a))
             for c in msg.get("tool_calls") or []]
    return json.dumps([msg["role"], msg.get("content"), calls], sort_keys=True)


def test_step_pairs_share_the_prefix_and_differ_at_the_divergence(world, tmp_path):
    store, round_id = world
    _, manifest = _export(store, tmp_path / "a", fmt="dpo", include_verified=True, pairs="step", scrub=False)
    rows = _rows(tmp_path / "a", manifest)
    assert rows and manifest["pairs"]["by_level"] == {"step": len(rows)}
    turns = _turns(store, round_id)
    success = {e["episode_id"]: e["success"] for e in _episodes(store, round_id)}
    for r in rows:
        meta = r["metadata"]
        c, x = turns[meta["chosen_id"]], turns[meta["rejected_id"]]
        at = len(r["prompt"])
        assert success[meta["chosen_id"]] and not success[meta["rejected_id"]]
        assert [_plain(m) for m in r["prompt"]] == [_plain(m) for m, _ in c[:at]] == [_plain(m) for m, _ in x[:at]]
        assert r["prompt"][-1]["role"] in ("user", "tool")  # the prefix ends where the agent acts next
        assert [_plain(m) for m in r["chosen"]] == [_plain(c[at][0])] and [_plain(m) for m in r["rejected"]] == [_plain(x[at][0])]
        assert _plain(r["chosen"][0]) != _plain(r["rejected"][0])
        assert meta["divergence_step"] == c[at][1] and meta["level"] == "step"
    # people marked the chosen rollout wrong at the divergence: that turn is chosen no more;
    # marked wrong earlier but recovered, it still is
    meta = rows[0]["metadata"]
    _decide(store, round_id, meta["chosen_id"], "approve", first_wrong_step=meta["divergence_step"])
    _, again = _export(store, tmp_path / "b", fmt="dpo", include_verified=True, pairs="step", scrub=False)
    key = (meta["chosen_id"], meta["rejected_id"])
    assert key not in {(r["metadata"]["chosen_id"], r["metadata"]["rejected_id"]) for r in _rows(tmp_path / "b", again)}
    # marked wrong earlier but recovered: only that step gets no loss, so its turn at the divergence
    # is still chosen (by people now, against the verifier's failure)
    later = [r["metadata"] for r in rows if r["metadata"]["divergence_step"] > 0]
    assert later, "no step pair diverges after the first step: the recovered case is not exercised"
    meta = later[0]
    _decide(store, round_id, meta["chosen_id"], "approve", first_wrong_step=0, recovered=True)
    _, third = _export(store, tmp_path / "c", fmt="dpo", include_verified=True, pairs="step", scrub=False)
    got = {(r["metadata"]["chosen_id"], r["metadata"]["rejected_id"]): r["metadata"]["source"]
           for r in _rows(tmp_path / "c", third)}
    assert got.get((meta["chosen_id"], meta["rejected_id"])) == "verifier"  # chosen by people, rejected by the verifier


def test_the_rl_set_honours_the_release_verified_and_scrubbing(world, tmp_path):
    store, round_id = world
    eps = [e for e in _episodes(store, round_id) if _trainable(e)]
    _, manifest = _export(store, tmp_path / "none", fmt="rl", include_verified=False)
    assert manifest["files"] == {} and manifest["excluded"]["no_approved_rollout"] > 0
    first, second = eps[0], next(e for e in eps if e["task_id"] != eps[0]["task_id"])
    _decide(store, round_id, first["episode_id"], "approve")
    rel = release.approve_release(store, lead="lea", dataset_version="v1", round_ids=[round_id],
                                  sampling_plan={"episodes": 10, "families": {"F01": 1.0}}, overlap=OV)
    _decide(store, round_id, second["episode_id"], "approve")  # after the release: not in it
    out = tmp_path / "rel"
    _, manifest = export_release(store, out, rel.id, fmt="rl")
    assert [r["task_id"] for r in _rows(out, manifest)] == [first["task_id"]]
    assert manifest["release"]["id"] == rel.id and sum(manifest["splits"].values()) == 1
    assert manifest["tasks_in"] == 1 + sum(manifest["excluded"].values())
    # --verified: the tasks of the same episodes the SFT export takes, by the same rule
    _, sft = _export(store, tmp_path / "sft", fmt="openai", include_verified=True)
    out = tmp_path / "ver"
    _, manifest = _export(store, out, fmt="rl", include_verified=True)
    rows = _rows(out, manifest)
    assert {r["task_id"] for r in rows} == {r["metadata"]["task_id"] for r in _rows(tmp_path / "sft", sft)}
    # scrubbed, and the manifest counts exactly the placeholders in the file
    text = "".join((export_dir(out, manifest) / n).read_text() for n in manifest["files"])
    assert manifest["pii_replacements"].get("phone", 0) > 0 and manifest["pii_replacements"].get("email", 0) > 0
    for kind, n in manifest["pii_replacements"].items():
        assert len(re.findall(rf"<{kind.upper()}_\d+>", text)) == n, kind
    assert not re.search(r"555-01\d\d|@example\.", text)
    for r in rows:  # instruction and spec agree on placeholders; ids are left alone
        assert r["task_spec"]["instruction"] == r["instruction"] and r["task_spec"]["task_id"] == r["task_id"]
    # --round: only that round's tasks (the challenge round's are not even seen)
    _, one = _export(store, tmp_path / "one", fmt="rl", include_verified=True, round_ids=[round_id])
    n_tasks = store.duck([round_id]).execute("SELECT count(DISTINCT task_id) FROM episodes").fetchone()[0]
    def challenge_tasks(rounds=None) -> int:
        return store.duck(rounds).execute(
            "SELECT count(DISTINCT task_id) FROM tasks WHERE split = 'challenge'").fetchone()[0]

    assert one["tasks_in"] == n_tasks
    assert one["excluded"].get("held_out_split", 0) == challenge_tasks([round_id])
    assert manifest["excluded"]["held_out_split"] == challenge_tasks() > challenge_tasks([round_id])
    _, plain = _export(store, tmp_path / "plain", fmt="rl", include_verified=True, scrub=False)
    assert plain["pii_replacements"] == "scrubbing off"
    assert re.search(r"555-01\d\d", "".join((export_dir(tmp_path / "plain", plain) / n).read_text() for n in plain["files"]))


@pytest.mark.parametrize("fmt", ["openai", "sharegpt", "hf", "dpo", "rl"])
def test_manifests_count_every_left_out_episode_and_never_write_the_challenge_split(world, tmp_path, fmt):
    store, round_id = world
    eps = _episodes(store)
    challenge = [e for e in eps if (e["task_split"] or e["split"]) == "challenge"]
    dup = next(e for e in eps if e["p_exact_duplicate"] is False and e["task_split"] != "challenge")
    assert challenge and dup
    _decide(store, round_id, dup["episode_id"], "approve")
    _decide(store, challenge[0]["round_id"], challenge[0]["episode_id"], "approve")
    out = tmp_path / fmt
    result, manifest = _export(store, out, fmt=fmt, include_verified=True)
    assert not any(".challenge." in name for name in manifest["files"]) and "challenge" not in manifest["splits"]
    assert not [p for p in export_dir(out, manifest).iterdir() if "challenge" in p.name]
    unit = "tasks" if fmt == "rl" else "episodes"
    n_challenge = len({e["task_id"] for e in challenge}) if fmt == "rl" else len(challenge)
    assert manifest["excluded"]["held_out_split"] == n_challenge
    assert manifest["excluded_by_split"]["challenge"] == {"held_out_split": n_challenge}
    for reason, n in manifest["excluded"].items():
        assert sum(c.get(reason, 0) for c in manifest["excluded_by_split"].values()) == n
    if fmt != "dpo":  # one row per episode (task): in + left out = seen
        assert manifest[f"{unit}_in"] == result.rows + sum(manifest["excluded"].values())
    assert sum(manifest["splits"].values()) == result.rows
    named = manifest["approved_left_out"]
    if fmt == "rl":  # the duplicate's task is in through its other rollouts, or named
        assert named["count"] in (0, 1)
    else:
        assert named["count"] == 1 and named["episodes"] == [{
            "episode_id": dup["episode_id"], "task_id": dup["task_id"], "reason": "duplicate",
            "problem": "an exact duplicate of another episode"}]


def test_the_export_command_warns_once_about_approved_episodes_left_out(world, tmp_path):
    store, round_id = world
    eps = _episodes(store, round_id)
    dups = [e for e in eps if e["p_exact_duplicate"] is False and e["task_split"] != "challenge"][:2]
    for e in dups:
        _decide(store, round_id, e["episode_id"], "approve")
    res = flywheel("export", "--format", "openai", "--out", str(tmp_path / "x"), "--data-dir", str(store.data_dir),
                   env=cli_env(None, FLYWHEEL_REVIEW_OVERLAP="0"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and f"{len(dups)} approved episode(s) left out" in warnings[0]
    assert "Traceback" not in res.stderr
    as_json = flywheel("export", "--format", "openai", "--out", str(tmp_path / "j"), "--json", "--data-dir",
                       str(store.data_dir), env=cli_env(None, FLYWHEEL_REVIEW_OVERLAP="0"), cwd=tmp_path)
    assert as_json.returncode == 0 and "rows" in json.loads(as_json.stdout)  # the document alone on stdout
    # and the warning on stderr, as without --json
    assert as_json.stderr.splitlines() == [warnings[0].replace(f"{tmp_path / 'x'}", f"{tmp_path / 'j'}")]
    res = flywheel("export", "--format", "openai", "--pairs", "step", "--data-dir", str(store.data_dir),
                   env=cli_env(None), cwd=tmp_path)
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "--pairs is for --format dpo" in res.stderr
    res = flywheel("export", "--format", "dpo", "--pairs", "turns", "--data-dir", str(store.data_dir),
                   env=cli_env(None), cwd=tmp_path)
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "unknown --pairs 'turns'" in res.stderr


def _call(name, args, cid, step=0):
    return ({"role": "assistant", "tool_calls": [{"id": cid, "type": "function",
                                                  "function": {"name": name, "arguments": json.dumps(args)}}]}, step)


def _tool(content, cid):
    return ({"role": "tool", "tool_call_id": cid, "content": content}, None)


def test_divergence_needs_the_same_turns_and_the_same_results_before_it():
    from curation.formats.dpo import Rollout, divergence, step_pairs

    head = (({"role": "system", "content": "s"}, None), ({"role": "user", "content": "u"}, None))
    a = head + (_call("find", {"q": "ann"}, "c1"), _tool("[1]", "c1"), _call("send", {"to": 1}, "c2", 1))
    b = head + (_call("find", {"q": "ann"}, "x9"), _tool("[1]", "x9"), _call("send", {"to": 2}, "x8", 1))
    assert divergence(a, b) == 4  # call ids differ, nothing else does until the send
    other_result = head + (_call("find", {"q": "ann"}, "c1"), _tool("[2]", "c1"), _call("send", {"to": 2}, "c2"))
    assert divergence(a, other_result) is None  # the same action saw another result: no shared prefix
    assert divergence(a, a) is None and divergence(a, a[:4]) is None  # no difference, or one ends first
    assert divergence(a, head + (_call("find", {"q": "bob"}, "c1"),)) == 2  # the very first turn differs
    good = Rollout("good", "chosen", "verifier", turns=a)
    bad = Rollout("bad", "rejected", "verifier", "failure", turns=b)
    costly = Rollout("costly", "rejected", "verifier", "costlier", turns=b)
    [pair] = step_pairs([good, bad, costly])  # a costlier success is not a failing rollout
    assert (pair.chosen.item, pair.rejected.item, pair.at) == ("good", "bad", 4)
    marked = Rollout("good", "chosen", "human", turns=a, no_loss_from=0)  # people: wrong from step 0 on
    assert step_pairs([marked, bad]) == []
    recovered = Rollout("good", "chosen", "human", turns=a, no_loss_from=0, recovered=True)  # only step 0
    assert len(step_pairs([recovered, bad])) == 1
    assert step_pairs([Rollout("good", "chosen", "human", turns=a, no_loss_from=1, recovered=True), bad]) == []
    # an episode pair has no mask: a rollout with a turn people marked wrong is never its chosen side
    from curation.formats.dpo import episode_pairs

    rejected = Rollout("no", "rejected", "human", turns=b)
    for wrong in (marked, recovered):
        assert episode_pairs([wrong, rejected, bad]) == []
    clean = Rollout("clean", "chosen", "human", turns=a)
    pairs = episode_pairs([wrong, clean, rejected, bad])
    assert [(p.chosen.item, p.rejected.item) for p in pairs] == [("clean", "no"), ("clean", "bad")]
    with pytest.raises(ValueError):
        from curation.formats.dpo import Pair, _check

        _check(Pair(bad, good, "x", "human").chosen, good)
