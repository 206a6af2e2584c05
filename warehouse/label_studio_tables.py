"""State tables of the Label Studio mirror: which task holds which episode, which
annotation became which review decision, and which Label Studio user is which reviewer.

An annotation is pulled once per (id, updated_at): an edit in Label Studio appends a new
decision (the reviewer's latest counts), a deletion removes the decisions it made. CRUD
functions take ``*, session``; none commits, so a pull applies in one transaction.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, Session, SQLModel, select

from warehouse.timestamps import UtcDateTime, utcnow


class LabelStudioTask(SQLModel, table=True):
    """An episode pushed as a Label Studio task (one per project and episode)."""

    __tablename__ = "label_studio_tasks"
    project_id: int = Field(primary_key=True)
    episode_id: str = Field(primary_key=True)
    task_id: int = Field(index=True)
    round_id: str = Field(index=True)
    digest: str = ""  # of the task data last pushed; a change updates the task
    pushed_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class LabelStudioAnnotation(SQLModel, table=True):
    """An annotation that became a review decision (``review_id``)."""

    __tablename__ = "label_studio_annotations"
    annotation_id: int = Field(primary_key=True)
    project_id: int = Field(index=True)
    task_id: int
    episode_id: str = Field(index=True)
    reviewer: str
    updated_at: str  # Label Studio's own timestamp, compared as given
    review_id: int | None = None  # None: a draft or skipped annotation, which decides nothing
    pulled_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class LabelStudioUser(SQLModel, table=True):
    """A Label Studio user (by its id, which outlives an e-mail change) and the reviewer its
    annotations are recorded as; one reviewer per user, so two people never share one vote."""

    __tablename__ = "label_studio_users"
    user_id: int = Field(primary_key=True)
    reviewer: str = Field(unique=True)
    email: str = ""  # as it was when first pulled
    linked_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


def user_links(*, session: Session) -> dict[int, LabelStudioUser]:
    """Every Label Studio user seen by a pull, by its id."""
    return {u.user_id: u for u in session.exec(select(LabelStudioUser))}


def project_tasks(*, session: Session, project_id: int) -> dict[str, LabelStudioTask]:
    """The project's pushed tasks by episode id."""
    stmt = select(LabelStudioTask).where(LabelStudioTask.project_id == project_id)
    return {t.episode_id: t for t in session.exec(stmt)}


def project_annotations(*, session: Session, project_id: int) -> dict[int, LabelStudioAnnotation]:
    stmt = select(LabelStudioAnnotation).where(LabelStudioAnnotation.project_id == project_id)
    return {a.annotation_id: a for a in session.exec(stmt)}
