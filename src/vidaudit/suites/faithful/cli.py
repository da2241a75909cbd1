"""The faithful suite's CLI: ``vidaudit generate faithful`` (added through ``add_commands``), and
``vidaudit import strand`` / ``vidaudit validate strand``, top-level commands the integrator wires
with :func:`register_extra_commands` (the Suite protocol cannot add top-level commands today).
"""

from __future__ import annotations

from pathlib import Path

import typer


def register(generate_app: typer.Typer) -> None:
    from vidaudit.sdk import console, executor_option, friendly_errors, progress_bar, ray_address_option

    @generate_app.command("faithful")
    @friendly_errors
    def generate_faithful(
        out: Path = typer.Option(..., "--out", help="Output directory."),
        preset: str = typer.Option("smoke", help="'smoke' (2 small videos, seconds) or 'standard' (20 videos)."),
        seeds: int = typer.Option(None, help="Number of videos (seeds 0..K-1; default: the preset's)."),
        agents: int = typer.Option(None, help="Agents per scene (3-8)."),
        events: int = typer.Option(
            None, help="Scripted events per scene (passes, collisions, state changes, exits, entries, occlusions)."
        ),
        duration: float = typer.Option(None, help="Clip length in seconds."),
        occlusions: int = typer.Option(None, help="Occlusions per scene (a small agent hides behind a large one)."),
        lookalikes: int = typer.Option(
            None, help="Look-alike pairs (same colour, shape and size; only the number differs)."
        ),
        repeats: int = typer.Option(
            None,
            help="Episodes that repeat an agent's earlier event (it lights up again, or "
            "leaves a second time): counts then need linked identities.",
        ),
        max_targets: int = typer.Option(
            None, "--max-targets", help="At most this many targets per video (half positives, half negatives)."
        ),
        fps: float = typer.Option(None, help="Frames per second."),
        width: int = typer.Option(None, help="Frame width (even)."),
        height: int = typer.Option(None, help="Frame height (even)."),
        workers: int = typer.Option(None, help="Parallel render processes (default: cores)."),
        verify: bool = typer.Option(
            True, "--verify/--no-verify", help="Check every video's pixels against its world record."
        ),
        executor: str = executor_option(),
        ray_address: str = ray_address_option(),
    ) -> None:
        """Render synthetic worlds with exact facts and compose order-dependent targets with sub-questions."""
        from vidaudit.sdk import pool_factory
        from vidaudit.suites.faithful.generate import generate, specs_for

        pool = pool_factory(executor, ray_address)  # a bad --executor / --ray-address is refused before rendering
        specs = specs_for(
            preset,
            seeds,
            agents=agents,
            events=events,
            duration_s=duration,
            occlusions=occlusions,
            lookalikes=lookalikes,
            repeats=repeats,
            max_targets=max_targets,
            fps=fps,
            width=width,
            height=height,
        )
        with progress_bar("rendering") as update:
            res = generate(specs, out, workers=workers, verify=verify, on_progress=update, pool=pool)
        b = res.balance
        console.print(
            f"{res.n_videos} videos, {b['target']['n']} targets, {b['sub']['n']} sub-questions in "
            f"{res.seconds:.1f} s" + (" (pixel-checked)" if verify else "")
        )
        for level in (
            "target",
            "sub",
            "sub_single_fact",
            "sub_ordering",
            "sub_identity",
            "target_order_explicit",
            "target_order_implicit",
            "target_count",
            "target_identity",
        ):
            x = b[level]
            share = "—" if x["yes_share"] is None else f"{100 * x['yes_share']:.1f}%"
            console.print(f"  {level:21s} Yes {x['yes']:4d}  No {x['no']:4d}  Yes share {share}")
        console.print(f"manifest: {res.manifest}")


def register_extra_commands(app: typer.Typer) -> None:
    """Add ``vidaudit import strand`` and ``vidaudit validate strand`` to the top-level ``app``.

    Creates the ``import`` and ``validate`` groups; an integrator whose app already has them can call
    :func:`add_import_strand` and :func:`add_validate_strand` on the existing groups instead.
    """
    import_app = typer.Typer(help="Import another benchmark's data as vidaudit samples.", no_args_is_help=True)
    validate_app = typer.Typer(
        help="Validate another benchmark's released data without importing it.", no_args_is_help=True
    )
    add_import_strand(import_app)
    add_validate_strand(validate_app)
    app.add_typer(import_app, name="import")
    app.add_typer(validate_app, name="validate")


