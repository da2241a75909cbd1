"""``vidaudit generate stress --probe NAME``, contributed through the stress suite's ``Commands`` role.

One command for every probe: the options every probe shares, a ``--source`` for probes that read a
user's data, and ``--set KEY=VALUE`` for a probe's own settings (checked against the ``settings`` it declares).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from vidaudit.sdk import PartedSuite


def parse_settings(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; a pair without ``=`` or a repeated key is an error naming it."""
    from vidaudit.sdk import ConfigError

    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set takes KEY=VALUE, got {pair!r}")
        if key in out:
            raise ConfigError(f"--set {key} given twice")
        out[key] = value.strip()
    return out


def register(generate_app: typer.Typer, suite: PartedSuite) -> None:
    """Add ``generate stress`` to ``generate_app``; ``suite``: the stress suite, whose parts are the probes."""
    from vidaudit.sdk import console, executor_option, friendly_errors, ray_address_option

    listing = "; ".join(suite.parts)

    @generate_app.command("stress")
    @friendly_errors
    def generate_stress(
        out: Path = typer.Option(..., "--out", help="Output directory."),
        probe: str = typer.Option("camera_motion", "--probe", help=f"Which probe to render ({listing})."),
        preset: str = typer.Option(
            "smoke", "--preset", help="The probe's preset (smoke, paper, ...; see docs/stress.md)."
        ),
        seeds: int = typer.Option(None, "--seeds", help="Scenes / items per cell (replaces the preset's count)."),
        source: Path = typer.Option(
            None,
            "--source",
            help="A user's data for probes that read one (see docs/stress.md for each probe's format).",
        ),
        settings: list[str] = typer.Option(None, "--set", help="A probe setting KEY=VALUE (repeatable)."),
        force: bool = typer.Option(
            False, "--force", help="Replace a dataset already in --out even if its samples differ."
        ),
        workers: int = typer.Option(1, "--workers", help="Parallel render processes (default 1: serially)."),
        executor: str = executor_option(),
        ray_address: str = ray_address_option(),
    ) -> None:
        """Render a stress probe's stimuli (with exact answers) into a dataset directory."""
        from vidaudit.sdk import load_samples, pool_factory
        from vidaudit.suites.stress.probe import GenerateOptions, probe_of

        pool = pool_factory(executor, ray_address)  # a bad --executor / --ray-address is refused before rendering
        p = probe_of(suite, probe)
        if preset not in p.presets:
            from vidaudit.sdk import ConfigError

            raise ConfigError(f"probe {probe} has no preset {preset!r}; choose from {', '.join(p.presets)}")
        opts = GenerateOptions(
            preset=preset,
            seeds=seeds,
            source=source,
            settings=parse_settings(settings),
            force=force,
            workers=workers,
            pool=pool,
            say=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True),
        )
        manifest = p.generate(out, opts)
        # what the dataset holds and what each kind of sample needs, e.g. ``36 samples: 8 direction, 28 anomaly
        # (need --judge)``
        console.print(
            suite.describe_samples(load_samples(Path(manifest).parent)), highlight=False, markup=False, soft_wrap=True
        )
        console.print(f"manifest: {manifest}", highlight=False, markup=False, soft_wrap=True)
