"""Progress for long work: a rich bar on a terminal, nothing when disabled."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class RoundProgress:
    """A bar over a round's collection shards."""

    def __init__(self, *, enabled: bool, total: int, done: int, round_id: str) -> None:
        self._progress = (
            Progress(
                TextColumn(f"[bold]{round_id}[/] collecting"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("shards"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            if enabled
            else None
        )
        self._total, self._done = total, done
        self._task = None

    def __enter__(self) -> RoundProgress:
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task("collect", total=self._total, completed=self._done)
        return self

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()
