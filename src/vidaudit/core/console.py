"""The terminal, for every command (the CLI's, a suite's, a tool's): one stderr console, one-line errors, progress
bars, list options.

Light on purpose: ``vidaudit --help`` imports this module (rich and typer, nothing of numpy, pydantic or a
stage), so every command's start-up can use it. What a command prints on stdout (the figures it ends with) is
the caller's: see ``score.summary.print_scores`` and ``print_figures`` here."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from vidaudit.core.errors import ConfigError, VidauditError

console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(fn: F) -> F:
    """Turn library errors into a one-paragraph message and exit code 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except VidauditError as e:
            # soft_wrap: never break a long path or command in the message across lines (copy-paste)
            console.print(f"[bold red]error:[/] {escape(str(e))}", soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def bar(
    *figures: ProgressColumn, remaining: bool = True, transient: bool = False, on: Console | None = None
) -> Progress:
    """The one look of vidaudit's progress bars (``progress_bar``, ``step_progress``, the run's
    ``run.progress.RichProgress``): the description, the bar, done/total, a stage's own ``figures``, the time
    elapsed and, with ``remaining``, the time left; on ``on`` (default: the stderr ``console``)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *figures,
        TimeElapsedColumn(),
        *([TimeRemainingColumn()] if remaining else []),
        console=on or console,
        transient=transient,
    )


#: the progress display now on screen: a bar opened inside another (a probe's videos inside the audit's data
#: step) becomes a second line of it, since a terminal holds one live display at a time
_LIVE: list[Progress] = []


@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar; yields ``update(done, total)``. Until the first update it shows the time elapsed
    (a step that reports no counts is never silent)."""
    if _LIVE:
        prog = _LIVE[-1]
        task = prog.add_task(description, total=None)
        try:
            yield lambda done, total: prog.update(task, completed=done, total=total)
        finally:
            prog.stop_task(task)
        return
    with bar() as prog:
        task = prog.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        _LIVE.append(prog)
        try:
            yield update
        finally:
            _LIVE.pop()


def executor_option() -> Any:
    """A ``generate`` command's ``--executor`` (``pool_factory``'s choice: here, or one Ray task per video)."""
    return typer.Option(
        "local",
        "--executor",
        help="local, or ray: each video is a Ray task (--out on storage every node mounts; docs/scale-out.md).",
    )


def ray_address_option() -> Any:
    """``--ray-address`` of every command that takes ``--executor ray`` (``pool_factory``'s second argument)."""
    return typer.Option(None, "--ray-address", help="A running Ray cluster (default: start one here).")


@contextmanager
def interrupted(resume: str) -> Iterator[None]:
    """Ctrl-C inside the block ends the command with exit 130 and one line saying how to go on, e.g. ``interrupted:
    every stored call is kept; resume with vidaudit run --resume RUN`` (no traceback: what was stored is kept)."""
    try:
        yield
    except KeyboardInterrupt:
        console.print(f"interrupted: {resume}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(130) from None


def print_figures(text: str) -> None:
    """A command's closing figures (a table from ``score.terminal``) on stdout, after a blank line."""
    typer.echo("")
    typer.echo(text)


@contextmanager
def step_progress(description: str) -> Iterator[Callable[[str, int, int | None], None]]:
    """A rich progress bar for a stage made of named steps; yields ``update(step, done, total)`` (total None:
    a spinner). On the way out it prints one line of where the time went, e.g. ``report: scoring 2.4 s ·
    thumbnails 9.8 s · figures 7.9 s``, so a log (no terminal, no live bar) says it too."""
    spent: dict[str, float] = {}
    state: dict[str, Any] = {"step": "", "since": time.monotonic()}
    with bar(remaining=False, transient=True) as prog:
        task = prog.add_task(description, total=None)

        def update(step: str, done: int, total: int | None) -> None:
            now = time.monotonic()
            if step != state["step"]:
                if state["step"]:
                    spent[state["step"]] = spent.get(state["step"], 0.0) + now - state["since"]
                state["step"], state["since"] = step, now
            prog.update(task, description=f"{description}: {step}", completed=done, total=total)

        try:
            yield update
        finally:
            if state["step"]:
                spent[state["step"]] = spent.get(state["step"], 0.0) + time.monotonic() - state["since"]
    if spent:
        console.print(
            f"{description}: " + " · ".join(f"{k} {v:.1f} s" for k, v in spent.items()), highlight=False, soft_wrap=True
        )


def parse_list(text: str | None, kind: Callable[[str], Any], name: str) -> list[Any] | None:
    if text is None:
        return None
    try:
        return [kind(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise ConfigError(f"--{name}: cannot read {text!r} as a comma-separated list ({e})") from e
