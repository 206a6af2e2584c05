"""Recording decisions, drafts and adjudications. Every call commits at once.

A decision is appended (never updated): the latest decision of each reviewer on an
episode is theirs; two reviewers on the same episode are both kept and the overlap
rules (review_app.agreement) decide what counts. The same decision saved again within
:data:`REPEAT_WINDOW` (a double click, a replayed button) is the one already recorded.
A reason is stored as ``code`` or ``code: free text``; rejections need a code from
:data:`REJECT_REASONS`.
"""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import select

from review_app.accounts import User, require_user
from review_app.data import warehouse_cursor
from warehouse import review_tables as rt
from warehouse import state
from warehouse.errors import InputError, one_line
from warehouse.state import WITHDRAWN  # noqa: F401  (the decision value a withdrawal records)
from warehouse.store import Store
from warehouse.timestamps import utcnow

DECISIONS = ("approve", "reject", "needs_fix")
# Appended when a reviewer takes a decision back (an annotation deleted in Label Studio): their
# vote no longer counts from then on, while a release approved before still sees it.
REJECT_REASONS: dict[str, str] = {
    "wrong_result": "Wrong result: the task is not done as asked",
    "harmful_action": "Harmful or unwanted change to the phone",
    "hallucination": "Claims something the steps do not show",
    "bad_tool_use": "Wrong tool or wrong arguments",
    "loop_or_waste": "Loops or wastes steps",
    "task_broken": "The task itself is broken or ambiguous",
    "other": "Other (say why)",
}


REPEAT_WINDOW = timedelta(seconds=10)  # the same decision again within this is one decision, not two


def is_repeat(last: state.Review | None, new: state.Review, window: timedelta = REPEAT_WINDOW) -> bool:
    """True when ``new`` says exactly what ``last`` (the same reviewer's latest decision on the
    episode) said, less than ``window`` after it: one decision, not two."""
    if last is None:
        return False
    said = (last.round_id, last.decision, last.reason, last.first_wrong_step, bool(last.recovered))
    again = (new.round_id, new.decision, new.reason, new.first_wrong_step, bool(new.recovered))
    return said == again and timedelta(0) <= new.decided_at - last.decided_at < window


class ReasonNeeded(InputError):
    """A decision that needs a reason it lacks: a rejection without one, or ``other`` without
    words. ``str()`` names the codes, as ``flywheel decide --reason`` takes them; :attr:`in_labels`
    says the same with the labels the app's Reason list shows."""

    def __init__(self, message: str, in_labels: str) -> None:
        super().__init__(message)
        self.in_labels = in_labels


def as_shown_in_app(exc: Exception) -> str:
    """An error about a decision as the app says it: reasons by their labels, not their codes."""
    return exc.in_labels if isinstance(exc, ReasonNeeded) else str(exc)


def format_reason(code: str, text: str) -> str:
    text = text.strip()
    return f"{code}: {text}" if code and text else (code or text)


def check_decision(
    decision: str, reason_code: str, reason_text: str, first_wrong_step: int | None, n_steps: int | None,
    recovered: bool = False,
) -> None:
    """InputError naming the first thing wrong with a decision, or nothing."""
    if "\x00" in reason_text:  # PostgreSQL's text cannot hold it; nobody types it
        raise InputError("the notes hold a NUL character")
    if decision not in DECISIONS:
        raise InputError(f"unknown decision {decision!r} (one of {', '.join(DECISIONS)})")
    if reason_code and reason_code not in REJECT_REASONS:
        raise InputError(f"unknown reason {reason_code!r} (one of {', '.join(REJECT_REASONS)})")
    if decision == "reject" and not reason_code:
        labels = "; ".join(f"\"{label}\"" for label in REJECT_REASONS.values())
        raise ReasonNeeded(f"a rejection needs a reason (one of {', '.join(REJECT_REASONS)})",
                           f"A rejection needs a reason: choose one under Reason ({labels}).")
    if reason_code == "other" and not reason_text.strip():
        raise ReasonNeeded("reason 'other' needs a few words of free text",
                           f"The reason \"{REJECT_REASONS['other']}\" needs a few words under Notes.")
    if recovered and first_wrong_step is None:
        raise InputError("'recovered' needs a first wrong step to recover from")
    if first_wrong_step is not None:
        if first_wrong_step < 0 or (n_steps is not None and first_wrong_step >= n_steps):
            raise InputError(f"first wrong step {first_wrong_step} is not a step of this episode")
    elif recovered:
        raise InputError("'recovered' needs a first wrong step (the step the agent recovered from)")


def episode_steps(store: Store, round_id: str, episode_id: str) -> int:
    """How many steps the episode has; InputError if the round or the episode in it does not exist."""
    if "\x00" in round_id or "\x00" in episode_id:  # no id holds one, and PostgreSQL refuses it in a query
        raise InputError(f"no round {one_line(round_id)!r} with an episode {one_line(episode_id)!r}")
    with store.session() as s:
        known = s.get(state.Round, round_id) is not None
    if not known:
        raise InputError(f"no round {round_id!r}; a decision needs a round that exists")
    con = warehouse_cursor(store, [round_id])
    found = con.execute(
        "SELECT (SELECT count(*) FROM steps WHERE episode_id = $1) FROM episodes WHERE episode_id = $1", [episode_id]
    ).fetchone()
    if found is None:
        raise InputError(f"no episode {episode_id!r} in round {round_id}; nothing recorded")
    return int(found[0])


