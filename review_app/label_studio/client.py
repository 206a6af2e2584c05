"""The small interface the sync needs from Label Studio, and the records it returns.

Two implementations: :mod:`review_app.label_studio.sdk_client` (the real server, through
``label-studio-sdk``) and :mod:`review_app.label_studio.fake_client` (in memory, for the
sync's logic in unit tests). Errors are :class:`LabelStudioError` with one line that never
holds the token.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from warehouse.errors import FlywheelError


class LabelStudioError(FlywheelError):
    """Label Studio is unreachable, refuses the token, or answers something unexpected."""


@dataclass(frozen=True)
class RemoteProject:
    id: int
    title: str
    label_config: str


@dataclass(frozen=True)
class RemoteAnnotation:
    id: int
    task_id: int
    user_id: int | None
    updated_at: str
    result: list[dict[str, Any]]
    cancelled: bool = False  # skipped by the annotator: decides nothing


@dataclass(frozen=True)
class RemoteTask:
    id: int
    data: dict[str, Any]
    annotations: list[RemoteAnnotation] = field(default_factory=list)

    @property
    def episode_id(self) -> str:
        return str(self.data.get("episode_id") or "")


@dataclass(frozen=True)
class RemoteUser:
    id: int
    email: str
    username: str = ""


class LabelStudioClient(Protocol):
    """What push, pull and sync call. Every method raises LabelStudioError on failure."""

    def whoami(self) -> RemoteUser: ...

    def find_project(self, title: str) -> RemoteProject | None: ...

    def create_project(self, title: str, label_config: str) -> RemoteProject: ...

    def set_label_config(self, project_id: int, label_config: str) -> None: ...

    def tasks(self, project_id: int, *, annotations: bool) -> Iterator[RemoteTask]:
        """Every task of the project, page by page (with annotations when asked)."""
        ...

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> None:
        """Create tasks from ``{"data": ..., "predictions": [...]}`` payloads."""
        ...

    def update_task(self, project_id: int, task_id: int, payload: dict[str, Any]) -> None:
        """Replace a task's data and its prediction."""
        ...

    def users(self) -> list[RemoteUser]: ...
