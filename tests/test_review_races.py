"""Sign-ins and decisions sent at once, on SQLite (WAL) and the machine's PostgreSQL: the throttle
and "the same decision twice counts once" hold under concurrency; password hashes use today's
scrypt cost and older ones are upgraded on their next good sign-in."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from sqlmodel import select

from review_app import accounts, decisions
from tests.review_fixtures import PASSWORD, make_accounts, make_round
from warehouse import review_tables as rt
from warehouse import state
from warehouse.store import Store


def _at_once(calls: list) -> list:
    """Run every call in its own thread, released together; what each returned or raised, in order."""
    start = threading.Barrier(len(calls))
    out: list = [None] * len(calls)

    def run(i: int, call) -> None:
        start.wait()
        try:
            out[i] = call()
        except Exception as exc:  # noqa: BLE001  (the outcome under test)
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return out


def _failures(store: Store, name: str) -> int:
    with store.session() as s:
        return len(s.exec(select(rt.SignInFailure).where(rt.SignInFailure.name == name)).all())


def test_a_burst_of_wrong_passwords_reaches_the_password_check_at_most_max_failures_times(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    make_accounts(store)
    out = _at_once([lambda i=i: accounts.authenticate(store, "ann", f"guess {i}") for i in range(20)])
    unexpected = [o for o in out if o is not None and not isinstance(o, accounts.SignInThrottled)]
    assert unexpected == []
    checked = sum(o is None for o in out)
    assert checked == accounts.MAX_FAILURES  # the rest were refused without a password check
    assert _failures(store, "ann") == accounts.MAX_FAILURES
    with pytest.raises(accounts.SignInThrottled):
        accounts.authenticate(store, "ann", PASSWORD)


def test_wrong_passwords_and_the_right_one_at_once_never_check_more_than_the_rule_allows(tmp_path, state_url):
    """19 guesses and the real password together: at most MAX_FAILURES guesses are checked before
    the good one, and at most MAX_FAILURES after it (it clears the count), whatever the order."""
    store = Store(tmp_path / "d", state_url)
    make_accounts(store)
    calls = [lambda i=i: accounts.authenticate(store, "ann", f"guess {i}") for i in range(19)]
    calls.insert(7, lambda: accounts.authenticate(store, "ann", PASSWORD))
    out = _at_once(calls)
    right = out.pop(7)
    assert right == accounts.User("ann", "reviewer") or isinstance(right, accounts.SignInThrottled)
    assert all(o is None or isinstance(o, accounts.SignInThrottled) for o in out)
    checked = sum(o is None for o in out)
    assert checked <= 2 * accounts.MAX_FAILURES if right is not None else checked <= accounts.MAX_FAILURES
    assert sum(isinstance(o, accounts.SignInThrottled) for o in out) >= 19 - 2 * accounts.MAX_FAILURES
    assert _failures(store, "ann") <= accounts.MAX_FAILURES


def test_the_same_decision_sent_at_once_is_recorded_once(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    ids = make_round(store, n_tasks=2)
    make_accounts(store)
    kw = dict(round_id="r0001", decision="reject", reason_code="wrong_result", reason_text="ünï\ncode `x`")
    calls = [lambda e=e: decisions.record_decision(store, reviewer="ann", episode_id=e, **kw)
             for e in (ids[0],) * 8 + (ids[1],) * 6]
    calls += [lambda: decisions.record_decision(store, reviewer="bob", episode_id=ids[0], **kw)] * 4
    out = _at_once(calls)
    assert [o for o in out if isinstance(o, Exception)] == []
    with store.session() as s:
        rows = s.exec(select(state.Review)).all()
    assert Counter((r.reviewer, r.episode_id) for r in rows) == {("ann", ids[0]): 1, ("ann", ids[1]): 1,
                                                               ("bob", ids[0]): 1}
    assert len({o.id for o in out[:8]}) == 1  # every save was told of the one row


def test_new_hashes_use_scrypt_n_2_17_r_8_p_1(real_scrypt):
    assert real_scrypt == 2**17
    stored = accounts.hash_password("pw-123456")
    assert stored.split("$")[:4] == ["scrypt", str(2**17), "8", "1"]
    assert accounts.verify_password("pw-123456", stored) and not accounts.verify_password("pw-123457", stored)
    assert not accounts.needs_rehash(stored)


def test_an_older_hash_is_upgraded_on_its_next_good_sign_in_and_only_then(tmp_path, state_url, monkeypatch):
    store = Store(tmp_path / "d", state_url)
    monkeypatch.setattr(accounts, "SCRYPT_N", 2**12)  # an account made by an earlier version
    accounts.add_reviewer(store, "ann", "reviewer", PASSWORD)
    monkeypatch.setattr(accounts, "SCRYPT_N", 2**14)  # today's cost (lowered in tests, see conftest)

    def stored() -> str:
        with store.session() as s:
            return rt.get_reviewer(session=s, name="ann").password_hash

    old = stored()
    assert old.split("$")[1] == str(2**12) and accounts.needs_rehash(old)
    assert accounts.authenticate(store, "ann", "wrong password") is None
    assert stored() == old  # a wrong password changes nothing
    user = accounts.authenticate(store, "ann", PASSWORD)
    new = stored()
    assert user is not None and new.split("$")[1] == str(2**14) and accounts.verify_password(PASSWORD, new)
    assert user.credential == accounts.credential_of(new)  # the new session survives its own upgrade
    assert accounts.session_user(store, user, state.utcnow(), hours=1) == user
    assert accounts.authenticate(store, "ann", PASSWORD) is not None and stored() == new  # upgraded once
