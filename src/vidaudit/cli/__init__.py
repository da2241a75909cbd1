"""The ``vidaudit`` command line: thin wrappers over the library.

Suite-specific commands (``vidaudit generate NAME``) are contributed by each registered suite; the
stages (``run``, ``score``, ``report``, ``score-responses``, ``verify``) look the suite up by name.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import typer
import typer.main
from typer.core import TyperGroup

from vidaudit.cli.help import FlowGroup, tidy_option_types
from vidaudit.core.console import (
    console,
    friendly_errors,
    interrupted,
    print_figures,
    progress_bar,
    ray_address_option,
    step_progress,
)

tidy_option_types()
app = typer.Typer(
    help="Audit video-language models against executable ground truth.",
    cls=FlowGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class SuiteCommands(TyperGroup):
    """A group whose sub-commands the suites contribute (``generate`` through ``Suite.add_commands``, ``import`` and
    ``validate`` through ``Suite.add_group_commands``), each suite imported only when its commands are needed:
    ``vidaudit generate counting`` imports the counting suite alone (a command no suite is named after, such as
    ``repcount``, imports the suites in order until one adds it), listing the group imports every one (listed in
    the registry's order, whatever was resolved before), ``vidaudit --help`` none. A suite that cannot add its
    commands is reported then, with a warning."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._added: dict[str, list[str]] = {}  # suite -> the commands it added here

    def _add_suite(self, name: str) -> None:
        from vidaudit.core.errors import VidauditError
        from vidaudit.core.registry import get_suite

        if name in self._added:
            return
        self._added[name] = []
        scratch = {group: typer.Typer() for group in ("generate", *GROUPS)}
        try:
            suite = get_suite(name)
            if self.name == "generate":
                suite.add_commands(scratch["generate"])
            else:
                suite.add_group_commands({group: scratch[group] for group in GROUPS})
        except (VidauditError, ImportError, AttributeError) as e:  # a broken third-party suite
            console.print(f"[yellow]warning:[/] suite {name!r} could not add its commands: {e}")
            return
        for cmd_name, command in typer.main.get_group(scratch[self.name or ""]).commands.items():
            if cmd_name not in self.commands:
                self.commands[cmd_name] = command
                self._added[name].append(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        from vidaudit.core.registry import names

        suites = names("suites")
        for name in suites:
            self._add_suite(name)
        return [cmd for name in suites for cmd in self._added[name]]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands:
            from vidaudit.core.registry import names

            for name in sorted(names("suites"), key=lambda n: n != cmd_name):  # the suite of that name first
                self._add_suite(name)
                if cmd_name in self.commands:
                    break
        return super().get_command(ctx, cmd_name)


generate_app = typer.Typer(help="Generate a suite's samples and videos.", cls=SuiteCommands, no_args_is_help=True)
app.add_typer(generate_app, name="generate")
#: groups suites add sub-commands to (see Suite.add_group_commands)
GROUPS = {
    "import": typer.Typer(
        help="Import another benchmark's released data as a suite's samples.", cls=SuiteCommands, no_args_is_help=True
    ),
    "validate": typer.Typer(
        help="Validate another benchmark's released data without importing it.", cls=SuiteCommands, no_args_is_help=True
    ),
}
for _name, _group in GROUPS.items():
    app.add_typer(_group, name=_name)


def _add_interop_commands() -> None:
    """``vidaudit export hf|lmms-eval`` and ``score-responses`` (--responses, or --from a harness's log)."""
    from vidaudit.tools.interop.cli import register

    register(app)


_add_interop_commands()


def _add_human_study_commands() -> None:
    """``vidaudit human-study export|import``."""
    from vidaudit.tools.humanstudy.cli import register

    register(app)


_add_human_study_commands()


def _add_mech_commands() -> None:
    """``vidaudit tiny-model`` and ``vidaudit probe`` (white-box probes of open models)."""
    from vidaudit.tools.mech.cli import register

    register(app)


_add_mech_commands()


def _model_help() -> str:
    """``--model``'s help, naming every registered provider (plugins included)."""
    from vidaudit.core.registry import names

    return (
        "provider:name\\[@base_url]; repeat for several. Providers: "
        + ", ".join(names("providers"))
        + " (docs/running-models.md)."
    )


MODEL_HELP = _model_help()


@app.command()
@friendly_errors
def suites() -> None:
    """List the suites (and their probes) with a one-line description."""
    from vidaudit.core.registry import get_suite, names

    for name in names("suites"):
        s = get_suite(name)
        typer.echo(f"{name:12s} {s.description}")
        for probe, text in s.probes.items():
            typer.echo(f"  {probe:10s} {text}")


@app.command()
@friendly_errors
def verify(
    data: Path = typer.Argument(..., help="A directory written by `vidaudit generate`."),
    workers: int = typer.Option(None, help="Parallel processes (default: cores)."),
) -> None:
    """Check every video against its ground truth using only decoded pixels; exit 1 on any mismatch."""
    from vidaudit.core.contract.roles import Verification
    from vidaudit.core.errors import DataError
    from vidaudit.core.manifest import dataset_suite, load_samples, read_dataset_info
    from vidaudit.core.registry import get_suite
    from vidaudit.video.facts import check_video_paths

    info = read_dataset_info(data)
    suite = get_suite(dataset_suite(data, info))
    samples = load_samples(data)
    if not samples:
        raise DataError(f"{data} holds no samples: nothing to verify")
    check_video_paths(data, samples)  # before any file is opened: a hand-edited path never leads verify outside
    with progress_bar("verifying") as update:
        problems = Verification.of(suite).verify(data, samples, workers=workers, on_progress=update)
    if problems:
        for sid, ps in sorted(problems.items()):
            console.print(f"[red]MISMATCH[/] {sid}: {'; '.join(ps)}", highlight=False)
        console.print(f"[bold red]{len(problems)} of {len(samples)} samples fail verification[/]")
        raise typer.Exit(1)
    console.print(
        f"[green]all {len(samples)} samples verified[/]: the pixels show every sample's ground truth "
        f"({suite.name} checks, see its docs page)"
    )


@app.command()
@friendly_errors
def run(
    suite: str = typer.Argument(None, help="The suite (see `vidaudit suites`; default: the one the dataset names)."),
    data: Path = typer.Option(None, "--data", help="Dataset dir written by `vidaudit generate`."),
    model: list[str] = typer.Option([], "--model", help=MODEL_HELP),
    condition: list[str] = typer.Option(
        [],
        "--condition",
        help="native, native@K, native@all, frames@K, frames#K or keyframes, optionally "
        "+OP(KEY=VALUE,...) perturbations, e.g. frames@24+strip_mask; repeat.",
    ),
    prompt: list[str] = typer.Option([], "--prompt", help="Prompt template(s); default: the suite's."),
    no_timestamps: bool = typer.Option(False, "--no-timestamps", help="Send frames without t=...s (paper setup)."),
    config: Path = typer.Option(None, "--config", help="A run config YAML (models, conditions, prompts, ...)."),
    out: Path = typer.Option(None, "--out", help="Run directory."),
    resume: Path = typer.Option(None, "--resume", help="Resume the run in this directory with its run.json."),
    temperature: float = typer.Option(None, help="Generation temperature (default 0)."),
    max_tokens_out: int = typer.Option(None, "--max-output-tokens", help="Max tokens per answer (default 2048)."),
    seed: int = typer.Option(None, help="Generation seed where supported."),
    provider_defaults: bool = typer.Option(
        False, "--provider-defaults", help="Send no temperature or token limit (the providers' defaults)."
    ),
    adapter_option: list[str] = typer.Option(
        [],
        "--adapter-option",
        help="PROVIDER.KEY=VALUE adapter option, e.g. gemini.thinking_budget=0 or openai.image_detail=high; repeat.",
    ),
    max_attempts: int = typer.Option(3, help="Attempts per trial, counting earlier sessions."),
    max_cost_usd: float = typer.Option(None, help="Stop before the run would exceed this cost."),
    max_tokens: int = typer.Option(None, help="Stop before the run would exceed this many tokens."),
    limit: int = typer.Option(None, help="Only the first N samples."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print trials, frames, estimated tokens/cost; call nothing."),
    judge: str = typer.Option(
        None,
        "--judge",
        help="A model (provider:name) that judges answers the suite cannot "
        "parse (free descriptions, summaries); its calls are stored like any other.",
    ),
    design: str = typer.Option(
        None,
        "--design",
        help="full (default: every trial) or a suite's sequential design "
        "(counting: adaptive, the same boundaries with fewer trials).",
    ),
    rule: str = typer.Option(None, "--rule", help="The sequential design's decision rule (counting: point or wilson)."),
    executor: str = typer.Option(
        "local",
        "--executor",
        help="local, or ray: local models run as Ray actors, this process keeps the store (docs/scale-out.md).",
    ),
    ray_address: str = ray_address_option(),
    ray_replicas: int = typer.Option(1, "--ray-replicas", help="Ray actors per local model."),
    allow_external_videos: bool = typer.Option(
        False,
        "--allow-external-videos",
        help="Open sample videos that lie outside --data (absolute paths, "
        "../, symlinks out); off: such a manifest is refused.",
    ),
    retry_errors: bool = typer.Option(
        False,
        "--retry-errors",
        help="Give every trial not yet ok --max-attempts "
        "more attempts, even one out of attempts (after fixing what failed).",
    ),
) -> None:
    """Run models over a generated suite; every attempt is stored, re-running resumes.

    Exit 0 when at least one planned trial is ok (failed ones are listed by cause and stay in every
    denominator), 1 when none is or the run stopped early (quota, credentials, budget), 2 on bad input.
    """
    from vidaudit.run.cli_support import print_dry_run, print_summary, resolve_run_request
    from vidaudit.run.progress import RichProgress
    from vidaudit.run.ray_executor import dispatch_for
    from vidaudit.run.session import execute

    dispatch = dispatch_for(executor, ray_address, ray_replicas)

    request = resolve_run_request(
        suite=suite,
        data=data,
        models=model,
        conditions=condition,
        prompts=prompt,
        timestamps=not no_timestamps,
        config=config,
        out=out,
        resume=resume,
        temperature=temperature,
        max_output_tokens=max_tokens_out,
        seed=seed,
        max_attempts=max_attempts,
        max_cost_usd=max_cost_usd,
        max_tokens=max_tokens,
        limit=limit,
        provider_defaults=provider_defaults,
        adapter_options=adapter_option,
        judge=judge,
        design=design,
        rule=rule,
        allow_external_videos=allow_external_videos,
        retry_errors=retry_errors,
    )
    if dry_run:
        res = execute(request, dry_run=True)
        print_dry_run(res.dry_run)
        return
    with (
        interrupted(f"every stored call is kept; resume with vidaudit run --resume {shlex.quote(str(request.out))}"),
        RichProgress("trials", console=console) as bar,
    ):
        res = execute(request, on_progress=bar, dispatch=dispatch)
    print_summary(res)
    if (res.summary is not None and res.summary.stopped_early) or not res.trials_ok:
        raise typer.Exit(1)


@app.command()
@friendly_errors
def perturb(
    source: Path = typer.Argument(None, help="The video to perturb, or a folder: the op on each of its videos."),
    op: str = typer.Option(None, "--op", help="The perturbation (see --list)."),
    sets: list[str] = typer.Option([], "--set", help="KEY=VALUE parameter of the op; repeat."),
    seed: int = typer.Option(0, "--seed", help="Seed of the op's random choices."),
    out: Path = typer.Option(
        None,
        "--out",
        help="Output video (its metadata goes beside it as .json); a folder for --batch or a source folder.",
    ),
    second: Path = typer.Option(None, "--second", help="A second video (scene_mix, unrelated)."),
    stream: int = typer.Option(
        None,
        "--stream",
        help="The index of SOURCE's video stream to read, in a file with "
        "several (default: the one ffmpeg picks: the largest, a default-marked one first).",
    ),
    list_ops: bool = typer.Option(False, "--list", help="List every op with its parameters and exit."),
    batch: Path = typer.Option(
        None,
        "--batch",
        help="A JSONL file of jobs ({source, op, params, seed, name?, "
        "second?} per line) rendered into --out (docs/perturbations.md).",
    ),
    workers: int = typer.Option(1, "--workers", help="Local render processes for a batch (1: in this process)."),
    executor: str = typer.Option("local", "--executor", help="local, or ray: each batch job is a Ray task."),
    ray_address: str = ray_address_option(),
) -> None:
    """Apply one perturbation to any video (OUT.mp4 + OUT.json), or a batch of them into a folder."""
    from vidaudit.core.errors import ConfigError
    from vidaudit.run.ray_pool import pool_factory
    from vidaudit.video.perturb.cli import batch_jobs, ops_help, perturb_command, summary_lines

    if list_ops:
        typer.echo(ops_help())
        return
    if batch is not None or (source is not None and source.is_dir()):
        from vidaudit.video.perturb.batch import perturb_batch
        from vidaudit.video.perturb.batch import summary_lines as batch_lines

        if out is None:
            raise ConfigError("a batch needs --out DIR for its videos and batch.jsonl")
        if stream is not None:
            raise ConfigError("--stream names one file's stream; a batch reads each video's default stream")
        pool = pool_factory(executor, ray_address)  # a bad --executor or a missing ray extra: before any work
        jobs = batch_jobs(out, batch=batch, folder=source, op=op, sets=list(sets), seed=seed, second=second)
        with progress_bar("perturbing") as update:
            res = perturb_batch(jobs, out, workers=workers, pool=pool, on_progress=update)
        for line in batch_lines(res):
            console.print(line, highlight=False, markup=False, soft_wrap=True)  # paths stay whole
        if res.failed:
            raise typer.Exit(1)
        return
    if source is None or op is None or out is None:
        raise ConfigError("vidaudit perturb needs SOURCE, --op and --out (or --batch JOBS.jsonl, or --list)")
    if executor != "local" or ray_address is not None or workers != 1:
        raise ConfigError("--executor, --ray-address and --workers are for batches (--batch or a source folder)")
    with console.status(f"perturbing {source.name} ({op})"):
        res = perturb_command(source, op, list(sets), seed, out, second=second, stream=stream)
    for line in summary_lines(res, source):
        console.print(line, highlight=False, markup=False, soft_wrap=True)  # paths stay whole


_ALLOW_CHANGED = typer.Option(
    False, "--allow-changed", help="Score trials whose video changed since they ran against the current data."
)


@app.command()
@friendly_errors
def score(run_dir: Path = typer.Argument(..., help="A run directory."), allow_changed: bool = _ALLOW_CHANGED) -> None:
    """Score a run from its store (never calls a model) into RUN/scores.jsonl and RUN/scored_run.jsonl (what
    `report` reads); print accuracy and parse failures (on stdout)."""
    from vidaudit.score.stage import score_run
    from vidaudit.score.summary import print_scores

    with console.status("scoring (no model is called)"):  # a large run takes seconds: never silent
        path = score_run(run_dir, allow_changed=allow_changed)
    print_scores(path)


@app.command()
@friendly_errors
def report(
    run_dir: Path = typer.Argument(..., help="A run directory."),
    allow_changed: bool = _ALLOW_CHANGED,
    rescore: bool = typer.Option(
        False,
        "--rescore",
        help="Score the store again first (as `vidaudit score` does) instead of reading RUN/scored_run.jsonl.",
    ),
    figures: str = typer.Option(
        "svg",
        "--figures",
        help="svg: figures drawn in the page from the numbers "
        "(fast); png: matplotlib pictures, for papers (slow: ~0.15 s each).",
    ),
) -> None:
    """Write RUN/report/report.json, report.md and a self-contained report.html from what `vidaudit score` wrote
    (RUN/scored_run.jsonl; a run never scored is scored first)."""
    from vidaudit.report.headline import headline_figures
    from vidaudit.report.stage import report_run

    with step_progress("report") as progress:
        paths = report_run(run_dir, allow_changed=allow_changed, rescore=rescore, figures=figures, progress=progress)
    for kind, path in paths.items():
        console.print(f"{kind:5s} {path}", highlight=False, markup=False, soft_wrap=True)
    print_figures(headline_figures(paths["json"]))


@app.command()
@friendly_errors
def audit(
    model: list[str] = typer.Option([], "--model", help="provider:name[@base_url]; repeat for several."),
    budget: str = typer.Option(
        "smoke",
        "--budget",
        help="smoke, standard or paper (docs/audit.md: trials per "
        "model and suite, and what each budget's intervals resolve).",
    ),
    out: Path = typer.Option(..., "--out", help="The audit dir: data/, runs/PART/, profile.json/.md/.html."),
    suite: list[str] = typer.Option([], "--suite", help="Only these suites (default: every suite that audits)."),
    data_root: Path = typer.Option(
        None, "--data-root", help="Where generated datasets live, reused by content across audits (default: OUT/data)."
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Generate the data, print the plan and its estimated cost per model and suite; call nothing.",
    ),
    max_cost_usd: float = typer.Option(
        None,
        "--max-cost-usd",
        help="Stop before any call when the estimate is over this (and cap the runs' spending at it).",
    ),
    judge: str = typer.Option(
        None, "--judge", help="A judge model for the parts whose answers need one (stress expectation's free text)."
    ),
    workers: int = typer.Option(None, help="Render processes (default: cores)."),
) -> None:
    """Run every suite at a budget on your models and write one profile beside the papers' published numbers."""
    from vidaudit.tools.audit.cli_support import audit_command

    raise typer.Exit(
        audit_command(
            model,
            budget=budget,
            out=out,
            suites=suite,
            data_root=data_root,
            dry_run=dry_run,
            max_cost_usd=max_cost_usd,
            judge=judge,
            workers=workers,
            console=console,
        )
    )


@app.command()
@friendly_errors
def compare(
    sources: list[Path] = typer.Argument(
        ..., help="Audit dirs or their profile.json (two or more, or one audit with several models)."
    ),
    out: Path = typer.Option(None, "--out", help="Also write the comparison as JSON here."),
) -> None:
    """Models from different audits side by side, with paired differences where they share samples."""
    from vidaudit.tools.audit.compare import compare_lines, compare_profiles

    res = compare_profiles(sources)
    if out is not None:
        from vidaudit.core.fileio import write_json_atomic

        write_json_atomic(out, res)
        console.print(f"json: {out}", highlight=False, markup=False, soft_wrap=True)
    for line in compare_lines(res):  # the results, on stdout (`> out.txt` keeps them)
        typer.echo(line)


@app.command("judge-agreement")
@friendly_errors
def judge_agreement(
    a: Path = typer.Argument(..., help="A run directory made with --judge."),
    b: Path = typer.Argument(
        ...,
        help="Another judged run over the same answers, or a labels file (JSON {item: "
        "label} or CSV item,label; see docs/running-models.md).",
    ),
    by: str = typer.Option(None, "--by", help="Split by a record parameter, e.g. task."),
    out: Path = typer.Option(None, "--out", help="Also write the numbers as JSON here."),
) -> None:
    """Cohen's kappa and the confusion matrix of two judges, or of a judge and human labels."""
    from vidaudit.score.agreement import agreement_lines
    from vidaudit.score.agreement import judge_agreement as compare

    res = compare(a, b, by=by)
    for line in agreement_lines(res):
        console.print(line, highlight=False, markup=False, soft_wrap=True)  # paths stay whole
    if out is not None:
        import json

        from vidaudit.core.fileio import write_text_atomic

        write_text_atomic(out, json.dumps(res, indent=2, sort_keys=True) + "\n")
        console.print(f"json: {out}")


@app.command()
@friendly_errors
def schema(
    what: str = typer.Argument(
        "report", help="report (report.json), score (a scores.jsonl line) or profile (an audit's profile.json)."
    ),
) -> None:
    """Print the JSON Schema of report.json, of a scores.jsonl line or of an audit's profile.json."""
    import json

    from pydantic import BaseModel

    from vidaudit.core.contract.records import ScoreRecord
    from vidaudit.core.contract.report import Report
    from vidaudit.core.errors import ConfigError
    from vidaudit.tools.audit.profile import Profile

    models: dict[str, type[BaseModel]] = {"report": Report, "score": ScoreRecord, "profile": Profile}
    if what not in models:
        raise ConfigError(f"unknown schema {what!r}; choose report or score (or profile: an audit's profile.json)")
    typer.echo(json.dumps(models[what].model_json_schema(), indent=2, sort_keys=True))


@app.command()
@friendly_errors
def demo(
    out: Path = typer.Option(Path("out/demo"), "--out", help="Where the data, run and report go."),
    workers: int = typer.Option(None, help="Render processes (default: cores)."),
) -> None:
    """Generate the smoke grid, run oracle, chance and the ideal observer at native and frames@1, report."""
    from vidaudit.cli.demo import run_demo
    from vidaudit.report.headline import headline_figures

    again = f"vidaudit demo --out {shlex.quote(str(out))}"
    with interrupted(f"run the same command again to continue (no stored call is repeated): {again}"):
        paths = run_demo(out, workers=workers, console=console)
    console.print(f"[bold green]demo done[/]: open {paths['html']}", soft_wrap=True)
    print_figures(headline_figures(paths["json"]))
