"""State tables of the review gate: reviewer accounts, drafts, adjudications, releases.

Kept apart from :mod:`warehouse.state` (rounds, shards, reviews) so the review app can
grow without reshaping the core tables; ``warehouse.state`` imports this module so
``make_sql_engine`` creates these tables with the rest. CRUD functions take ``*, session``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import JSON, Column, Field, Session, SQLModel, select

from warehouse.timestamps import UtcDateTime, utcnow
from warehouse.upsert import insert_for

ROLES = ("reviewer", "lead")


class Reviewer(SQLModel, table=True):
    """A person who may decide. The password is stored only as a salted scrypt hash."""

    __tablename__ = "reviewers"
    name: str = Field(primary_key=True)
    role: str = "reviewer"  # reviewer, lead
    password_hash: str
    active: bool = True
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)
    # The full e-mail address of this person's Label Studio user (lower case), or None: Label
    # Studio's annotations are matched to accounts by it, and only by it.
    email: str | None = Field(default=None, index=True)


class Gate(SQLModel, table=True):
    """A row per thing whose read-check-write must not interleave with another's (a name's sign-ins,
    a reviewer's decision on an episode): :func:`take_gate` writes it first in a transaction, which
    holds its row lock (PostgreSQL) or the database's write lock (SQLite) until the commit."""

    __tablename__ = "gates"
    key: str = Field(primary_key=True)
    taken: int = 0


class SignInFailure(SQLModel, table=True):
    """A failed sign-in under a name (known or not), kept to throttle password guessing."""

    __tablename__ = "signin_failures"
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    failed_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class ReviewDraft(SQLModel, table=True):
    """What a reviewer has chosen on an episode but not yet submitted (kept if the browser closes)."""

    __tablename__ = "review_drafts"
    episode_id: str = Field(primary_key=True)
    reviewer: str = Field(primary_key=True)
    round_id: str = ""
    reason_code: str = ""
    reason_text: str = ""
    first_wrong_step: int | None = None
    recovered: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class Adjudication(SQLModel, table=True):
    """A lead's final word on an episode whose reviewers disagreed; the latest one counts."""

    __tablename__ = "adjudications"
    id: int | None = Field(default=None, primary_key=True)
    episode_id: str = Field(index=True)
    round_id: str = Field(index=True)
    lead: str
    decision: str
    reason: str = ""
    first_wrong_step: int | None = None
    recovered: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})  # see state.ReviewBase
    decided_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class Release(SQLModel, table=True):
    """A lead's approval of a dataset version together with the next round's sampling plan."""

    __tablename__ = "releases"
    id: str = Field(primary_key=True)  # "rel-0001"
    number: int = Field(index=True, unique=True)
    dataset_version: str
    round_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    episodes: int = 0  # episodes approved into the release
    episodes_digest: str = ""  # digest of the sorted approved episode ids, checked on export
    sampling_plan: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    selection: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # rules that chose the episodes
    notes: str = ""
    approved_by: str
    approved_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


# --- gates -------------------------------------------------------------------------


def take_gate(*, session: Session, key: str) -> None:
    """Lock ``key`` for the rest of ``session``'s transaction (call it first in the transaction):
    another session taking the same key waits until this one commits or rolls back."""
    table = Gate.__table__
    stmt = insert_for(session.get_bind().dialect.name)(table).values(key=key, taken=1)
    session.exec(stmt.on_conflict_do_update(index_elements=[table.c.key], set_={"taken": table.c.taken + 1}))


# --- reviewers ----------------------------------------------------------------------


def add_reviewer(*, session: Session, reviewer: Reviewer) -> bool:
    """Insert a reviewer; False if the name is taken (nothing changed)."""
    session.add(reviewer)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    return True


def get_reviewer(*, session: Session, name: str) -> Reviewer | None:
    return session.get(Reviewer, name)


def list_reviewers(*, session: Session) -> list[Reviewer]:
    return list(session.exec(select(Reviewer).order_by(Reviewer.name)))


def reviewer_by_email(*, session: Session, email: str) -> Reviewer | None:
    """The account whose Label Studio e-mail is ``email`` (compared in lower case), or None."""
    return session.exec(select(Reviewer).where(Reviewer.email == email.strip().lower())).first()


