"""``vidaudit demo``: the whole flow on built-in defaults (no key, no GPU, no download)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from vidaudit.core.contract.roles import Commands
from vidaudit.core.types import ModelSpec
from vidaudit.run.conditions import parse_condition

DEMO_SUITE = "counting"
DEMO_MODELS = ("oracle", "chance", "ideal-observer")
DEMO_CONDITIONS = ("native", "frames@1")


def run_demo(
    out: Path, *, suite: str = DEMO_SUITE, workers: int | None = None, console: Console | None = None
) -> dict[str, Path]:
    from vidaudit.core.console import progress_bar
    from vidaudit.core.registry import get_suite
    from vidaudit.report.stage import report_run
    from vidaudit.run.cli_support import print_summary
    from vidaudit.run.progress import RichProgress
    from vidaudit.run.request import RunRequest
    from vidaudit.run.session import execute
    from vidaudit.score.stage import score_run

    console = console or Console(stderr=True)
    s = get_suite(suite)
    out = Path(out)
    data, run_dir = out / "data", out / "run"
    with progress_bar("rendering the demo data") as update:
        manifest = Commands.of(s).generate_demo(data, workers=workers, on_progress=update)
    console.print(f"data: {manifest}")
    with RichProgress("trials", console=console) as bar:
        request = RunRequest(
            data=data,
            out=run_dir,
            models=tuple(ModelSpec.parse(m) for m in DEMO_MODELS),
            conditions=tuple(parse_condition(c, s.default_prompt) for c in DEMO_CONDITIONS),
            suite=suite,
        )
        outcome = execute(request, on_progress=bar)
    print_summary(outcome, console, next_step=False)  # the demo writes the report itself
    with console.status("scoring"):
        score_run(run_dir)
    with console.status("drawing the report"):
        paths = report_run(run_dir)
    import json

    report = json.loads(paths["json"].read_text(encoding="utf-8"))
    for line in note_lines(report.get("notes", [])):
        console.print(line, highlight=False, markup=False)
    for kind, p in paths.items():
        console.print(f"{kind:5s} {p}")
    return paths


def note_lines(notes: list[str]) -> list[str]:
    """The report's notes as a list: one bullet each, and a note that lists items after " — " (``HEAD — a; b``)
    with one indented line per item."""
    lines = ["notes:"] if notes else []
    for note in notes:
        head, sep, items = note.partition(" — ")
        lines.append(f"  - {head}{':' if sep else ''}")
        lines += [f"      {item}" for item in items.split("; ")] if sep else []
    return lines