def record_decision(
    store: Store,
    *,
    reviewer: str,
    round_id: str,
    episode_id: str,
    decision: str,
    reason_code: str = "",
    reason_text: str = "",
    first_wrong_step: int | None = None,
    recovered: bool = False,
    repeat_window: timedelta = REPEAT_WINDOW,
) -> state.Review:
    """Save one decision by a reviewer with an account, and drop their draft. The same
    decision again within ``repeat_window`` adds nothing: the one recorded is returned.

    ``recovered`` (with a first wrong step): the agent recovered after it, so only that
    step is kept out of the loss; otherwise it and every later assistant turn are. A
    round or episode that does not exist is refused (InputError), and so is a first
    wrong step the episode does not have."""
    user = require_user(store, reviewer)
    check_decision(decision, reason_code, reason_text, first_wrong_step, episode_steps(store, round_id, episode_id), recovered)
    review = state.Review(
        episode_id=episode_id,
        round_id=round_id,
        reviewer=user.name,
        decision=decision,
        reason=format_reason(reason_code, reason_text),
        first_wrong_step=first_wrong_step,
        recovered=bool(recovered and first_wrong_step is not None),
    )
    with store.session() as s:
        # The gate holds off the same reviewer's other saves on this episode until this one commits:
        # two identical decisions at once (two app servers, a retried request) are one row, not two.
        rt.take_gate(session=s, key=f"decide:{user.name}:{episode_id}")
        review.decided_at = utcnow()  # when it passed the gate: after any save that went first
        last = state.latest_review(session=s, episode_id=episode_id, reviewer=user.name)
        saved = last if is_repeat(last, review, repeat_window) else state.add_review(session=s, review=review)
        rt.delete_draft(session=s, episode_id=episode_id, reviewer=user.name)
    return saved


def reviewer_history(store: Store, reviewer: str, episode_id: str) -> list[state.Review]:
    """This reviewer's decisions on the episode, oldest first."""
    with store.session() as s:
        stmt = (
            select(state.Review)
            .where(state.Review.episode_id == episode_id, state.Review.reviewer == reviewer)
            .order_by(state.Review.decided_at, state.Review.id)
        )
        return list(s.exec(stmt))


def episode_reviews(store: Store, episode_id: str) -> list[state.Review]:
    """Every decision on the episode, oldest first (for adjudication)."""
    with store.session() as s:
        stmt = select(state.Review).where(state.Review.episode_id == episode_id).order_by(state.Review.id)
        return list(s.exec(stmt))


# --- drafts -------------------------------------------------------------------------


def save_draft(
    store: Store,
    *,
    reviewer: str,
    round_id: str,
    episode_id: str,
    reason_code: str = "",
    reason_text: str = "",
    first_wrong_step: int | None = None,
    recovered: bool = False,
) -> None:
    """Keep what the reviewer has chosen so far (survives a closed browser); InputError for a step
    the episode does not have or a reason not on the list."""
    user = require_user(store, reviewer)
    n_steps = episode_steps(store, round_id, episode_id)
    if first_wrong_step is not None and not 0 <= first_wrong_step < n_steps:
        raise InputError(f"first wrong step {first_wrong_step} is not a step of this episode")
    if reason_code and reason_code not in REJECT_REASONS:
        raise InputError(f"unknown reason {one_line(reason_code)!r} (one of {', '.join(REJECT_REASONS)})")
    if "\x00" in reason_text:
        raise InputError("the notes hold a NUL character")
    with store.session() as s:
        rt.save_draft(
            session=s,
            draft=rt.ReviewDraft(
                episode_id=episode_id,
                reviewer=user.name,
                round_id=round_id,
                reason_code=reason_code,
                reason_text=reason_text,
                first_wrong_step=first_wrong_step,
                recovered=recovered,
            ),
        )


def load_draft(store: Store, *, reviewer: str, episode_id: str) -> rt.ReviewDraft | None:
    with store.session() as s:
        return rt.get_draft(session=s, episode_id=episode_id, reviewer=reviewer)


# --- adjudication -------------------------------------------------------------------


def adjudicate(
    store: Store,
    *,
    lead: User | str,
    round_id: str,
    episode_id: str,
    decision: str,
    reason_code: str = "",
    reason_text: str = "",
    first_wrong_step: int | None = None,
    recovered: bool = False,
) -> rt.Adjudication:
    """A lead settles a disputed episode; only leads may. ``recovered`` as in :func:`record_decision`."""
    user = require_user(store, lead.name if isinstance(lead, User) else lead)
    if not user.is_lead:
        raise InputError(f"{user.name} is not a lead; only leads adjudicate")
    check_decision(decision, reason_code, reason_text, first_wrong_step, episode_steps(store, round_id, episode_id), recovered)
    with store.session() as s:
        return rt.add_adjudication(
            session=s,
            adjudication=rt.Adjudication(
                episode_id=episode_id,
                round_id=round_id,
                lead=user.name,
                decision=decision,
                reason=format_reason(reason_code, reason_text),
                first_wrong_step=first_wrong_step,
                recovered=bool(recovered and first_wrong_step is not None),
            ),
        )
