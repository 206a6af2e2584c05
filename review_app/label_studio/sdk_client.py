"""The real Label Studio, through ``label-studio-sdk`` (2.x, as Label Studio 1.23 ships).

The token is a personal access token (a JWT refresh token the SDK exchanges for short-lived
access tokens) or a legacy token; it is handed to the SDK and appears in no message: errors
are rebuilt from the status code and the server's own detail, with the token cut out.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from review_app.label_studio.client import (
    LabelStudioError,
    RemoteAnnotation,
    RemoteProject,
    RemoteTask,
    RemoteUser,
)
from warehouse.errors import first_line

_STATUS = {
    401: "refused the token (401); set FLYWHEEL_LABEL_STUDIO__TOKEN to a valid personal access token",
    403: "refused the request (403): the token's user may not do this",
    404: "has no such object (404)",
}


def _detail(body: Any) -> str:
    if isinstance(body, dict):
        for key in ("validation_errors", "detail", "message", "error"):
            if body.get(key):
                return first_line(Exception(str(body[key])))[:300]
    return first_line(Exception(str(body)))[:300] if body else ""


# Nested fields are named alongside the task's: without them an annotation comes back as its id alone.
_WITH_ANNOTATIONS = "id,data,annotations,completed_by,result,updated_at,created_at,was_cancelled"


class SdkLabelStudio:
    """:class:`~review_app.label_studio.client.LabelStudioClient` over the real server."""

    def __init__(self, url: str, token: str, *, timeout_s: float = 60.0, page_size: int = 500) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self.page_size = page_size
        with self._calls("connect"):
            self._ls = LabelStudio(base_url=self.url, api_key=token, timeout=timeout_s)

    @contextmanager
    def _calls(self, what: str) -> Iterator[None]:
        """Library and network errors as one LabelStudioError line without the token."""
        try:
            yield
        except ApiError as exc:
            status = exc.status_code or 0
            detail = _detail(exc.body)
            text = _STATUS.get(status) or f"answered {status} ({detail or 'no detail'})"
            if status in (401, 403) and detail and status not in _STATUS:
                text += f": {detail}"
            raise LabelStudioError(f"Label Studio at {self._clean(self.url)} {self._clean(text)} while trying to {what}") from None
        except httpx.TimeoutException:
            raise LabelStudioError(f"Label Studio at {self.url} did not answer in time while trying to {what}") from None
        except httpx.HTTPError as exc:
            raise LabelStudioError(
                f"cannot reach Label Studio at {self._clean(self.url)} ({type(exc).__name__}: "
                f"{self._clean(first_line(exc))}) while trying to {what}"
            ) from None
        except (ValueError, TypeError, KeyError) as exc:  # a reply of an unexpected shape
            raise LabelStudioError(f"unexpected answer from Label Studio at {self._clean(self.url)} while trying to "
                                   f"{what}: {self._clean(first_line(exc))}") from None

    def _clean(self, text: str) -> str:
        """``text`` from outside (a URL, a library's message) with the token blanked; our own words are left
        alone (a short token may be any word's part)."""
        return text.replace(self._token, "<token>") if self._token else text

    # --- the interface ---------------------------------------------------------------

    def whoami(self) -> RemoteUser:
        with self._calls("check who the token belongs to"):
            me = self._ls.users.whoami()
            return RemoteUser(int(me.id), str(me.email or ""), str(me.username or ""))

    def find_project(self, title: str) -> RemoteProject | None:
        with self._calls(f"find project {title!r}"):
            for p in self._ls.projects.list(title=title, page_size=100):
                if p.title == title:
                    full = self._ls.projects.get(id=p.id)
                    return RemoteProject(int(full.id), str(full.title), str(full.label_config or ""))
        return None

    def create_project(self, title: str, label_config: str) -> RemoteProject:
        with self._calls(f"create project {title!r}"):
            p = self._ls.projects.create(title=title, label_config=label_config)
            return RemoteProject(int(p.id), str(p.title), str(p.label_config or label_config))

    def set_label_config(self, project_id: int, label_config: str) -> None:
        with self._calls(f"restore the labeling config of project {project_id}"):
            self._ls.projects.update(id=project_id, label_config=label_config)

    def tasks(self, project_id: int, *, annotations: bool) -> Iterator[RemoteTask]:
        with self._calls(f"list the tasks of project {project_id}"):
            # Only the fields we read: the server computes the others per task, 5-7 times slower.
            pager = self._ls.tasks.list(project=project_id, fields="all" if annotations else "task_only",
                                        include=_WITH_ANNOTATIONS if annotations else "id,data",
                                        page_size=self.page_size)
            for t in pager:
                anns = [self._annotation(int(t.id), a) for a in (t.annotations or [])] if annotations else []
                yield RemoteTask(int(t.id), dict(t.data or {}), anns)

    @staticmethod
    def _annotation(task_id: int, a: dict[str, Any]) -> RemoteAnnotation:
        missing = [k for k in ("id", "completed_by", "updated_at", "result") if k not in a]
        if missing:
            raise ValueError(f"annotation {a.get('id')} of task {task_id} came without {', '.join(missing)}")
        user = a["completed_by"]
        if isinstance(user, dict):
            user = user.get("id")
        return RemoteAnnotation(int(a["id"]), task_id, int(user) if user is not None else None,
                                str(a["updated_at"] or a.get("created_at") or ""), list(a["result"] or []),
                                bool(a.get("was_cancelled")))

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> None:
        with self._calls(f"import {len(tasks)} tasks into project {project_id}"):
            self._ls.projects.import_tasks(id=project_id, request=tasks)

    def update_task(self, project_id: int, task_id: int, payload: dict[str, Any]) -> None:
        with self._calls(f"update task {task_id}"):
            self._ls.tasks.update(id=str(task_id), data=payload["data"], project=project_id)
            for old in self._ls.predictions.list(task=task_id):
                self._ls.predictions.delete(id=old.id)
            for p in payload.get("predictions", []):
                self._ls.predictions.create(task=task_id, result=p["result"], model_version=p.get("model_version"),
                                            score=p.get("score"))

    def users(self) -> list[RemoteUser]:
        with self._calls("list users"):
            return [RemoteUser(int(u.id), str(u.email or ""), str(u.username or "")) for u in self._ls.users.list()]


def connect(url: str, token: str, *, timeout_s: float = 60.0, page_size: int = 500) -> SdkLabelStudio:
    """A client whose token was checked against the server (one line if unreachable or refused)."""
    client = SdkLabelStudio(url, token, timeout_s=timeout_s, page_size=page_size)
    client.whoami()
    return client
