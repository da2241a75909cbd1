"""``vidaudit generate stress``, contributed through ``StressSuite.add_commands``."""

from __future__ import annotations

from pathlib import Path

import typer


def register(generate_app: typer.Typer) -> None:
    from vidaudit.cli_common import console, friendly_errors
    from vidaudit.core.errors import ConfigError

    @generate_app.command("stress")
    @friendly_errors
    def generate_stress(
        out: Path = typer.Option(..., "--out", help="Output directory."),
        probe: str = typer.Option("camera_motion", "--probe", help="Which probe to render (camera_motion)."),
        preset: str = typer.Option("smoke", "--preset", help="'smoke' (6 motions x 2 scenes, 160x96, 3 s at "
                                   "10 fps) or 'paper' (reduced A.3-like sweep, 320x180)."),
        seeds: int = typer.Option(None, "--seeds", help="Scenes per motion (replaces the preset's count)."),
        force: bool = typer.Option(False, "--force", help="Replace a dataset already in --out even if its samples "
                                   "differ."),
    ) -> None:
        """Render the stress suite's stimuli (part 1: the camera_motion probe)."""
        from vidaudit.suites.stress.generate import generate
        from vidaudit.suites.stress.suite import PROBES

        if probe not in PROBES:
            raise ConfigError(f"unknown probe {probe!r}; choose from {', '.join(PROBES)}")
        manifest = generate(out, preset, seeds, force=force)
        console.print(f"manifest: {manifest}")
