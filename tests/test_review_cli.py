"""`flywheel reviewer add` and `flywheel export --release` as a user runs them."""

from __future__ import annotations

import json
import socket
import subprocess
from datetime import datetime, timedelta

from review_app import decisions, release
from review_app.data import Overlap
from tests.conftest import cli_env, flywheel, flywheel_executable, free_port
from tests.review_fixtures import make_round
from warehouse import review_tables as rt
from warehouse.store import Store


def _one_line(proc, needle: str) -> None:
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def _add(tmp_path, data, *args, password="s3cret-pass"):
    return subprocess.run(
        [flywheel_executable(), "reviewer", "add", *args, "--password-stdin", "--data-dir", str(data)],
        input=password + "\n", env=cli_env(None), cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )


def test_reviewer_add_stores_a_hash_and_refuses_bad_input(tmp_path):
    data = tmp_path / "d"
    proc = _add(tmp_path, data, "lea", "--role", "lead")
    assert proc.returncode == 0, proc.stderr
    assert "Added lead lea" in proc.stdout
    with Store(data).session() as s:
        row = rt.get_reviewer(session=s, name="lea")
    assert row.role == "lead" and "s3cret-pass" not in row.password_hash
    _one_line(_add(tmp_path, data, "lea"), "already exists")
    _one_line(_add(tmp_path, data, "bob", "--role", "boss"), "role 'boss'")
    _one_line(_add(tmp_path, data, "bob", password="short"), "at least 8")
    with Store(data).session() as s:
        assert [r.name for r in rt.list_reviewers(session=s)] == ["lea"]


def test_export_release_exports_only_an_approved_release(tmp_path):
    data, out = tmp_path / "d", tmp_path / "out"
    store = Store(data)
    ids = make_round(store, n_tasks=4)
    assert _add(tmp_path, data, "lea", "--role", "lead").returncode == 0
    assert _add(tmp_path, data, "ann").returncode == 0
    env = cli_env(None)
    _one_line(flywheel("export", "--release", "latest", "--out", str(out), "--data-dir", str(data), env=env, cwd=tmp_path), "no approved release")
    assert not out.exists()
    held_out = {e for (e,) in store.duck().execute(
        "SELECT e.episode_id FROM episodes e JOIN tasks t USING (task_id) WHERE t.split = 'challenge'").fetchall()}
    ids = [e for e in ids if e not in held_out]  # the challenge split is never exported: approve trainable ones
    for eid in ids[:2]:
        decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=eid, decision="approve")
    rel = release.approve_release(
        store, lead="lea", dataset_version="v2026.11", round_ids=["r0001"],
        sampling_plan={"episodes": 8, "families": {"F01": 0.5, "F02": 0.5}}, overlap=Overlap(0.0, 2),
    )
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[2], decision="approve")  # after the release
    proc = flywheel("export", "--release", rel.id, "--out", str(out), "--data-dir", str(data), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "openai-chat" / "openai-chat.manifest.json").read_text())
    assert manifest["release"]["dataset_version"] == "v2026.11"
    # the state database is SQLite here, which keeps no offset: the moment still reads back in UTC
    approved = datetime.fromisoformat(manifest["release"]["approved_at"])
    assert approved.utcoffset() == timedelta(0) and approved == rel.approved_at, manifest["release"]["approved_at"]
    assert datetime.fromisoformat(manifest["created_at"]).utcoffset() == timedelta(0)
    assert sum(f["rows"] for f in manifest["files"].values()) == 2, manifest["excluded"]
    assert manifest["lineage"]["reviewers"] == ["ann"]


