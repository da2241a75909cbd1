"""What ``vidaudit audit`` prints: the plan with its cost estimate before any call, then where the profile is."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from vidaudit.audit.session import CostRow, run_audit, total_cost


def print_costs(rows: Sequence[CostRow], console: Console) -> None:
    table = Table(title="audit plan: estimated cost per model and suite (before any call)")
    for col in ("model", "suite part", "trials", "est. tokens", "est. cost (USD)"):
        table.add_column(col, justify="left" if col in ("model", "suite part") else "right")
    for r in rows:
        cost = "unknown" if r.est_cost_usd is None else f"{r.est_cost_usd:.2f}"
        table.add_row(r.model, r.part, str(r.trials), f"{r.est_tokens:,}", cost)
    console.print(table)
    total = total_cost(rows)
    console.print(f"{sum(r.trials for r in rows)} trials in all; estimated cost "
                  + ("unknown (a model has no known price)" if total is None else f"${total:.2f}")
                  + " (an upper bound on a resumed audit: stored calls are not repeated)", highlight=False)


def audit_command(models: Sequence[str], *, budget: str, out: Path, suites: Sequence[str], data_root: Path | None,
                  dry_run: bool, max_cost_usd: float | None, judge: str | None, workers: int | None,
                  console: Console) -> int:
    """Run the audit; the exit code: 0 done (or dry run), 1 a run stopped early (resume by re-running)."""
    from vidaudit.run.progress import RichProgress

    def log(line: str) -> None:
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    res = run_audit(models, budget=budget, out=out, data_root=data_root, suites=suites or None, dry_run=dry_run,
                    max_cost_usd=max_cost_usd, workers=workers, judge=judge, log=log,
                    on_costs=lambda rows: print_costs(rows, console),
                    progress=lambda label: RichProgress(f"trials {label}", console=console))
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
    return 0
