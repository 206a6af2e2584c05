"""The state PostgreSQL cut for a moment: a small TCP proxy (tests/tcp_proxy.py) between the
command and the machine's real PostgreSQL closes every connection and turns new ones away for
0.3 s, at a known point or in the middle of a statement.

- The warehouse's units of work (declare, put and record a shard; read what is recorded) ride
  through a cut shorter than ``state_reconnect_s``; past it they stop with one line naming the
  database and saying to rerun. A wrong URL is refused at once, never waited for.
- A round cut that way mid-curation finishes with the episodes and marks of a round never cut;
  a long outage mid-curation stops in one line, and the rerun after it finishes with the same.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import POSTGRES_ADMIN, flywheel
from tests.tcp_proxy import TcpProxy
from tests.test_faults import ROUND, _env, _finished, _one_line_error, _recorded_shards_whole, held
from tests.test_storage import _episode
from warehouse import shard_intents, state
from warehouse.errors import StateError, StateLost
from warehouse.store import Store

PG_PORT = int(POSTGRES_ADMIN.rsplit(":", 1)[1].split("/")[0])


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    p = TcpProxy(PG_PORT)
    yield p
    p.close()


def _recorded_keys(store: Store) -> set[str]:
    with store.session() as s:
        return state.recorded_keys(session=s, round_id="r0001", table_name="episodes")


# --- the store, cut while it works --------------------------------------------------------


@pytest.mark.parametrize("packet", [0, 1, 2, 3, 4, 5])
def test_a_short_cut_is_ridden_through_by_the_stores_work(tmp_path, fresh_postgres_url, proxy, packet):
    """``packet`` 0: every connection cut between two units; n: the n-th chunk the store sends
    for the next unit is dropped and the connections cut there (the pre-ping, the intent, the
    shard's record, its commit)."""
    store = Store(tmp_path / "data", proxy.url(fresh_postgres_url), reconnect_s=10)
    store.commit_unit("r0001", "s00000", {"episodes": [_episode(0)]})
    if packet == 0:
        proxy.cut(0.3)
    else:
        proxy.cut_at_packet(packet, 0.3)
    store.commit_unit("r0001", "s00001", {"episodes": [_episode(1)]})
    assert proxy.cuts == 1, "the cut never happened"
    assert _recorded_keys(store) == {"s00000", "s00001"}
    assert store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 2
    with store.session() as s:
        assert shard_intents.pending(session=s) == set()
    assert store.clean_orphans() == []


def test_a_long_outage_stops_the_store_in_one_line(tmp_path, fresh_postgres_url, proxy):
    store = Store(tmp_path / "data", proxy.url(fresh_postgres_url), reconnect_s=1)
    store.commit_unit("r0001", "s00000", {"episodes": [_episode(0)]})
    proxy.cut(3600)
    with pytest.raises(StateLost) as stopped:
        store.commit_unit("r0001", "s00001", {"episodes": [_episode(1)]})
    message = str(stopped.value)
    assert "\n" not in message and f"127.0.0.1:{proxy.port}" in message and "rerun" in message
    proxy.heal()
    store.commit_unit("r0001", "s00001", {"episodes": [_episode(1)]})  # the rerun
    assert _recorded_keys(store) == {"s00000", "s00001"}


def test_a_wrong_database_is_refused_at_once_not_waited_for(tmp_path, fresh_postgres_url, proxy):
    wrong = proxy.url(fresh_postgres_url).rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(StateError) as refused:
        Store(tmp_path / "data", wrong, reconnect_s=3600)  # would hang the test if it were waited for
    assert "no_such_database" in str(refused.value) and "\n" not in str(refused.value)


# --- a round, cut mid-curation ------------------------------------------------------------


def _round_rows(store: Store) -> tuple[list, list]:
    con = store.duck(["r0001"])
    episodes = con.execute("SELECT episode_id FROM episodes ORDER BY 1").fetchall()
    marks = con.execute('SELECT episode_id, "check", passed FROM marks ORDER BY 1, 2').fetchall()
    return episodes, marks


@pytest.fixture(scope="module")
def clean_rows(tmp_path_factory, prefect_server) -> tuple[list, list]:
    cwd = tmp_path_factory.mktemp("clean")
    done = flywheel(*ROUND, env=_env(prefect_server), cwd=cwd)
    assert done.returncode == 0, done.stderr
    rows = _round_rows(Store(cwd / "flywheel-data"))
    assert rows[0] and rows[1]
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("packet", [0, 2])
def test_a_round_cut_for_0_3_s_mid_curation_rides_through(tmp_path, prefect_server, fresh_postgres_url, proxy,
                                                         clean_rows, packet):
    url = proxy.url(fresh_postgres_url)
    env = _env(prefect_server, FLYWHEEL_STATE_URL=url)
    with held(ROUND, env=env, cwd=tmp_path, point="curate.marked") as proc:
        if packet == 0:
            proxy.cut(0.3)  # every connection the round holds, and new ones for 0.3 s
        else:
            proxy.cut_at_packet(packet, 0.3)  # in the middle of committing the marks
    code, out, err = _finished(proc)
    assert code == 0, err
    assert proxy.cuts == 1
    assert "Finished round r0001: 20 episodes" in out
    store = Store(tmp_path / "flywheel-data", fresh_postgres_url)
    assert _round_rows(store) == clean_rows
    _recorded_shards_whole(store)


@pytest.mark.slow
def test_a_long_outage_mid_curation_stops_in_one_line_and_the_rerun_matches(
        tmp_path, prefect_server, fresh_postgres_url, proxy, clean_rows):
    url = proxy.url(fresh_postgres_url)
    env = _env(prefect_server, FLYWHEEL_STATE_URL=url, FLYWHEEL_STATE_RECONNECT_S="1")
    with held(ROUND, env=env, cwd=tmp_path, point="curate.marked") as proc:
        proxy.cut(3600)
    code, _, err = _finished(proc)
    _one_line_error(code, err, "state database", f"127.0.0.1:{proxy.port}", "rerun")
    proxy.heal()
    rerun = flywheel(*ROUND, env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert "Resumed and finished round r0001: 20 episodes" in rerun.stdout
    store = Store(tmp_path / "flywheel-data", fresh_postgres_url)
    assert _round_rows(store) == clean_rows
    _recorded_shards_whole(store)
