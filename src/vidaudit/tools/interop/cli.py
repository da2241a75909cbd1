"""The interop commands, added to a Typer app by :func:`register` (``vidaudit.cli`` calls it once):

- ``vidaudit export hf DATA --out DIR [--license L] [--verify]``
- ``vidaudit export lmms-eval DATA --out TASKDIR [--prompt P] [--task NAME] [--max-new-tokens N]``
- ``vidaudit score-responses --from lmms-eval|vlmevalkit|inspect LOG --samples MANIFEST --out scores.jsonl``
  (``score-responses`` takes either ``--responses`` or ``--from``)

The commands are thin: they parse arguments and call :mod:`vidaudit.tools.interop.hf`,
:mod:`vidaudit.tools.interop.lmms_eval` and :mod:`vidaudit.tools.interop.logs`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from vidaudit.core.console import console, friendly_errors

export_app = typer.Typer(
    help="Export a suite's dataset for another harness (Hugging Face, lmms-eval).", no_args_is_help=True
)


@export_app.command("hf")
@friendly_errors
def export_hf_cmd(
    data: Path = typer.Argument(..., help="A dataset directory written by `vidaudit generate` (or an importer)."),
    out: Path = typer.Option(..., "--out", help="New directory for the Hugging Face dataset."),
    license: str = typer.Option(None, "--license", help="The dataset's licence (required for real videos)."),
    verify: bool = typer.Option(False, "--verify/--no-verify", help="Check every video's pixels before exporting."),
    workers: int = typer.Option(None, help="Verification processes (default: cores)."),
) -> None:
    """A dataset as a Hugging Face dataset (load_from_disk(DIR), videos alongside, a card), ready for push_to_hub."""
    from vidaudit.tools.interop.hf import export_hf

    res = export_hf(data, out, license=license, verify=verify, workers=workers)
    console.print(f"[green]exported[/] {res.n_samples} samples to {res.out} (licence {res.license})")
    console.print(f"verification: {res.verification}", highlight=False)


@export_app.command("lmms-eval")
@friendly_errors
def export_lmms_eval_cmd(
    data: Path = typer.Argument(..., help="A dataset directory written by `vidaudit generate` (or an importer)."),
    out: Path = typer.Option(..., "--out", help="The task directory (lmms-eval --include_path TASKDIR)."),
    prompt: str = typer.Option(None, "--prompt", help="One of the suite's prompts (default: the suite's)."),
    task: str = typer.Option(None, "--task", help="lmms-eval task name (default: vidaudit_SUITE[_PROMPT])."),
    max_new_tokens: int = typer.Option(2048, "--max-new-tokens", help="Tokens per answer (vidaudit's default)."),
) -> None:
    """An lmms-eval task directory whose process_results is vidaudit's scorer."""
    from vidaudit.tools.interop.lmms_eval import export_lmms_eval

    res = export_lmms_eval(data, out, prompt=prompt, task=task, max_new_tokens=max_new_tokens)
    console.print(
        f"[green]wrote[/] lmms-eval task {res.task} ({res.n_docs} docs, condition {res.condition}) to {res.out}"
    )
    console.print(f"run: {res.command}", highlight=False, soft_wrap=True)


def score_responses_cmd(
    suite: str = typer.Option(
        None, "--suite", help="The suite whose rules score the responses (default: the manifest's)."
    ),
    samples: Path = typer.Option(..., "--samples", help="manifest.jsonl (or its directory)."),
    responses: Path = typer.Option(None, "--responses", help="JSONL: sample_id, response[, model, condition, status]."),
    from_log: tuple[str, Path] = typer.Option(
        None,
        "--from",
        metavar="HARNESS LOG",
        help="A harness log instead of --responses: lmms-eval (its "
        "--log_samples JSONL), vlmevalkit (a prediction file) or inspect "
        "(an eval log), then its path.",
    ),
    out: Path = typer.Option(..., "--out", help="scores.jsonl to write."),
    report_dir: Path = typer.Option(None, "--report", help="Also write report.json/md/html into this dir."),
    dedupe: str = typer.Option(None, "--dedupe", help="Keep the first or last of duplicate lines (default: error)."),
    model_label: str = typer.Option(
        None, "--model-label", help="With --from: the model label to record (default: read from the log)."
    ),
) -> None:
    """Score responses produced by another harness with vidaudit's rules (see docs/score-responses.md and
    docs/interop.md)."""
    from vidaudit.core.errors import ConfigError

    harness, log = from_log if from_log and from_log[0] is not None else (None, None)
    if (responses is None) == (harness is None):
        raise ConfigError("give either --responses FILE or --from HARNESS LOG (lmms-eval, vlmevalkit or inspect)")
    if harness is None:
        from vidaudit.report.stage import report_responses

        if model_label is not None:
            raise ConfigError("--model-label applies to --from; a responses.jsonl names its models per line")
        path, paths, notes = report_responses(
            samples, responses, out, report_dir, suite=suite or _manifest_suite(samples), dedupe=dedupe
        )
    else:
        from vidaudit.tools.interop.logs import report_imported

        path, paths, notes = report_imported(
            harness, log, samples, out, report_dir, suite=suite, dedupe=dedupe, model=model_label
        )
    from vidaudit.score.summary import print_scores

    print_scores(path)
    for note in notes:
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    for kind, p in (paths or {}).items():
        console.print(f"{kind:5s} {p}")


def _manifest_suite(samples: Path) -> str:
    from vidaudit.core.manifest import load_samples
    from vidaudit.score.stage import manifest_suite

    return manifest_suite({s.sample_id: s for s in load_samples(samples)}, None, str(samples))


def register(app: typer.Typer) -> None:
    """Add ``export hf|lmms-eval`` and ``score-responses`` (``--responses`` or ``--from HARNESS LOG``; ``--suite``
    defaults to the manifest's suite) to ``app``."""
    app.add_typer(export_app, name="export")
    app.command("score-responses")(friendly_errors(score_responses_cmd))
