"""``flywheel decide``: record review decisions from the command line, as the app does.

The reviewer signs in with their password (stdin or a hidden prompt); each decision goes
through :func:`review_app.decisions.record_decision`, which refuses an episode or round
that does not exist, so nothing is written on bad input. ``--file`` records a JSON Lines
file of decisions after one sign-in: one transaction a decision, a bad line skipped and
named, and a rerun adds nothing for lines already recorded (the reviewer's latest decision
on the episode already says the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from flows.reviewer_cmd import read_password
from review_app import accounts, decisions
from review_app.data import warehouse_cursor
from warehouse import state
from warehouse.errors import InputError
from warehouse.jsonfile import read_records
from warehouse.store import Store
from warehouse.timestamps import utcnow

# the keys a line of a decisions file may have (episode_id and decision are needed)
LINE_KEYS = {"episode_id", "decision", "round", "reason", "note", "first_wrong_step", "recovered"}
FOREVER = timedelta(days=365 * 1000)  # a file's line already recorded, however long ago: the same decision


def round_of(store: Store, episode_id: str) -> str:
    """The round holding ``episode_id``; InputError if no round does."""
    with store.session() as s:
        rounds = [r.id for r in state.list_rounds(session=s)]
    found = warehouse_cursor(store, rounds).execute(
        "SELECT round_id FROM episodes WHERE episode_id = ? LIMIT 1", [episode_id]).fetchone() if rounds else None
    if found is None:
        evaluated = warehouse_cursor(store, None).execute(
            "SELECT round_id FROM episodes WHERE episode_id = ? LIMIT 1", [episode_id]).fetchone()
        why = f" (it is an episode of eval {evaluated[0]}: evals are measured, not reviewed)" if evaluated else ""
        raise InputError(f"no episode {episode_id!r} in any round{why}; nothing recorded")
    return found[0]


def decide(store: Store, episode_id: str, *, reviewer: str, decision: str, round_id: str | None, reason: str,
           note: str, first_wrong_step: int | None, recovered: bool, password_stdin: bool) -> state.Review:
    """Sign the reviewer in, then record the decision (InputError on anything wrong)."""
    decisions.check_decision(decision, reason, note, first_wrong_step, None, recovered)
    round_id = round_id or round_of(store, episode_id)
    # the episode and its steps are checked before the sign-in: a refused decision writes nothing
    # (a sign-in records itself), and nobody types a password for a command that cannot succeed
    decisions.check_decision(decision, reason, note, first_wrong_step,
                             decisions.episode_steps(store, round_id, episode_id), recovered)
    password = read_password(from_stdin=password_stdin, confirm=False)
    user = accounts.authenticate(store, reviewer, password)
    if user is None:
        raise InputError(f"wrong name or password for reviewer {reviewer!r}")
    return decisions.record_decision(
        store, reviewer=user.name, round_id=round_id, episode_id=episode_id,
        decision=decision, reason_code=reason, reason_text=note, first_wrong_step=first_wrong_step, recovered=recovered,
    )


@dataclass
class FileResult:
    """What ``decide --file`` did: decisions recorded, lines already recorded, lines skipped (where, why)."""

    reviewer: str
    recorded: int = 0
    already: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _line(value: Any, default_decision: str | None) -> dict[str, Any]:
    """One line's decision, checked (InputError says what is wrong with it)."""
    if not isinstance(value, dict):
        raise InputError(f"a line is a JSON object with episode_id and decision, not {type(value).__name__}")
    unknown = sorted(set(value) - LINE_KEYS)
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(map(repr, unknown))} (known: {', '.join(sorted(LINE_KEYS))})")
    eid, decision = value.get("episode_id"), value.get("decision", default_decision)
    if not isinstance(eid, str) or not eid:
        raise InputError("no episode_id (a string)")
    if not isinstance(decision, str):
        raise InputError("no decision (approve, reject or needs_fix; or give --decision for every line)")
    step = value.get("first_wrong_step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
        raise InputError(f"first_wrong_step must be a step number (0 or more), not {step!r}")
    texts = {k: value.get(k, "") for k in ("reason", "note")}
    for key in ("round", "reason", "note"):
        if value.get(key) is not None and not isinstance(value.get(key), str):
            raise InputError(f"{key} must be a string")
    if not isinstance(value.get("recovered", False), bool):
        raise InputError("recovered must be true or false")
    line = {"episode_id": eid, "decision": decision.strip().lower(), "round": value.get("round"),
            "reason": texts["reason"] or "", "note": texts["note"] or "", "first_wrong_step": step,
            "recovered": bool(value.get("recovered", False))}
    decisions.check_decision(line["decision"], line["reason"], line["note"], step, None, line["recovered"])
    return line


def rounds_of(store: Store, episode_ids: list[str]) -> dict[str, str]:
    """Each of ``episode_ids`` that some round holds -> that round (one query for the file)."""
    with store.session() as s:
        rounds = [r.id for r in state.list_rounds(session=s)]
    if not rounds or not episode_ids:
        return {}
    con = warehouse_cursor(store, rounds)
    con.execute("CREATE OR REPLACE TEMP TABLE wanted (episode_id VARCHAR)")
    con.executemany("INSERT INTO wanted VALUES (?)", [[e] for e in sorted(set(episode_ids))])
    return dict(con.execute("SELECT e.episode_id, min(e.round_id) FROM episodes e JOIN wanted USING (episode_id) "
                            "GROUP BY e.episode_id").fetchall())


def decide_file(store: Store, path: Path, *, reviewer: str, decision: str | None, password_stdin: bool,
                on_line: Any = None) -> FileResult:
    """Record every good line of the JSON Lines file ``path`` as a decision of ``reviewer`` (one sign-in)."""
    records = read_records(path)  # a file that is not JSON at all is one line, before the password is asked
    password = read_password(from_stdin=password_stdin, confirm=False)
    user = accounts.authenticate(store, reviewer, password)
    if user is None:
        raise InputError(f"wrong name or password for reviewer {reviewer!r}")
    result = FileResult(reviewer=user.name)
    lines: list[tuple[str, dict[str, Any]]] = []
    for rec in records:
        try:
            if rec.problem:
                raise InputError(rec.problem)
            lines.append((rec.where, _line(rec.value, decision)))
        except InputError as exc:
            result.skipped.append((rec.where, str(exc)))
    where_is = rounds_of(store, [line["episode_id"] for _, line in lines if not line["round"]])
    for where, line in lines:
        try:
            round_id = line["round"] or where_is.get(line["episode_id"])
            if round_id is None:
                raise InputError(f"no episode {line['episode_id']!r} in any round")
            started = utcnow()
            saved = decisions.record_decision(
                store, reviewer=user.name, round_id=round_id, episode_id=line["episode_id"],
                decision=line["decision"], reason_code=line["reason"], reason_text=line["note"],
                first_wrong_step=line["first_wrong_step"], recovered=line["recovered"], repeat_window=FOREVER)
        except InputError as exc:
            result.skipped.append((where, str(exc)))
            continue
        if saved.decided_at is not None and saved.decided_at.replace(tzinfo=None) < started.replace(tzinfo=None):
            result.already += 1
        else:
            result.recorded += 1
        if on_line is not None:
            on_line()
    order = {rec.where: rec.number for rec in records}
    result.skipped.sort(key=lambda item: order[item[0]])  # in the file's order, however they failed
    return result
