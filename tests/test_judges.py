"""Model judges: pure prompt/parse/vote logic with scripted judges, and judges that call the
model through the collection engine against a local OpenAI-compatible server of our own."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from curation.judges import ScriptedJudge, agreement_with_people, judge_marks, majority, parse_verdict
from generators.models import Engine, EngineConfig, OpenAIEndpoint
from generators.models.blocking import BlockingEngine, EngineJudge

GOOD = json.dumps({"goal_met": True, "no_harm": True, "efficient": True, "well_explained": True, "why": "fine"})
SLOPPY = json.dumps({"goal_met": True, "no_harm": True, "efficient": False, "well_explained": True, "why": "detour"})


def _frames():
    eps = pd.DataFrame({"episode_id": ["e1", "e2"], "round_id": "r1", "instruction": ["Delete Ana", "Call Bo"]})
    steps = pd.DataFrame({
        "episode_id": ["e1", "e1", "e2"], "action_kind": ["tool_call", "finish", "finish"],
        "action_tool": ["contacts_delete", "finish", "finish"],
        "action_arguments": ['{"contact_id":"c1"}', '{"status":"completed"}', '{"status":"infeasible"}'],
        "feedback_ok": [True, True, True],
    })
    return eps, steps


def test_parse_keeps_bad_replies_with_a_reason():
    assert parse_verdict(GOOD)[0]["goal_met"] is True
    assert parse_verdict("Sure! " + GOOD + " hope that helps")[0] is not None
    assert parse_verdict("I think it is fine")[0] is None
    scores, why = parse_verdict('{"goal_met": "yes"}')
    assert scores is None and "goal_met" in why


def test_majority_vote_and_marks_with_scripted_judges():
    assert majority([None, None]) == {"usable": 0}
    vote = majority([parse_verdict(GOOD)[0], parse_verdict(SLOPPY)[0], parse_verdict(SLOPPY)[0]])
    assert vote["efficient"] is False and vote["pass"] is False and not vote["unanimous"]
    eps, steps = _frames()
    seen = []

    def by_request(messages):
        seen.append(messages[1]["content"])
        return GOOD if "Delete Ana" in messages[1]["content"] else "no idea"

    def broken(messages):
        raise ConnectionError("refused")

    judges = [ScriptedJudge("a", by_request), ScriptedJudge("b", by_request), ScriptedJudge("c", broken)]
    marks = judge_marks(eps, steps, judges).set_index("episode_id")
    assert marks.loc["e1", "mark"] == "judge_pass"
    assert marks.loc["e2", "mark"] == "judge_error"
    votes = json.loads(marks.loc["e2", "detail"])["votes"]
    assert votes[0]["raw"] == "no idea" and "endpoint error" in votes[2]["why"]
    assert "contacts_delete" in seen[0] and "Finish:" in seen[0]


def test_agreement_with_people():
    report = agreement_with_people({"e1": True, "e2": False, "e3": True}, {"e1": "approve", "e2": "approve", "e4": "reject"})
    assert report == {"compared": 2, "agreement": 0.5, "judge_pass_people_reject": 0, "judge_fail_people_approve": 1}


@pytest.fixture
def local_endpoint():
    """A minimal OpenAI-compatible chat completions server: fails on 'Call Bo', else GOOD."""
    requests = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            if "Down" in body["messages"][1]["content"]:
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            text = SLOPPY if "Call Bo" in body["messages"][1]["content"] else GOOD
            payload = json.dumps({
                "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": len(json.dumps(body["messages"])) // 4, "completion_tokens": 11},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    server.shutdown()


def _engine(url: str, **cfg) -> BlockingEngine:
    return BlockingEngine(lambda: Engine(OpenAIEndpoint(base_url=url, api_key="none", model="judge-model"),
                                         EngineConfig(**{"backoff_s": 0.001, "backoff_max_s": 0.01, **cfg})))


def test_engine_judges_against_a_local_openai_compatible_server(local_endpoint):
    url, requests = local_endpoint
    eps, steps = _frames()
    engine = _engine(url)
    try:
        judges = [EngineJudge(f"j{i}", engine) for i in range(3)]
        marks = judge_marks(eps, steps, judges).set_index("episode_id")
        assert marks.loc["e1", "mark"] == "judge_pass"
        assert marks.loc["e2", "mark"] == "judge_fail" and "efficient" in marks.loc["e2", "reason"]
        assert len(requests) == 6 and requests[0]["model"] == "judge-model"
        assert {r["max_tokens"] for r in requests} == {256}  # a rambling judge cannot hold curation up
        assert engine.engine.stats.calls == 6  # the judges' calls are the engine's: one place for limits and costs
    finally:
        engine.close()


def test_judges_share_the_engines_retries_and_breaker(local_endpoint):
    url, requests = local_endpoint
    eps = pd.DataFrame({"episode_id": [f"e{i}" for i in range(5)], "round_id": "r1",
                        "instruction": [f"Down {i}" for i in range(5)]})
    steps = pd.DataFrame({"episode_id": [f"e{i}" for i in range(5)], "action_kind": "finish", "action_tool": "finish",
                          "action_arguments": '{"status":"completed"}', "feedback_ok": True})
    engine = _engine(url, retries=1, breaker_failures=4)
    try:
        marks = judge_marks(eps, steps, [EngineJudge(f"j{i}", engine) for i in range(3)])
    finally:
        engine.close()
    assert set(marks["mark"]) == {"judge_error"}
    # retried once each, then the breaker opened: the other 13 votes failed without a request
    assert len(requests) == 4
    whys = [v["why"] for d in marks["detail"] for v in json.loads(d)["votes"]]
    assert sum("model endpoint is down" in w for w in whys) == 13


def test_a_round_curated_with_judges_marks_routes_and_reports_agreement(local_endpoint, tmp_path):
    from datetime import UTC, datetime

    from flows.views import status_rows
    from review_app.agreement import Overlap
    from tests.curation_data import build_round
    from warehouse import state
    from warehouse.settings import ModelPrice

    url, requests = local_endpoint
    store, round_id = build_round(tmp_path / "data", episodes=20, rollouts=2,
                                  curation={"judge_base_url": url, "judge_model": "m", "judge_k": 3})
    con = store.duck()
    marks = dict(con.execute('SELECT mark, count(*) FROM marks WHERE "check" = \'judges\' GROUP BY 1').fetchall())
    episodes = con.execute("SELECT count(*) FROM episodes").fetchone()[0]  # 20 planned, and later sessions
    assert sum(marks.values()) == episodes >= 20 and marks.get("judge_pass", 0) > 0
    # each distinct prompt asked once of each of the 3 judges (an exact duplicate's verdict is journaled already)
    prompts = {json.dumps(r["messages"]) for r in requests}
    assert len(requests) == 3 * len(prompts) and episodes >= len(prompts) > episodes // 2
    assert requests[0]["temperature"] == 0.7
    routed = con.execute(
        "SELECT count(*) FROM marks m JOIN outcomes o USING (episode_id) WHERE m.\"check\" = 'routing' "
        "AND m.reason LIKE '%judges disagree%'").fetchone()[0]
    failures = con.execute("SELECT count(*) FROM outcomes WHERE NOT success").fetchone()[0]
    assert routed == failures  # the fake endpoint passes every failure, so each one disagrees with the verifier
    eid = con.execute("SELECT episode_id FROM episodes LIMIT 1").fetchone()[0]
    with store.session() as s:
        s.add(state.Review(episode_id=eid, round_id=round_id, reviewer="ana", decision="reject",
                           decided_at=datetime.now(UTC)))
        s.commit()
    price = ModelPrice(input_per_mtok=2.0, output_per_mtok=10.0)
    # one review decides, wherever the overlap share falls
    row = status_rows(store, prices={"m": price}, overlap=Overlap(share=0.0))[0]
    assert row["judge_agreement"]["compared"] == 1
    # every judge call is in the round's cost (the scripted planner's episodes cost nothing)
    prompt = sum(len(json.dumps(r["messages"])) // 4 for r in requests)
    assert row["model_usage"] == [{"role": "judge", "model": "m", "calls": len(requests), "prompt_tokens": prompt,
                                   "completion_tokens": 11 * len(requests), "cost_usd": row["cost_usd"]}]
    assert (row["prompt_tokens"], row["completion_tokens"]) == (prompt, 11 * len(requests))
    assert row["cost_usd"] == round(prompt * 2.0 / 1e6 + 11 * len(requests) * 10.0 / 1e6, 6) > 0
    assert row["unpriced_models"] == [] and status_rows(store)[0]["unpriced_models"] == ["m"]
    assert row["funnel"]["steps"]["judges"] == marks


def test_curation_killed_after_the_judges_answered_asks_no_judge_again(local_endpoint, tmp_path, monkeypatch):
    from flows import stages
    from warehouse import killpoints

    url, requests = local_endpoint
    from tests.curation_data import build_round

    store, round_id = build_round(tmp_path / "data", episodes=6, rollouts=1,
                                  curation={"judge_base_url": url, "judge_model": "m", "judge_k": 2})
    asked = len(requests)
    assert asked == 2 * len({json.dumps(r["messages"]) for r in requests}) > 0

    # the same cascade again, as a rerun after a kill between the judges' answers and the commit
    from warehouse.settings import load_settings

    settings = load_settings(None, data_dir=tmp_path / "data",
                             curation={"judge_base_url": url, "judge_model": "m", "judge_k": 2})

    class Killed(Exception):
        pass

    def die(point: str) -> None:
        if point == "curate.marked":
            raise Killed

    monkeypatch.setattr(killpoints, "reached", die)
    with pytest.raises(Killed):
        stages.curate.curate_round_cascade(store, round_id, "curate-again", settings)
    assert len(requests) == asked  # every judge's reply came from the journal
    # a judge that is asked something new is still asked
    settings_k3 = load_settings(None, data_dir=tmp_path / "data",
                                curation={"judge_base_url": url, "judge_model": "m", "judge_k": 3})
    with pytest.raises(Killed):
        stages.curate.curate_round_cascade(store, round_id, "curate-again", settings_k3)
    assert len(requests) == asked * 3 // 2  # only judge-3 is new: judges 1 and 2 answered already


def test_judges_whose_endpoint_is_gone_are_counted_in_the_round_summary(tmp_path, monkeypatch):
    from rich.console import Console

    from curation.report import round_counts
    from flows.views import print_round_summary
    from tests.conftest import free_port
    from tests.curation_data import build_round
    from warehouse.settings import load_settings

    monkeypatch.setenv("FLYWHEEL_OPENAI__RETRIES", "0")  # nobody answers at the port: no point in retrying
    url = f"http://127.0.0.1:{free_port()}/v1"
    store, round_id = build_round(tmp_path / "data", episodes=4, rollouts=1,
                                  curation={"judge_base_url": url, "judge_model": "m", "judge_k": 1})
    counts = round_counts(store, round_id)
    episodes = store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0]
    assert counts["judge_errors"] == episodes >= 4
    console = Console(record=True, width=200)
    print_round_summary(console, {"round_id": round_id, "resumed": False, "shards_skipped": 0, "orphans_removed": 0,
                                  **counts}, load_settings(None, data_dir=tmp_path / "data"))
    assert f"{episodes} episode(s) got no usable judge reply" in console.export_text()


def test_a_tpm_below_one_judge_request_stops_curation_in_one_line_not_as_unusable_votes(local_endpoint, tmp_path,
                                                                                        monkeypatch):
    from tests.curation_data import build_round
    from warehouse.errors import ConfigError

    url, requests = local_endpoint
    monkeypatch.setenv("FLYWHEEL_OPENAI__TPM", "10")
    with pytest.raises(ConfigError, match=r"^openai.tpm \(10\) is below one request's estimate"):
        build_round(tmp_path / "data", episodes=4, rollouts=1,
                    curation={"judge_base_url": url, "judge_model": "m", "judge_k": 1})
    assert requests == []
