"""``vidaudit tiny-model`` and ``vidaudit probe``: thin wrappers over ``mech.tiny`` and ``mech.probes``."""

from __future__ import annotations

from pathlib import Path

import typer

from vidaudit.core.console import console, friendly_errors, progress_bar


def register(app: typer.Typer) -> None:
    """Add the two commands to the main app."""

    @app.command("tiny-model")
    @friendly_errors
    def tiny_model(
        family: str = typer.Argument(..., help="qwen2_vl, qwen2_5_vl, qwen3_vl, smolvlm or llava_onevision."),
        out: Path = typer.Option(..., "--out", help="A new (or empty) directory."),
    ) -> None:
        """Build a random-weight model of FAMILY from its config, with its processor; nothing is downloaded."""
        from vidaudit.tools.mech.tiny import build_tiny

        path = build_tiny(family, out)
        console.print(f"wrote a tiny {family} model to {path}; use it as --model hf:{path}")

    @app.command("probe")
    @friendly_errors
    def probe(
        name: str = typer.Argument(..., help="linear, attention, kl, cka or encoder-partition."),
        model: str = typer.Option(..., "--model", help="hf:PATH of an open model."),
        data: Path = typer.Option(..., "--data", help="A dataset dir written by `vidaudit generate`."),
        out: Path = typer.Option(
            ...,
            "--out",
            help="Where NAME.json, NAME.svg and the caches go (RUN/mechanism puts it in that run's report).",
        ),
        layers: str = typer.Option(None, "--layers", help="LLM layers for linear, e.g. 3,9,18,26."),
        frames: int = typer.Option(8, "--frames", help="Frames sent per clip (frames#K, even)."),
        task: str = typer.Option(None, "--task", help="linear: direction or camera (default: from the data)."),
        factor: str = typer.Option("sycophancy", "--factor", help="attention: sycophancy or bias."),
        limit: int = typer.Option(None, "--limit", help="Only the first N clips."),
        device: str = typer.Option("cpu", "--device"),
        dtype: str = typer.Option("float32", "--dtype", help="float32, bfloat16, float16 or auto."),
        epochs: int = typer.Option(None, "--epochs", help="linear: training epochs (default 50)."),
    ) -> None:
        """Run a mechanistic probe of an open model and write OUT/NAME.json and OUT/NAME.svg."""
        from vidaudit.tools.mech.probes import run_probe

        with progress_bar(f"probe {name}") as update:
            paths = run_probe(
                name,
                model,
                data,
                out,
                layers=layers,
                frames=frames,
                task=task,
                factor=factor,
                limit=limit,
                device=device,
                dtype=dtype,
                epochs=epochs,
                on_progress=update,
            )
        console.print(f"wrote {paths['json']} and {paths['svg']}")
