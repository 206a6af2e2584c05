"""The journal of model replies: append-only, keyed by (key, index), for exactly-once resume.

A key names one conversation: an episode id for the planner, ``writer:<task id>`` for the
task writer. A reply is appended as soon as it arrives and before it is acted on; a rerun
takes journaled replies instead of asking the model again.
"""

from __future__ import annotations

from typing import Any, Protocol


class ReplyJournal(Protocol):
    """Append-only store of model replies, keyed by (conversation key, index)."""

    def replies(self, episode_id: str) -> dict[int, dict[str, Any]]: ...

    def append(self, episode_id: str, index: int, reply: dict[str, Any]) -> None: ...


class MemoryJournal:
    """A journal in memory (tests, benchmarks, calls nobody needs to resume)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[int, dict[str, Any]]] = {}

    def replies(self, episode_id: str) -> dict[int, dict[str, Any]]:
        return dict(self.entries.get(episode_id, {}))

    def append(self, episode_id: str, index: int, reply: dict[str, Any]) -> None:
        self.entries.setdefault(episode_id, {})[index] = reply
