"""``flywheel import --format inspect``: Inspect AI eval logs (.eval zip and .json), on sample logs
in Inspect's documented shape (tests/data/inspect/SOURCE.md)."""

from __future__ import annotations

import json
import struct
import zipfile

import pytest

from flows.stages.importing import prepare_import
from tests.conftest import cli_env, flywheel
from tests.format_roundtrip import DATA, approve, export_rows, facts, import_file
from warehouse.errors import InputError

EVAL, JSON = DATA / "inspect" / "phone_contacts.eval", DATA / "inspect" / "phone_contacts.json"
TASK = "inspect:phone_contacts:ann-number"


def test_eval_and_json_logs_import_the_same_samples(tmp_path):
    _, s1 = import_file(tmp_path / "a", EVAL, "inspect")
    store_json, s2 = import_file(tmp_path / "b", JSON, "inspect")
    assert (s1.imported, s2.imported) == (2, 2)
    assert [w for w, _ in s1.skipped] == ["samples/broken_epoch_1.json"] and [w for w, _ in s2.skipped] == ["sample 3"]
    got = facts(store_json)
    epoch1, epoch2 = got[(TASK, 1)], got[(TASK, 2)]
    assert [s[:3] for s in epoch1["steps"]] == [
        ("tool_call", "contacts_search", "call_a1"), ("tool_call", "contacts_get", "call_a2"),
        ("tool_call", "contacts_get", "call_a3"), ("message", "", "")]  # the closing text as a text turn, no finish
    assert epoch1["steps"][0][3] == {"query": "Ann Lee"}
    # a tool message with an error is a failed step with Inspect's error type and message
    assert epoch1["steps"][1][4:] == (False, {"code": "unknown", "message": "no contact c-9"})
    assert epoch1["steps"][2][4:] == (True, {"phone": "555-0101"})
    # the first scorer's grade is the reward: C = 1, I = 0; the epoch is the rollout
    assert (epoch1["reward"], epoch1["success"], epoch2["reward"], epoch2["success"]) == (1.0, True, 0.0, False)
    assert facts(store_json) == facts(import_file(tmp_path / "a", EVAL, "inspect")[0])


def test_a_chosen_scorer_gives_the_reward_and_an_unknown_one_is_named(tmp_path):
    store, _ = import_file(tmp_path / "d", JSON, "inspect", scorer="steps_ok")
    got = facts(store)
    assert (got[(TASK, 1)]["reward"], got[(TASK, 2)]["reward"]) == (0.75, 0.25)
    with pytest.raises(InputError, match=r"first at sample 1: no score from scorer 'nope' \(it has match, steps_ok\)"):
        prepare_import(JSON, "inspect", scorer="nope")


def test_a_file_that_is_no_inspect_log_is_one_clear_error(tmp_path):
    zip_path = tmp_path / "other.eval"
    with zipfile.ZipFile(zip_path, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(InputError, match="without samples"):
        prepare_import(zip_path, "inspect")
    (tmp_path / "x.json").write_text(json.dumps({"messages": []}))
    with pytest.raises(InputError, match="not an Inspect eval log"):
        prepare_import(tmp_path / "x.json", "inspect")


def test_an_eval_log_cut_short_or_damaged_is_named_a_damaged_zip(tmp_path):
    """Cut anywhere (a copy that stopped short) or with a member's bytes garbled: a damaged zip archive,
    not text that is 'not UTF-8'."""
    data = EVAL.read_bytes()
    path = tmp_path / "trunc.eval"
    for size in [*range(4, len(data) - 1, 37), 2000]:
        path.write_bytes(data[:size])
        with pytest.raises(InputError, match=rf"^{path}: a damaged or truncated zip archive, not a readable Inspect"):
            prepare_import(path, "inspect")
    member = zipfile.ZipFile(EVAL).getinfo("samples/ann-number_epoch_1.json")
    name_len, extra_len = struct.unpack("<HH", data[member.header_offset + 26:member.header_offset + 30])
    start = member.header_offset + 30 + name_len + extra_len  # the member's compressed bytes
    garbled = bytearray(data)
    garbled[start + 20:start + 60] = bytes(b ^ 0x5A for b in data[start + 20:start + 60])
    path.write_bytes(bytes(garbled))
    with pytest.raises(InputError, match=rf"^{path}: a damaged or truncated zip archive"):
        prepare_import(path, "inspect")


def test_import_then_export_keeps_steps_call_ids_results_and_reward(tmp_path):
    store, _ = import_file(tmp_path / "d", EVAL, "inspect")
    rows, _ = export_rows(store, tmp_path / "out", "adp", approve(store))
    by_rollout = {r["details"]["rollout"]: r for r in rows}
    content = by_rollout[1]["content"]
    calls = [(c["function"], c["tool_call_id"], c["kwargs"]) for c in content if c["class_"] == "api_action"]
    assert calls[:3] == [("contacts_search", "call_a1", {"query": "Ann Lee"}), ("contacts_get", "call_a2", {"contact_id": "c-9"}),
                         ("contacts_get", "call_a3", {"contact_id": "c-1"})]
    results = {c["tool_call_id"]: c["content"] for c in content if c["class_"] == "text_observation" and "tool_call_id" in c}
    # as recorded: the failed call's message as the tool gave it, the result's JSON as it was
    assert results["call_a2"] == "no contact c-9" and json.loads(results["call_a3"]) == {"phone": "555-0101"}
    assert (by_rollout[1]["details"]["reward"], by_rollout[2]["details"]["reward"]) == (1.0, 0.0)


def test_cli_names_the_malformed_sample_and_a_rerun_changes_nothing(tmp_path):
    env = cli_env(None)
    proc = flywheel("import", str(EVAL), "--format", "inspect", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Imported 2 episodes" in proc.stdout
    assert "samples/broken_epoch_1.json: skipped: message 0 has no known role" in proc.stderr
    again = flywheel("import", str(EVAL), "--format", "inspect", env=env, cwd=tmp_path)
    assert again.returncode == 0 and "already imported" in again.stdout
