"""What ``vidaudit audit`` prints: the plan with its cost estimate before any call, then where the profile is."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from vidaudit.core.console import print_figures, progress_bar, step_progress
from vidaudit.run.progress import RichProgress
from vidaudit.tools.audit.profile import load_profile
from vidaudit.tools.audit.render import terminal_table
from vidaudit.tools.audit.session import CostRow, run_audit, total_cost


def print_costs(rows: Sequence[CostRow], console: Console) -> None:
    table = Table(title="audit plan: estimated cost per model and suite (before any call)")
    for col in ("model", "suite part", "trials", "est. tokens", "est. cost (USD)"):
        table.add_column(col, justify="left" if col in ("model", "suite part") else "right")
    for r in rows:
        cost = "unknown" if r.est_cost_usd is None else f"{r.est_cost_usd:.2f}"
        table.add_row(r.model, r.part, str(r.trials), f"{r.est_tokens:,}", cost)
    console.print(table)
    total = total_cost(rows)
    console.print(
        f"{sum(r.trials for r in rows)} trials in all; estimated cost "
        + ("unknown (a model has no known price)" if total is None else f"${total:.2f}")
        + " (an upper bound on a resumed audit: stored calls are not repeated)",
        highlight=False,
    )


def audit_command(
    models: Sequence[str],
    *,
    budget: str,
    out: Path,
    suites: Sequence[str],
    data_root: Path | None,
    dry_run: bool,
    max_cost_usd: float | None,
    judge: str | None,
    workers: int | None,
    console: Console,
) -> int:
    """Run the audit; the exit code: 0 done (or dry run), 1 a run stopped early (resume by re-running), 130
    interrupted (Ctrl-C: the command to resume is printed). The headline figures end on stdout."""

    def log(line: str) -> None:
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    try:
        res = run_audit(
            models,
            budget=budget,
            out=out,
            data_root=data_root,
            suites=suites or None,
            dry_run=dry_run,
            max_cost_usd=max_cost_usd,
            workers=workers,
            judge=judge,
            log=log,
            on_costs=lambda rows: print_costs(rows, console),
            progress=lambda label: RichProgress(f"trials {label}", console=console),
            generating=progress_bar,
            reporting=step_progress,
        )
    except KeyboardInterrupt:
        log(
            "interrupted: every stored call is kept; resume with the same command (nothing stored is asked again): "
            + resume_command(models, budget=budget, out=out, suites=suites, data_root=data_root, judge=judge)
        )
        return 130
    if dry_run:
        log("dry run: nothing was called")
        return 0
    for label, summary in res.summaries.items():
        if summary is not None:
            log(f"{label}: {summary.describe()}")
    if res.stopped:
        log(f"stopped: {res.stopped}; re-run the same command to continue (no stored call is repeated)")
        return 1
    for kind, path in res.paths.items():
        log(f"{kind:5s} {path}")
    if "json" in res.paths:
        print_figures(terminal_table(load_profile(res.paths["json"])[0]))
    return 0


def resume_command(
    models: Sequence[str], *, budget: str, out: Path, suites: Sequence[str], data_root: Path | None, judge: str | None
) -> str:
    """The ``vidaudit audit`` command line that continues this audit (quoted for a POSIX shell)."""
    args = ["vidaudit", "audit", *[a for m in models for a in ("--model", m)], "--budget", budget, "--out", str(out)]
    args += [a for s in suites for a in ("--suite", s)]
    args += ["--data-root", str(data_root)] if data_root is not None else []
    args += ["--judge", judge] if judge else []
    return shlex.join(args)