_POLICY_HELP = (
    "What to do with a target that fails validation: drop-target (default), drop-file (drop every file "
    "with a finding) or keep-as-wrong (keep it in the denominator, never right)."
)
_CLUSTER_HELP = "Cluster by the source video parsed from the file name (default) or by file."


def _print_summary(console, res) -> None:
    console.print(
        f"{res.files} files, {res.targets_read} targets read, {res.targets_kept} kept "
        f"(policy {res.policy}, clusters by {res.cluster_by}: {res.n_clusters})"
    )
    for kind, n in res.counts.items():
        console.print(f"  {kind:20s} {n}")
    if res.normalised:
        console.print(f"  {len(res.normalised)} answer(s) normalised for case or spaces (listed in validation.json)")
    for line in statistics_lines(res.statistics):
        console.print(line, highlight=False)


def _fmt(x, pct: bool = False) -> str:
    if x is None:
        return "—"
    if pct:
        return f"{100 * x:.1f}%"
    return f"{x:.2f}" if isinstance(x, float) else str(x)


def statistics_lines(stats: dict) -> list[str]:
    """The release's statistics (read and kept) beside the paper's, one row per statistic."""
    rows = [
        ("videos (files)", "videos", False),
        ("targets", "targets", False),
        ("sub-questions", "subs", False),
        ("subs per target", "subs_per_target", False),
        ("targets per video", "targets_per_video", False),
        ("target Yes share", "target_yes_share", True),
        ("sub Yes share", "sub_yes_share", True),
        ("always-Yes A_faith", "always_yes_a_faith", True),
    ]
    read, kept, paper = stats.get("read") or {}, stats.get("kept") or {}, stats.get("paper") or {}
    out = [f"  {'statistic':20s} {'read':>9s} {'kept':>9s} {'paper':>9s}"]
    for label, key, pct in rows:
        pk = "majority_a_faith" if key == "always_yes_a_faith" else key
        out.append(
            f"  {label:20s} {_fmt(read.get(key), pct):>9s} {_fmt(kept.get(key), pct):>9s} "
            f"{_fmt(paper.get(pk), pct):>9s}"
        )
    if read.get("subs_per_target_histogram"):
        hist = ", ".join(f"{m}: {n}" for m, n in read["subs_per_target_histogram"].items())
        out.append(
            f"  subs per target (read; min {read['subs_per_target_min']}, max {read['subs_per_target_max']}): {hist}"
        )
    out.append("  (paper: §4; its A_faith row is the majority-class reference, always-Yes on its balanced data)")
    return out


def add_import_strand(import_app: typer.Typer) -> None:
    from vidaudit.sdk import console, friendly_errors

    @import_app.command("strand")
    @friendly_errors
    def import_strand_cmd(
        dir: Path = typer.Option(..., "--dir", help="Folder of the release's per-video JSON files."),
        videos: Path = typer.Option(
            None,
            "--videos",
            help="Folder of the videos named by video_name (optional: without it the manifest can be scored, not run).",
        ),
        out: Path = typer.Option(..., "--out", help="Output dataset directory."),
        on_invalid: str = typer.Option("drop-target", "--on-invalid", help=_POLICY_HELP),
        cluster_by: str = typer.Option("source", "--cluster-by", help=_CLUSTER_HELP),
    ) -> None:
        """Validate the STRAND release and write it as faithful samples (manifest.jsonl, validation.json)."""
        from vidaudit.suites.faithful.strand_import import import_strand

        res = import_strand(dir, out, videos=videos, on_invalid=on_invalid, cluster_by=cluster_by)
        _print_summary(console, res.validation)
        console.print(f"{len(res.samples)} samples; manifest: {res.manifest}")

    return None


def add_validate_strand(validate_app: typer.Typer) -> None:
    from vidaudit.sdk import console, friendly_errors

    @validate_app.command("strand")
    @friendly_errors
    def validate_strand_cmd(
        dir: Path = typer.Argument(..., help="Folder of the release's per-video JSON files."),
        out: Path = typer.Option(None, "--out", help="Where to write validation.json (default: DIR/validation.json)."),
        on_invalid: str = typer.Option("drop-target", "--on-invalid", help=_POLICY_HELP),
        cluster_by: str = typer.Option("source", "--cluster-by", help=_CLUSTER_HELP),
    ) -> None:
        """Check the STRAND release (no videos needed): print a summary, write validation.json."""
        from vidaudit.suites.faithful.strand_validate import validate_strand, write_validation

        res = validate_strand(dir, on_invalid=on_invalid, cluster_by=cluster_by)
        path = write_validation(res, out if out is not None else Path(dir) / "validation.json")
        _print_summary(console, res)
        console.print(f"validation: {path}")
