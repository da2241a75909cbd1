"""``vidaudit human-study export|import``: thin wrappers over ``export.export_study`` and ``importing.import_answers``."""

from __future__ import annotations

from pathlib import Path

import typer

from vidaudit.core.console import console, friendly_errors


def register(app: typer.Typer) -> None:
    """Add the ``human-study`` group to the ``vidaudit`` app."""
    group = typer.Typer(
        help="Human studies: export a study page, import the annotators' answers.", no_args_is_help=True
    )
    app.add_typer(group, name="human-study")

    @group.command("export")
    @friendly_errors
    def export_cmd(
        source: Path = typer.Argument(..., help="A dataset dir (vidaudit generate) or a run dir (vidaudit run)."),
        out: Path = typer.Option(
            ..., "--out", help="The study page to write (an .html file); study.json goes beside it."
        ),
        sample: int = typer.Option(
            None,
            "--sample",
            help="Show K units (a pair counts once), stratified over probe "
            "and condition, or spread evenly over --stratify's strata; "
            "default: all.",
        ),
        stratify: str = typer.Option(
            None,
            "--stratify",
            help="KEY[,KEY]: strata by the samples' params keys (or probe, "
            "condition); with --sample K or --per-stratum N.",
        ),
        per_stratum: int = typer.Option(None, "--per-stratum", help="With --stratify: exactly N units per stratum."),
        unit: str = typer.Option(
            None,
            "--unit",
            help="With --stratify: items sharing params.KEY are one unit, drawn "
            "whole (e.g. pair_id: a sycophancy claim and its control).",
        ),
        subset: str = typer.Option(
            None,
            "--subset",
            help="A paper's named subset: reveal-paper (100 sycophancy pairs "
            "per category, 50 camera clips over six motions, 50 lane "
            "clips balanced).",
        ),
        allow_shortfall: bool = typer.Option(
            False,
            "--allow-shortfall",
            help="A stratum (or --sample K) with too few units gives what it has (printed) instead of an error.",
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the selection and the page order."),
        kind: str = typer.Option(
            "performance",
            "--kind",
            help="performance (the model's question) or quality (does the statement describe something absent?).",
        ),
        media: str = typer.Option(
            "auto",
            "--media",
            help="auto (embed up to 16 MiB of video, else a folder beside the page), embed or folder.",
        ),
    ) -> None:
        """Write one self-contained HTML study page (no network) and its manifest."""
        from vidaudit.tools.humanstudy.export import Draw, export_study

        keys = tuple(k.strip() for k in stratify.split(",") if k.strip()) if stratify is not None else ()
        how = Draw(
            sample=sample,
            stratify=keys,
            per_stratum=per_stratum,
            unit=unit,
            subset=subset,
            allow_shortfall=allow_shortfall,
        )
        with console.status("building the study page"):
            res = export_study(source, out, seed=seed, kind=kind, media=media, draw=how)
        for line in res.notes:
            console.print(f"[yellow]{line}[/]", highlight=False)
        for rule, counts in res.counts.items():
            console.print(f"{rule}: " + ", ".join(f"{k} {n}" for k, n in counts.items()), highlight=False)
        where = "embedded in the page" if res.media == "embed" else f"in {res.page.stem}_media/ beside the page"
        console.print(f"study {res.study}: {res.n_items} item(s), videos {where}", highlight=False)
        console.print(f"page     {res.page}\nmanifest {res.manifest}", highlight=False)
        if res.run_copy is not None:
            console.print(f"run copy {res.run_copy}", highlight=False)

    @group.command("import")
    @friendly_errors
    def import_cmd(
        files: list[Path] = typer.Argument(..., help="Answers files downloaded from the study page."),
        into: Path = typer.Option(..., "--into", help="The run directory the study belongs to."),
        study: Path = typer.Option(None, "--study", help="The study manifest (default: RUN/human_studies/STUDY.json)."),
        replace: bool = typer.Option(False, "--replace", help="Replace another study already imported into RUN."),
    ) -> None:
        """Score the answers with the suite's own scorer into RUN/human_records.jsonl and RUN/human_study.json."""
        from vidaudit.tools.humanstudy.importing import import_answers

        res = import_answers(list(files), into, study=study, replace=replace)
        s = res.summary
        o = s["overall"]
        acc = "-" if o["accuracy"] is None else f"{100 * o['accuracy']:.1f}%"
        ag = o["agreement"]
        kappa = "-" if ag["kappa"] is None else f"{ag['kappa']:.3f} ({ag['method']})"
        console.print(
            f"study {s['study']}: {len(s['annotators'])} annotator(s), accuracy {acc} "
            f"({o['n_correct']}/{o['n_answers']}), kappa {kappa}",
            highlight=False,
        )
        if s["not_judged"]:
            console.print(
                f"[yellow]{s['not_judged']} free-text answer(s) not judged[/]: the run has no judge "
                "and the suite's parser cannot read them",
                highlight=False,
            )
        console.print(f"records  {res.records}\nsummary  {res.summary_path}", highlight=False)
