"""The ``vidaudit`` command line: thin wrappers over the library."""

from __future__ import annotations

from pathlib import Path

import typer

from vidaudit.cli_common import console, friendly_errors, parse_list, progress_bar

app = typer.Typer(help="Audit video-language models against executable ground truth.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
generate_app = typer.Typer(help="Generate a suite's samples and videos.", no_args_is_help=True)
app.add_typer(generate_app, name="generate")


@app.command()
def suites() -> None:
    """List the suites with a one-line description."""
    from vidaudit.core.registry import names, resolve

    for name in names("suites"):
        info = resolve("suites", name)
        typer.echo(f"{name:12s} {info.description}")


@generate_app.command("counting")
@friendly_errors
def generate_counting(
    out: Path = typer.Option(..., "--out", help="Output directory."),
    preset: str = typer.Option("smoke", help="'smoke' (small, with the grid's corners) or 'paper' (2,190 videos)."),
    domains: str = typer.Option(None, help="Comma list, e.g. bounce_ball,blinking (default: all)."),
    counts: str = typer.Option(None, help="Comma list of event counts N (replaces the preset's grid)."),
    frequencies: str = typer.Option(None, help="Comma list of frequencies F in Hz (replaces the preset's grid)."),
    seeds: int = typer.Option(None, help="Seeds per cell (replaces the preset's grid)."),
    duration: float = typer.Option(24.0, help="Clip length in seconds."),
    fps: float = typer.Option(30.0, help="Frames per second."),
    width: int = typer.Option(854, help="Frame width (even)."),
    height: int = typer.Option(480, help="Frame height (even)."),
    workers: int = typer.Option(None, help="Parallel render processes (default: cores)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Write the manifest with traces, render nothing."),
    skip_existing: bool = typer.Option(False, "--skip-existing", help="Reuse videos whose sha256 matches."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Check every video's pixels against its trace."),
) -> None:
    """Render the counting suite (bounce_ball, blinking, state_machine) with executable traces."""
    from vidaudit.suites.counting import grid as g
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.scene import RenderSettings

    doms = parse_list(domains, str, "domains") or list(g.DOMAINS)
    ns, fs = parse_list(counts, int, "counts"), parse_list(frequencies, float, "frequencies")
    if ns is None and fs is None and seeds is None:
        points = g.preset(preset, doms) if preset != "paper" else g.grid(doms)
        if preset not in ("smoke", "paper"):
            g.preset(preset)  # raises the clear error
    else:
        points = g.grid(doms, ns if ns is not None else g.COUNTS, fs if fs is not None else g.FREQUENCIES,
                        range(seeds if seeds is not None else 10))
    settings = RenderSettings(duration_s=duration, fps=fps, width=width, height=height)
    with progress_bar("planning" if dry_run else "rendering") as update:
        res = generate(points, out, settings, workers=workers, dry_run=dry_run, skip_existing=skip_existing,
                       verify=verify, on_progress=update)
    what = "planned" if dry_run else f"rendered {res.rendered}, reused {res.reused}, verified {res.verified}"
    console.print(f"{len(res.samples)} samples {what} in {res.seconds:.1f} s")
    console.print(f"manifest: {res.manifest}")


@generate_app.command("repcount")
@friendly_errors
def generate_repcount(
    csv: Path = typer.Option(..., "--csv", help="RepCount-style annotation CSV (type,name,count,L1,L2,...)."),
    videos: Path = typer.Option(..., "--videos", help="Folder holding the videos named in the CSV."),
    out: Path = typer.Option(..., "--out", help="Output directory (manifest.jsonl, dataset.json)."),
    split: str = typer.Option(None, help="Split name recorded in sample ids, e.g. test."),
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Skip bad rows (listed) instead of failing."),
) -> None:
    """Turn a real repetition-counting dataset into counting samples (one event per repetition start)."""
    from vidaudit.suites.counting.repcount import write_repcount_dataset

    res = write_repcount_dataset(csv, videos, out, split_name=split, skip_invalid=skip_invalid)
    for p in res.skipped:
        console.print(f"[yellow]skipped[/] line {p.line} ({p.name}): {p.message}", highlight=False)
    console.print(f"{len(res.samples)} samples; manifest: {res.manifest}")


@app.command()
@friendly_errors
def verify(
    data: Path = typer.Argument(..., help="A directory written by `vidaudit generate`."),
    workers: int = typer.Option(None, help="Parallel processes (default: cores)."),
) -> None:
    """Check every video against its trace using only decoded pixels; exit 1 on any mismatch."""
    from vidaudit.core.manifest import load_samples, read_dataset_info
    from vidaudit.suites.counting.verify import verify_dataset

    info = read_dataset_info(data)
    if info.get("real_video"):
        console.print(f"[bold red]error:[/] {data} holds real videos with annotated counts; pixel verification "
                      "applies to rendered suites only")
        raise typer.Exit(2)
    if info.get("dry_run"):
        console.print(f"[bold red]error:[/] {data} is a dry run: it has no videos to verify")
        raise typer.Exit(2)
    samples = load_samples(data)
    with progress_bar("verifying") as update:
        problems = verify_dataset(data, samples, workers=workers, on_progress=update)
    if problems:
        for sid, ps in sorted(problems.items()):
            console.print(f"[red]MISMATCH[/] {sid}: {'; '.join(ps)}", highlight=False)
        console.print(f"[bold red]{len(problems)} of {len(samples)} samples fail verification[/]")
        raise typer.Exit(1)
    console.print(f"[green]all {len(samples)} samples verified[/]: every event found at its frame (+-1), nothing else")


@app.command()
@friendly_errors
def run(
    suite: str = typer.Argument("counting", help="The suite (counting)."),
    data: Path = typer.Option(None, "--data", help="Dataset dir written by `vidaudit generate`."),
    model: list[str] = typer.Option([], "--model", help="provider:name[@base_url]; repeat for several."),
    condition: list[str] = typer.Option([], "--condition", help="native, native@K, frames@K or keyframes; repeat."),
    prompt: list[str] = typer.Option([], "--prompt", help="Prompt template(s); default structured_trace."),
    no_timestamps: bool = typer.Option(False, "--no-timestamps", help="Send frames without t=...s (paper setup)."),
    config: Path = typer.Option(None, "--config", help="A run config YAML (models, conditions, prompts, ...)."),
    out: Path = typer.Option(None, "--out", help="Run directory."),
    resume: Path = typer.Option(None, "--resume", help="Resume the run in this directory with its run.json."),
    temperature: float = typer.Option(None, help="Generation temperature."),
    max_tokens_out: int = typer.Option(None, "--max-output-tokens", help="Max tokens per answer."),
    seed: int = typer.Option(None, help="Generation seed where supported."),
    max_attempts: int = typer.Option(3, help="Attempts per trial, counting earlier sessions."),
    max_cost_usd: float = typer.Option(None, help="Stop before the run would exceed this cost."),
    max_tokens: int = typer.Option(None, help="Stop before the run would exceed this many tokens."),
    limit: int = typer.Option(None, help="Only the first N samples."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print trials, frames, estimated tokens/cost; call nothing."),
) -> None:
    """Run models over a generated suite; every attempt is stored, re-running resumes."""
    from vidaudit.run.cli_support import resolve_run_args, print_dry_run, print_summary
    from vidaudit.run.progress import RichProgress
    from vidaudit.run.session import execute

    args = resolve_run_args(suite=suite, data=data, models=model, conditions=condition, prompts=prompt,
                            timestamps=not no_timestamps, config=config, out=out, resume=resume,
                            temperature=temperature, max_output_tokens=max_tokens_out, seed=seed,
                            max_attempts=max_attempts, max_cost_usd=max_cost_usd, max_tokens=max_tokens, limit=limit)
    if dry_run:
        res = execute(**args, dry_run=True)
        print_dry_run(res.dry_run)
        return
    with RichProgress("trials", console=console) as bar:
        res = execute(**args, on_progress=bar)
    print_summary(res)
    if res.summary is not None and res.summary.stopped_early:
        raise typer.Exit(1)


@app.command()
@friendly_errors
def score(run_dir: Path = typer.Argument(..., help="A run directory.")) -> None:
    """Re-score a run from its store (never calls a model) into RUN/scores.jsonl."""
    from vidaudit.suites.counting.report_run import score_run

    path = score_run(run_dir)
    console.print(f"scores: {path}")


@app.command()
@friendly_errors
def report(run_dir: Path = typer.Argument(..., help="A run directory.")) -> None:
    """Score a run and write RUN/report/report.json, report.md and a self-contained report.html."""
    from vidaudit.suites.counting.report_run import report_run

    with console.status("scoring and drawing the report"):
        paths = report_run(run_dir)
    for kind, path in paths.items():
        console.print(f"{kind:5s} {path}")


@app.command("score-responses")
@friendly_errors
def score_responses_cmd(
    suite: str = typer.Option("counting", "--suite", help="The suite whose rules score the responses."),
    samples: Path = typer.Option(..., "--samples", help="manifest.jsonl (or its directory)."),
    responses: Path = typer.Option(..., "--responses", help="JSONL: sample_id, response[, model, condition]."),
    out: Path = typer.Option(..., "--out", help="scores.jsonl to write."),
    report_dir: Path = typer.Option(None, "--report", help="Also write report.json/md/html into this dir."),
) -> None:
    """Score responses produced by another harness with vidaudit's trace metrics (see docs/score-responses.md)."""
    from vidaudit.core.errors import ConfigError
    from vidaudit.suites.counting.report_run import score_responses

    if suite != "counting":
        raise ConfigError(f"score-responses supports --suite counting for now, got {suite!r}")
    path, paths = score_responses(samples, responses, out, report_dir)
    console.print(f"scores: {path}")
    for kind, p in (paths or {}).items():
        console.print(f"{kind:5s} {p}")


@app.command()
@friendly_errors
def demo(
    out: Path = typer.Option(Path("out/demo"), "--out", help="Where the data, run and report go."),
    workers: int = typer.Option(None, help="Render processes (default: cores)."),
) -> None:
    """Generate the smoke grid, run oracle, chance and the ideal observer at native and frames@1, report."""
    from vidaudit.demo import run_demo

    paths = run_demo(out, workers=workers, console=console)
    console.print(f"[bold green]demo done[/]: open {paths['html']}")


if __name__ == "__main__":  # pragma: no cover
    app()
