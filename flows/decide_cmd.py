"""``flywheel decide``: record one review decision from the command line, as the app does.

The reviewer signs in with their password (stdin or a hidden prompt); the decision goes
through :func:`review_app.decisions.record_decision`, which refuses an episode or round
that does not exist, so nothing is written on bad input.
"""

from __future__ import annotations

from flows.reviewer_cmd import read_password
from review_app import accounts, decisions
from review_app.data import warehouse_cursor
from warehouse import state
from warehouse.errors import InputError
from warehouse.store import Store


def round_of(store: Store, episode_id: str) -> str:
    """The round holding ``episode_id``; InputError if no round does."""
    with store.session() as s:
        rounds = [r.id for r in state.list_rounds(session=s)]
    found = warehouse_cursor(store, rounds).execute(
        "SELECT round_id FROM episodes WHERE episode_id = ? LIMIT 1", [episode_id]).fetchone() if rounds else None
    if found is None:
        raise InputError(f"no episode {episode_id!r} in any round; nothing recorded")
    return found[0]


def decide(store: Store, episode_id: str, *, reviewer: str, decision: str, round_id: str | None, reason: str,
           note: str, first_wrong_step: int | None, recovered: bool, password_stdin: bool) -> state.Review:
    """Sign the reviewer in, then record the decision (InputError on anything wrong)."""
    decisions.check_decision(decision, reason, note, first_wrong_step, None, recovered)
    password = read_password(from_stdin=password_stdin, confirm=False)
    user = accounts.authenticate(store, reviewer, password)
    if user is None:
        raise InputError(f"wrong name or password for reviewer {reviewer!r}")
    return decisions.record_decision(
        store, reviewer=user.name, round_id=round_id or round_of(store, episode_id), episode_id=episode_id,
        decision=decision, reason_code=reason, reason_text=note, first_wrong_step=first_wrong_step, recovered=recovered,
    )
