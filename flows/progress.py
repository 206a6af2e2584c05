"""Progress for long work: a rich bar on a terminal (stderr), nothing when disabled."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class StepProgress:
    """A bar over ``total`` units of work (shards collected, checks run, files exported)."""

    def __init__(self, *, enabled: bool, total: int, label: str, unit: str, done: int = 0) -> None:
        self._progress = (
            Progress(
                TextColumn(f"[bold]{label}[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(unit),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            if enabled
            else None
        )
        self._total, self._done = total, done
        self._task = None

    def __enter__(self) -> StepProgress:
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task("work", total=self._total, completed=self._done)
        return self

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def update(self, done: int, total: int) -> None:
        """``done`` of ``total`` units (for work whose size is known only once it has begun)."""
        self._total = total
        if self._progress is not None:
            self._progress.update(self._task, completed=done, total=total)

    def __exit__(self, exc_type, *exc) -> None:
        if self._progress is not None:
            if exc_type is None:  # steps that had nothing to do still count as done
                self._progress.update(self._task, completed=self._total)
            self._progress.stop()


class RoundProgress(StepProgress):
    """A bar over shards (a round's, or an eval's)."""

    def __init__(self, *, enabled: bool, total: int, done: int, round_id: str) -> None:
        super().__init__(enabled=enabled, total=total, done=done, label=f"{round_id} collecting", unit="shards")
