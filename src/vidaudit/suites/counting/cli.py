"""The counting suite's CLI sub-commands: ``vidaudit generate counting`` and ``vidaudit generate repcount``.

Contributed to the CLI through the suite (its ``Commands`` role, ``CountingCommands``), so ``cli.py`` never names
a suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def _force_option() -> Any:
    """``--force`` of both commands: a dataset's samples are compared with what is in ``--out`` before it is replaced."""
    return typer.Option(
        False,
        "--force",
        help="Replace a dataset already in --out even if its samples differ (runs planned on it will no longer match).",
    )


def register(generate_app: typer.Typer) -> None:
    from vidaudit.sdk import console, executor_option, friendly_errors, parse_list, progress_bar, ray_address_option

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
        verify: bool = typer.Option(
            True,
            "--verify/--no-verify",
            help="Check every video against its trace as it "
            "is rendered: the frames drawn, the packets stored, and a sample decoded.",
        ),
        decode_every: int = typer.Option(
            8,
            "--decode-every",
            min=1,
            help="With --verify, also decode one video in "
            "this many (by its id's hash) in full; 1: every video. `vidaudit verify` "
            "decodes all.",
        ),
        force: bool = _force_option(),
        executor: str = executor_option(),
        ray_address: str = ray_address_option(),
    ) -> None:
        """Render the counting suite (bounce_ball, blinking, state_machine) with executable traces."""
        import vidaudit.suites.counting.grid as g
        from vidaudit.sdk import pool_factory
        from vidaudit.suites.counting.generate import generate
        from vidaudit.suites.counting.scene import RenderSettings

        doms = parse_list(domains, str, "domains") or list(g.DOMAINS)
        ns, fs = parse_list(counts, int, "counts"), parse_list(frequencies, float, "frequencies")
        if ns is None and fs is None and seeds is None:
            points = g.preset(preset, doms) if preset != "paper" else g.grid(doms)
            if preset not in ("smoke", "paper"):
                g.preset(preset)  # raises the clear error
        else:
            points = g.grid(
                doms,
                ns if ns is not None else g.COUNTS,
                fs if fs is not None else g.FREQUENCIES,
                range(seeds if seeds is not None else 10),
            )
        settings = RenderSettings(duration_s=duration, fps=fps, width=width, height=height)
        with progress_bar("planning" if dry_run else "rendering") as update:
            res = generate(
                points,
                out,
                settings,
                workers=workers,
                dry_run=dry_run,
                skip_existing=skip_existing,
                verify=verify,
                decode_every=decode_every,
                force=force,
                on_progress=update,
                pool=pool_factory(executor, ray_address),
            )
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
        force: bool = _force_option(),
    ) -> None:
        """Turn a real repetition-counting dataset into counting samples (one event per repetition start)."""
        from vidaudit.sdk import MANIFEST, dataset_dir, guard_replace
        from vidaudit.suites.counting.repcount import scan_repcount, write_repcount_dataset

        dataset_dir(out)
        if not force and (out / MANIFEST).is_file():  # compare first: the writer replaces what is there
            scan = scan_repcount(csv, videos, split_name=split, relative_to=out, skip_invalid=skip_invalid)
            guard_replace(out, scan.samples, force=False, command="generate repcount")
        res = write_repcount_dataset(csv, videos, out, split_name=split, skip_invalid=skip_invalid)
        for p in res.skipped:
            console.print(f"[yellow]skipped[/] line {p.line} ({p.name}): {p.message}", highlight=False)
        console.print(f"{len(res.samples)} samples; manifest: {res.manifest}")
