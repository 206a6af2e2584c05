"""An in-memory Label Studio for unit tests of the sync's logic (never for integration tests)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from review_app.label_studio.client import (
    LabelStudioError,
    RemoteAnnotation,
    RemoteProject,
    RemoteTask,
    RemoteUser,
)


class FakeLabelStudio:
    """Projects, tasks, annotations and users in dicts. ``fail_after_pages`` makes the Nth
    page of a task listing fail, as a dropped connection would."""

    def __init__(self, token: str = "pat-good", *, page_size: int = 100) -> None:
        self.token = token
        self.page_size = page_size
        self.projects: dict[int, RemoteProject] = {}
        self.task_data: dict[int, dict[str, Any]] = {}  # task id -> {"project", "data", "predictions"}
        self.annotations: dict[int, RemoteAnnotation] = {}
        self.people: dict[int, RemoteUser] = {1: RemoteUser(1, "admin@example.com", "admin")}
        self.reachable = True
        self.fail_after_pages: int | None = None
        self.calls: list[str] = []
        self._next = 1

    def _id(self) -> int:
        self._next += 1
        return self._next

    def _check(self, what: str) -> None:
        self.calls.append(what)
        if not self.reachable:
            raise LabelStudioError("cannot reach Label Studio at http://fake: connection refused")

    # --- the interface ---------------------------------------------------------------

    def whoami(self) -> RemoteUser:
        self._check("whoami")
        return self.people[1]

    def find_project(self, title: str) -> RemoteProject | None:
        self._check("find_project")
        return next((p for p in self.projects.values() if p.title == title), None)

    def create_project(self, title: str, label_config: str) -> RemoteProject:
        self._check("create_project")
        project = RemoteProject(self._id(), title, label_config)
        self.projects[project.id] = project
        return project

    def set_label_config(self, project_id: int, label_config: str) -> None:
        self._check("set_label_config")
        p = self.projects[project_id]
        self.projects[project_id] = RemoteProject(p.id, p.title, label_config)

    def tasks(self, project_id: int, *, annotations: bool) -> Iterator[RemoteTask]:
        self._check("tasks")
        ids = sorted(t for t, v in self.task_data.items() if v["project"] == project_id)
        for page, start in enumerate(range(0, len(ids), self.page_size)):
            if self.fail_after_pages is not None and page >= self.fail_after_pages:
                raise LabelStudioError("Label Studio dropped the connection while listing tasks")
            for tid in ids[start:start + self.page_size]:
                anns = [a for a in self.annotations.values() if a.task_id == tid] if annotations else []
                yield RemoteTask(tid, copy.deepcopy(self.task_data[tid]["data"]), sorted(anns, key=lambda a: a.id))

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> None:
        self._check("import_tasks")
        for t in tasks:
            self.task_data[self._id()] = {"project": project_id, "data": copy.deepcopy(t["data"]),
                                          "predictions": copy.deepcopy(t.get("predictions", []))}

    def update_task(self, project_id: int, task_id: int, payload: dict[str, Any]) -> None:
        self._check("update_task")
        self.task_data[task_id] = {"project": project_id, "data": copy.deepcopy(payload["data"]),
                                   "predictions": copy.deepcopy(payload.get("predictions", []))}

    def users(self) -> list[RemoteUser]:
        self._check("users")
        return list(self.people.values())

    # --- what an annotator does in the UI (for tests) --------------------------------

    def add_user(self, email: str, username: str = "") -> RemoteUser:
        user = RemoteUser(self._id(), email, username or email)
        self.people[user.id] = user
        return user

    def annotate(self, task_id: int, user: RemoteUser, result: list[dict[str, Any]], *, cancelled: bool = False,
                 annotation_id: int | None = None) -> RemoteAnnotation:
        """Create an annotation, or edit ``annotation_id`` (a new update time)."""
        aid = annotation_id or self._id()
        stamp = datetime.now(UTC).isoformat() + f"#{self._id()}"  # strictly new on every edit
        ann = RemoteAnnotation(aid, task_id, user.id, stamp, copy.deepcopy(result), cancelled)
        self.annotations[aid] = ann
        return ann

    def delete_annotation(self, annotation_id: int) -> None:
        del self.annotations[annotation_id]

    def task_id_of(self, episode_id: str) -> int:
        return next(t for t, v in self.task_data.items() if v["data"].get("episode_id") == episode_id)
