"""``vidaudit demo``: the whole flow on built-in defaults (no key, no GPU, no download)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from vidaudit.core.types import ModelSpec
from vidaudit.run.plan import parse_condition

DEMO_MODELS = ("oracle", "chance", "ideal-observer")
DEMO_CONDITIONS = ("native", "frames@1")


def run_demo(out: Path, *, workers: int | None = None, console: Console | None = None) -> dict[str, Path]:
    from vidaudit.cli_common import progress_bar
    from vidaudit.run.cli_support import print_summary
    from vidaudit.run.progress import RichProgress
    from vidaudit.run.session import execute
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.grid import preset
    from vidaudit.suites.counting.report_run import report_run

    console = console or Console(stderr=True)
    out = Path(out)
    data, run_dir = out / "data", out / "run"
    with progress_bar("rendering the smoke grid") as update:
        res = generate(preset("smoke"), data, workers=workers, skip_existing=True, on_progress=update)
    console.print(f"data: {res.manifest} ({len(res.samples)} verified videos)")
    with RichProgress("trials", console=console) as bar:
        outcome = execute(data, run_dir, [ModelSpec.parse(m) for m in DEMO_MODELS],
                          [parse_condition(c) for c in DEMO_CONDITIONS], on_progress=bar)
    print_summary(outcome, console)
    with console.status("scoring and drawing the report"):
        paths = report_run(run_dir)
    report = json.loads(paths["json"].read_text())
    for note in report.get("notes", []):
        console.print(f"note: {note}", highlight=False, markup=False)
    for kind, p in paths.items():
        console.print(f"{kind:5s} {p}")
    return paths
