"""The journal of model replies: append-only, keyed by (key, index), for exactly-once resume.

A key names one conversation: an episode id for the planner, ``writer:<task id>`` for the
task writer. A reply is appended as soon as it arrives and before it is acted on; a rerun
takes journaled replies instead of asking the model again. First write wins: a place that
holds a reply keeps it, and whoever appends there gets that reply back to act on.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import Any, Protocol

Place = tuple[str, int]  # (conversation key, index)
Row = tuple[str, int, dict[str, Any]]  # (conversation key, index, reply)


class ReplyJournal(Protocol):
    """Append-only store of model replies, keyed by (conversation key, index)."""

    def replies(self, episode_id: str) -> dict[int, dict[str, Any]]: ...

    async def append(self, episode_id: str, index: int, reply: dict[str, Any]) -> dict[str, Any]:
        """Journal ``reply`` at (``episode_id``, ``index``) durably; the reply kept there (this one,
        or the one journaled there first), once it is durable."""
        ...


class MemoryJournal:
    """A journal in memory (tests, benchmarks, calls nobody needs to resume)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[int, dict[str, Any]]] = {}

    def replies(self, episode_id: str) -> dict[int, dict[str, Any]]:
        return dict(self.entries.get(episode_id, {}))

    async def append(self, episode_id: str, index: int, reply: dict[str, Any]) -> dict[str, Any]:
        return self.entries.setdefault(episode_id, {}).setdefault(index, reply)


class GroupCommitJournal(ABC):
    """A journal in durable storage, written by group commit: the replies that arrive while one
    write is under way go out together in the next, in a worker thread, so the event loop never
    waits on storage and a busy round writes once per batch, not once per reply. Each caller of
    :meth:`append` resumes only once its own reply is durable.

    Subclasses say how a conversation's replies are read (:meth:`load`) and how a batch is written
    (:meth:`write`, run in a worker thread, one batch at a time), and may act once a reply is durable
    (:meth:`committed`). Bound to no event loop until the first append; one loop at a time."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[int, dict[str, Any]]] = {}  # what is durable, of the keys read or written
        self._read: set[str] = set()  # keys whose durable replies were read (:meth:`load`)
        self.batches = 0  # batches written (one transaction each)
        self._queue: list[tuple[Row, asyncio.Future]] = []
        self._writer: asyncio.Task | None = None

    @abstractmethod
    def write(self, rows: list[Row]) -> dict[Place, dict[str, Any]]:
        """Write ``rows`` durably in one go, first write wins; the reply kept at each place."""

    @abstractmethod
    def load(self, key: str) -> dict[int, dict[str, Any]]:
        """The durable replies of conversation ``key`` (read once per key, when it is first asked for)."""

    def committed(self, key: str, index: int) -> None:
        """Called in the event loop for each reply once durable, in arrival order, before its caller resumes."""

    def replies(self, episode_id: str) -> dict[int, dict[str, Any]]:
        if episode_id not in self._read:
            self.entries[episode_id] = {**self.load(episode_id), **self.entries.get(episode_id, {})}
            self._read.add(episode_id)
        return dict(self.entries[episode_id])

    async def append(self, episode_id: str, index: int, reply: dict[str, Any]) -> dict[str, Any]:
        # a place journaled by someone else and not read here yet is found by the write (first write wins)
        known = self.entries.get(episode_id, {}).get(index)
        if known is not None:
            return known
        done = asyncio.get_running_loop().create_future()
        self._queue.append(((episode_id, index, reply), done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_queued())
        # shielded: a caller cancelled while it waits leaves its reply in the batch, written all the same
        return await asyncio.shield(done)

    async def _write_queued(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                kept = await asyncio.to_thread(self.write, [row for row, _ in batch])
            except Exception as exc:  # noqa: BLE001 - every waiter of the batch gets the error
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                continue
            except BaseException:  # cancelled: the loop is closing, nobody waits any more
                for _, done in batch + self._queue:
                    done.cancel()
                self._queue = []
                raise
            self.batches += 1
            for (key, index, _), _ in batch:
                self.entries.setdefault(key, {})[index] = kept[(key, index)]
            for (key, index, _), done in batch:
                self.committed(key, index)
                if not done.done():
                    done.set_result(kept[(key, index)])
