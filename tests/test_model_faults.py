"""The model endpoint at high fault rates (80 % of requests hang, come back malformed, call
a tool that does not exist, or fail with a 500): the round finishes, or stops in one clear
line and its rerun finishes, and every episode is accounted for exactly once.
(``tests/test_model_round.py`` covers a 30 % mix, an endpoint that is down and refusals.)"""

from __future__ import annotations

import pytest

from tests.conftest import cli_env, flywheel
from tests.modelserver import FaultConfig, serve_in_thread
from warehouse.store import Store

pytestmark = pytest.mark.slow
MODEL = "flywheel-test"
EPISODES = 10
TERMINATIONS = {"finished", "budget_exhausted", "invalid_replies", "endpoint_error", "harness_error"}


def _env(prefect_server: str) -> dict[str, str]:
    return cli_env(prefect_server, FLYWHEEL_OPENAI__TIMEOUT_S="0.4", FLYWHEEL_OPENAI__BACKOFF_S="0.02",
                   FLYWHEEL_OPENAI__BACKOFF_MAX_S="0.1", FLYWHEEL_OPENAI__CONCURRENCY="16",
                   FLYWHEEL_ROUND__SHARD_SIZE="5")


@pytest.mark.parametrize("kind", ["timeout", "malformed", "unknown_tool", "500", "empty"])
def test_a_round_at_80_percent_faults_of_one_kind_accounts_for_every_episode(tmp_path, prefect_server, kind):
    args = ("run", "--policy", "openai", "--model", MODEL, "--episodes", str(EPISODES), "--no-progress")
    faults = FaultConfig(rate=0.8, kinds={kind: 1.0}, timeout_s=1.0, retry_after_s=0.02, seed=5)
    with serve_in_thread(faults) as server:
        run = flywheel(*args, "--base-url", server.base_url, env=_env(prefect_server), cwd=tmp_path)
        assert server.stats()["faults"].get(kind, 0) > 0
        assert "Traceback" not in run.stdout + run.stderr
        if run.returncode != 0:  # stopped: in one line, and the rerun finishes once the endpoint heals
            lines = [line for line in run.stderr.splitlines() if line.strip()]
            assert run.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: "), run.stderr
            server.set_faults(FaultConfig())
            run = flywheel(*args, "--base-url", server.base_url, env=_env(prefect_server), cwd=tmp_path)
            assert run.returncode == 0, run.stderr
    assert f"round r0001: {EPISODES} episodes" in run.stdout
    con = Store(tmp_path / "flywheel-data").duck()
    outcomes = con.execute("SELECT episode_id, termination FROM outcomes").fetchall()
    episodes = [e for (e,) in con.execute("SELECT episode_id FROM episodes").fetchall()]
    assert len(episodes) == len(set(episodes)) == EPISODES
    assert sorted(e for e, _ in outcomes) == sorted(episodes)
    assert {t for _, t in outcomes} <= TERMINATIONS
    if kind in ("malformed", "unknown_tool"):  # a bad reply is kept with its raw text, as an invalid step
        invalid = con.execute("SELECT count(*) FROM steps WHERE action_kind = 'invalid'").fetchone()[0]
        assert invalid > 0