def test_reviewer_add_without_a_terminal_asks_for_password_stdin(tmp_path):
    proc = subprocess.run(
        [flywheel_executable(), "reviewer", "add", "lea", "--data-dir", str(tmp_path / "d")],
        input="s3cret-pass\n", env=cli_env(None), cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    _one_line(proc, "--password-stdin")
    assert "Warning" not in proc.stderr


def test_review_refuses_a_port_in_use_in_one_line(tmp_path):
    data = tmp_path / "d"
    make_round(Store(data), n_tasks=2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = flywheel("review", "--port", str(port), "--data-dir", str(data), env=cli_env(None), cwd=tmp_path,
                        timeout=120)
    _one_line(proc, f"port {port} is already in use")


def test_review_exits_non_zero_when_streamlit_fails(tmp_path):
    data = tmp_path / "d"
    make_round(Store(data), n_tasks=2)
    # an address this machine does not have (a documentation range): Streamlit cannot bind it and fails
    proc = flywheel("review", "--host", "203.0.113.1", "--port", str(free_port()), "--data-dir", str(data),
                    env=cli_env(None), cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1].startswith("error: the review app stopped with exit code")


def test_review_listens_on_this_machine_only_and_keeps_the_state_url_off_the_command_line(tmp_path):
    from flows.review_cmd import child_env, streamlit_command
    from warehouse.settings import load_settings

    url = "postgresql+psycopg://postgres:secret@127.0.0.1:5432/x"
    settings = load_settings(data_dir=tmp_path / "d", state_url=url)
    args = streamlit_command(settings, 8600)
    assert args[args.index("--server.address") + 1] == "127.0.0.1"
    assert not any("secret" in a for a in args)
    assert child_env(settings)["FLYWHEEL_STATE_URL"] == url


def test_review_port_out_of_range_is_one_line(tmp_path):
    proc = flywheel("review", "--port", "99999", "--data-dir", str(tmp_path / "d"), env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 2 and "--port" in proc.stderr and "65535" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_reviewer_list_shows_accounts_or_says_there_are_none(tmp_path):
    data = tmp_path / "d"
    for command in (["reviewer", "list"], ["review"]):  # a mistyped data directory is refused, never made
        _one_line(flywheel(*command, "--data-dir", str(data), env=cli_env(None), cwd=tmp_path, timeout=120),
                  "no flywheel data in")
        assert not data.exists()
    Store(data)
    empty = flywheel("reviewer", "list", "--data-dir", str(data), env=cli_env(None), cwd=tmp_path)
    assert empty.returncode == 0 and "No reviewer accounts yet" in empty.stdout
    assert _add(tmp_path, data, "lea", "--role", "lead").returncode == 0
    listed = flywheel("reviewer", "list", "--data-dir", str(data), env=cli_env(None), cwd=tmp_path)
    assert listed.returncode == 0
    assert [line.split() for line in listed.stdout.splitlines() if "lea" in line] == [["lea", "lead", "active"]]


def test_decide_records_a_decision_and_refuses_an_unknown_episode_or_round(tmp_path):
    from sqlmodel import select

    from tests.review_fixtures import PASSWORD, make_accounts
    from warehouse import state

    data = tmp_path / "d"
    store = Store(data)
    ids = make_round(store, n_tasks=2)
    make_accounts(store)

    def decide(*args, password=PASSWORD):
        return subprocess.run(
            [flywheel_executable(), "decide", *args, "--password-stdin", "--data-dir", str(data)],
            input=password + "\n", env=cli_env(None), cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )

    near_miss = ids[0][:-1] + ("0" if ids[0][-1] != "0" else "1")
    _one_line(decide(near_miss, "--reviewer", "ann", "--decision", "approve"), f"no episode '{near_miss}' in any round")
    _one_line(decide(ids[0], "--round", "r0002", "--reviewer", "ann", "--decision", "approve"), "no round 'r0002'")
    _one_line(decide(near_miss, "--round", "r0001", "--reviewer", "ann", "--decision", "approve"),
              f"no episode '{near_miss}' in round r0001")
    _one_line(decide(ids[0], "--reviewer", "ann", "--decision", "approve", password="wrong"), "wrong name or password")
    _one_line(decide(ids[0], "--reviewer", "ann", "--decision", "approve", "--recovered"), "needs a first wrong step")
    _one_line(decide(ids[0], "--reviewer", "ann", "--decision", "approve", "--first-wrong-step", "99"), "not a step")
    _one_line(decide(ids[0], "--reviewer", "ann", "--decision", "reject"),
              "a rejection needs a reason (one of wrong_result, ")  # the reasons to choose from, in the line
    with store.session() as s:
        assert s.exec(select(state.Review)).all() == []  # nothing written on bad input
    ok = decide(ids[0], "--reviewer", "ann", "--decision", "approve", "--first-wrong-step", "1", "--recovered")
    assert ok.returncode == 0, ok.stderr
    assert f"Recorded approve by ann on {ids[0]} (round r0001, first wrong step 1 (recovered))" in ok.stdout
    with store.session() as s:
        [r] = s.exec(select(state.Review)).all()
    assert (r.episode_id, r.round_id, r.reviewer, r.first_wrong_step, r.recovered) == (ids[0], "r0001", "ann", 1, True)


def _set(tmp_path, data, *args, password=None):
    """``flywheel reviewer set``; with ``password``, a new one on stdin."""
    extra = ["--password-stdin"] if password is not None else []
    return subprocess.run(
        [flywheel_executable(), "reviewer", "set", *args, *extra, "--data-dir", str(data)],
        input=(password or "") + "\n", env=cli_env(None), cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )


def test_reviewer_set_changes_role_activity_and_password_and_refuses_bad_input(tmp_path):
    from review_app import accounts

    data = tmp_path / "d"
    _one_line(_set(tmp_path, data, "lea", "--inactive"), "no flywheel data in")
    assert not data.exists()  # a mistyped data directory is refused, never made
    assert _add(tmp_path, data, "lea", "--role", "lead").returncode == 0
    assert _add(tmp_path, data, "ann").returncode == 0
    store = Store(data)

    def row(name):
        with store.session() as s:
            r = rt.get_reviewer(session=s, name=name)
            return r.role, r.active, r.password_hash

    before = row("lea")
    _one_line(_set(tmp_path, data, "lea"), "nothing to change")
    _one_line(_set(tmp_path, data, "zed", "--inactive"), "no reviewer 'zed'")
    _one_line(_set(tmp_path, data, "ann", "--role", "boss"), "role 'boss'")
    _one_line(_set(tmp_path, data, "ann", password="short"), "at least 8")
    # the only active lead stays one: releases and adjudication need a lead
    _one_line(_set(tmp_path, data, "lea", "--role", "reviewer"), "lea is the only active lead")
    _one_line(_set(tmp_path, data, "lea", "--inactive"), "lea is the only active lead")
    assert row("lea") == before  # nothing written on bad input
    promoted = _set(tmp_path, data, "ann", "--role", "lead", "--json")
    assert promoted.returncode == 0, promoted.stderr
    assert json.loads(promoted.stdout) == {"name": "ann", "role": "lead", "active": True, "password_reset": False}
    done = _set(tmp_path, data, "lea", "--role", "reviewer", "--inactive")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Updated lea: reviewer, inactive"
    assert row("lea")[:2] == ("reviewer", False)
    assert accounts.authenticate(store, "lea", "s3cret-pass") is None  # an inactive account cannot sign in
    back = _set(tmp_path, data, "lea", "--active", password="n3w-s3cret")
    assert back.returncode == 0 and back.stdout.strip() == "Updated lea: reviewer, active, new password", back.stderr
    assert accounts.authenticate(store, "lea", "s3cret-pass") is None
    assert accounts.authenticate(store, "lea", "n3w-s3cret") == accounts.User("lea", "reviewer")
    assert "n3w-s3cret" not in row("lea")[2]
    # without a terminal, a typed password cannot be asked for: one line, and nothing changed
    _one_line(subprocess.run(
        [flywheel_executable(), "reviewer", "set", "lea", "--password", "--inactive", "--data-dir", str(data)],
        input="x\n", env=cli_env(None), cwd=tmp_path, capture_output=True, text=True, timeout=120), "--password-stdin")
    assert row("lea")[1] is True
    helped = subprocess.run([flywheel_executable(), "reviewer", "set", "-h"], env=cli_env(None), cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and "--inactive" in helped.stdout and "--password-stdin" in helped.stdout


def test_reviewer_email_links_a_label_studio_user_and_is_checked(tmp_path):
    data = tmp_path / "d"
    _one_line(_add(tmp_path, data, "ann", "--email", "ann at example"), "is not an address like name@example.org")
    assert not data.exists()  # refused before anything was made
    assert _add(tmp_path, data, "ann", "--email", "Ann@Example.com").returncode == 0
    assert _add(tmp_path, data, "lea", "--role", "lead").returncode == 0
    _one_line(_add(tmp_path, data, "bob", "--email", "ann@example.com"), "already on reviewer 'ann'")
    _one_line(_set(tmp_path, data, "lea", "--email", "ANN@example.com"), "already on reviewer 'ann'")
    _one_line(_set(tmp_path, data, "lea", "--email", "lea@\nexample.com"), "is not an address")
    done = _set(tmp_path, data, "lea", "--email", "lea@example.com")
    assert done.returncode == 0, done.stderr
    store = Store(data)
    with store.session() as s:
        emails = {r.name: r.email for r in rt.list_reviewers(session=s)}
    assert emails == {"ann": "ann@example.com", "lea": "lea@example.com"}
    listed = flywheel("reviewer", "list", "--data-dir", str(data), env=cli_env(None), cwd=tmp_path)
    assert [line.split() for line in listed.stdout.splitlines() if "ann" in line] == [
        ["ann", "reviewer", "active", "ann@example.com"]]
    assert _set(tmp_path, data, "ann", "--email", "").returncode == 0  # removed
    with store.session() as s:
        assert rt.get_reviewer(session=s, name="ann").email is None


def test_decide_file_records_every_good_line_after_one_sign_in_and_a_rerun_adds_nothing(tmp_path):
    from sqlmodel import select

    from tests.review_fixtures import PASSWORD, make_accounts
    from warehouse import state

    data = tmp_path / "d"
    store = Store(data)
    ids = make_round(store, n_tasks=6)
    make_accounts(store)
    near_miss = ids[0][:-1] + ("0" if ids[0][-1] != "0" else "1")
    lines = [
        json.dumps({"episode_id": ids[0], "decision": "approve"}),
        json.dumps({"episode_id": ids[1], "decision": "reject", "reason": "wrong_result",
                    "note": "Zürich ≠ Zurich,\nand the \"card\" was 4111 1111 1111 1111"}),
        json.dumps({"episode_id": ids[2], "decision": "Needs_Fix ", "first_wrong_step": 1}),
        json.dumps({"episode_id": ids[3]}),  # the decision comes from --decision
        json.dumps({"episode_id": near_miss, "decision": "approve"}),
        '{"episode_id": "' + ids[4] + '", "decision": "approve"',  # cut short
        json.dumps([ids[4], "approve"]),
        json.dumps({"episode_id": ids[4], "decision": "approve", "approved_by": "lea"}),
        json.dumps({"episode_id": ids[4], "decision": "reject"}),  # no reason
        json.dumps({"episode_id": ids[5], "decision": "approve", "first_wrong_step": True}),
        json.dumps({"episode_id": ids[5], "decision": "approve", "first_wrong_step": 999}),
        json.dumps({"episode_id": ids[5], "decision": "approve", "round": "r0009"}),
    ]
    path = tmp_path / "decisions.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def decide_file(*args, password=PASSWORD):
        return subprocess.run(
            [flywheel_executable(), "decide", "--file", str(path), "--reviewer", "lea", *args, "--password-stdin",
             "--data-dir", str(data)],
            input=password + "\n", env=cli_env(None), cwd=tmp_path, capture_output=True, text=True, timeout=120)

    _one_line(decide_file(password="wrong"), "wrong name or password")
    first = decide_file("--decision", "approve")
    assert first.returncode == 0, first.stderr
    assert f"Recorded 4 decision(s) by lea from {path} (0 already recorded, 8 line(s) skipped)" in first.stdout
    warned = [line for line in first.stderr.splitlines() if line.startswith("warning:")]
    assert [w.split(": ")[2] for w in warned] == [f"line {n}" for n in range(5, 13)], warned
    assert "Traceback" not in first.stderr
    for n, why in ((5, f"no episode '{near_miss}' in any round"), (6, "not JSON"), (7, "not list"),
                   (8, "unknown key(s) 'approved_by'"), (9, "a rejection needs a reason"),
                   (10, "first_wrong_step must be a step number"), (11, "not a step"), (12, "no round 'r0009'")):
        assert why in warned[n - 5], (n, warned[n - 5])
    with store.session() as s:
        rows = {r.episode_id: r for r in s.exec(select(state.Review)).all()}
    assert set(rows) == set(ids[:4]) and {r.reviewer for r in rows.values()} == {"lea"}
    assert (rows[ids[1]].decision, rows[ids[2]].decision, rows[ids[2]].first_wrong_step) == ("reject", "needs_fix", 1)
    assert "Zürich ≠ Zurich,\nand the \"card\"" in rows[ids[1]].reason
    assert rows[ids[3]].decision == "approve"

    with store.session() as s:  # a rerun the next day (the file kept, the run killed halfway, say)
        for r in s.exec(select(state.Review)).all():
            r.decided_at = r.decided_at - timedelta(days=1)
            s.add(r)
        s.commit()
    again = decide_file("--decision", "approve", "--json")  # nothing twice
    assert again.returncode == 0, again.stderr
    said = json.loads(again.stdout)
    assert (said["recorded"], said["already"], len(said["skipped"])) == (0, 4, 8)
    with store.session() as s:
        assert len(s.exec(select(state.Review)).all()) == 4

    path.write_text(json.dumps({"episode_id": near_miss, "decision": "approve"}) + "\n", encoding="utf-8")
    nothing = decide_file()
    assert nothing.returncode == 1 and "Recorded 0 decision(s)" in nothing.stdout
    path.write_text("not json at all\n", encoding="utf-8")
    _one_line(decide_file(), f"{path}:1:1: not JSON")
    _one_line(decide_file("--note", "x"), "go in each line")
