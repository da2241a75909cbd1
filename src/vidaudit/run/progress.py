"""A rich progress bar fed by the executor's ``ProgressEvent``s (pass the instance as ``on_progress``)."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import TextColumn

from vidaudit.core.console import bar
from vidaudit.run.summary import ProgressEvent


class RichProgress:
    """``with RichProgress() as bar: await run_trials(..., CallOptions(on_progress=bar))``; keeps the last event.

    ``failed attempts`` counts attempts that failed (each tried again while its trial has attempts left); the
    closing summary says the same number in the same words (``36 called (36 ok, 0 errored after 5 failed
    attempts)``), so a retried failure is never read as an errored trial.

    The bar appears with the first event (the executor's ``start``, after every check of the run's
    inputs), so a run refused before any trial prints its error alone, never under an empty bar.
    """

    def __init__(self, description: str = "trials", console: Console | None = None) -> None:
        self.description = description
        self.last: ProgressEvent | None = None
        self.stop_message: str | None = None
        self._progress = bar(
            TextColumn(
                "ok {task.fields[ok]} · failed attempts {task.fields[errors]} · "
                "${task.fields[cost]:.4f} · {task.fields[skipped]} skipped"
            ),
            on=console or Console(stderr=True),
        )
        self._task = self._progress.add_task(description, total=None, ok=0, errors=0, cost=0.0, skipped=0)

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.last is not None:  # never started: stopping would print an empty line above the error
            self._progress.stop()

    def __call__(self, event: ProgressEvent) -> None:
        if self.last is None:
            self._progress.start()
        self.last = event
        self._progress.update(
            self._task,
            total=event.total,
            completed=event.done,
            ok=event.ok,
            errors=event.errors,
            cost=event.cost_usd,
            skipped=event.skipped,
        )
        if event.kind == "stop" and event.message:
            self.stop_message = event.message
            self._progress.console.print(f"[bold yellow]stopping:[/] {escape(event.message)}")