def replace_password_hash(*, session: Session, name: str, old: str, new: str) -> bool:
    """Store ``new`` as ``name``'s hash only if ``old`` is still stored (a stronger hash of the same
    password, written once even when two sign-ins upgrade at the same time); True if written."""
    stmt = sa.update(Reviewer).where(Reviewer.name == name, Reviewer.password_hash == old).values(password_hash=new)
    done = session.exec(stmt).rowcount
    session.commit()
    return bool(done)


def update_reviewer(*, session: Session, reviewer: Reviewer, role: str | None = None, active: bool | None = None,
                    password_hash: str | None = None, email: str | None = None) -> Reviewer:
    """Change what is given of an account (loaded in ``session``) and commit; ``email=""`` clears it."""
    if email is not None:
        reviewer.email = email or None
    if role is not None:
        reviewer.role = role
    if active is not None:
        reviewer.active = active
    if password_hash is not None:
        reviewer.password_hash = password_hash
    session.add(reviewer)
    session.commit()
    return reviewer


def active_leads(*, session: Session) -> list[str]:
    """Names of the active accounts with the lead's role."""
    stmt = select(Reviewer.name).where(Reviewer.role == "lead", Reviewer.active.is_(True)).order_by(Reviewer.name)
    return list(session.exec(stmt))


def signin_failures_since(*, session: Session, name: str, since: datetime) -> list[datetime]:
    """When ``name``'s failed sign-ins since ``since`` happened, oldest first (in UTC)."""
    stmt = (select(SignInFailure.failed_at).where(SignInFailure.name == name, SignInFailure.failed_at >= since)
            .order_by(SignInFailure.failed_at))
    return list(session.exec(stmt))


def add_signin_failure(*, session: Session, name: str, at: datetime, keep_since: datetime) -> None:
    """Count a failure, and forget every failure (of any name) older than ``keep_since``."""
    session.exec(sa.delete(SignInFailure).where(SignInFailure.failed_at < keep_since))
    session.add(SignInFailure(name=name, failed_at=at))
    session.commit()


def clear_signin_failures(*, session: Session, name: str) -> None:
    """Forget ``name``'s failures (after a good sign-in)."""
    session.exec(sa.delete(SignInFailure).where(SignInFailure.name == name))
    session.commit()


# --- drafts -------------------------------------------------------------------------


def save_draft(*, session: Session, draft: ReviewDraft) -> None:
    draft.updated_at = utcnow()
    session.merge(draft)
    session.commit()


def get_draft(*, session: Session, episode_id: str, reviewer: str) -> ReviewDraft | None:
    return session.get(ReviewDraft, (episode_id, reviewer))


def delete_draft(*, session: Session, episode_id: str, reviewer: str) -> None:
    draft = session.get(ReviewDraft, (episode_id, reviewer))
    if draft is not None:
        session.delete(draft)
        session.commit()


# --- adjudications ------------------------------------------------------------------


def add_adjudication(*, session: Session, adjudication: Adjudication) -> Adjudication:
    session.add(adjudication)
    session.commit()
    session.refresh(adjudication)
    return adjudication


def adjudications(*, session: Session, round_ids: list[str] | None = None) -> dict[str, Adjudication]:
    """The latest adjudication per episode."""
    stmt = select(Adjudication).order_by(Adjudication.decided_at, Adjudication.id)
    if round_ids:
        stmt = stmt.where(Adjudication.round_id.in_(round_ids))
    return {a.episode_id: a for a in session.exec(stmt)}


# --- releases -----------------------------------------------------------------------


def latest_release(*, session: Session) -> Release | None:
    return session.exec(select(Release).order_by(Release.number.desc())).first()


def get_release(*, session: Session, release_id: str) -> Release | None:
    return session.get(Release, release_id)


def list_releases(*, session: Session) -> list[Release]:
    return list(session.exec(select(Release).order_by(Release.number)))


def add_release(*, session: Session, release: Release) -> Release:
    """Insert the next release; numbering is by the unique ``number`` so two leads
    approving at once cannot both take the same number (the second gets an error)."""
    session.add(release)
    session.commit()
    session.refresh(release)
    return release
