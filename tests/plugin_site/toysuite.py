"""A third-party suite that lives outside the vidaudit package: "what colour is the screen?".

It exists to prove the backbone: registered only through the ``vidaudit.suites`` entry point (see
``toy_plugin-0.1.dist-info/entry_points.txt`` beside it), it must work with every command.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vidaudit.core.contract.records import ParseResult, TrialScore, counted
from vidaudit.core.contract.report import (
    GridFigure,
    Section,
    SuiteReport,
    Table,
    ViewerColumn,
    ViewerSpec,
    ViewerTrial,
)
from vidaudit.core.contract.roles import Baselines, Commands
from vidaudit.core.contract.suite import AggregateInput, Prompt, ScoreInput, Suite, SuiteCapabilities
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import write_dataset_info, write_manifest
from vidaudit.core.types import Sample, VideoRef
from vidaudit.video.encode import write_video
from vidaudit.video.probe import probe

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 60), "blue": (40, 60, 230)}
_BOXED = re.compile(r"\\boxed\{([a-z]+)\}")


def generate_toy(out: Path, seeds: int = 2) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    samples = []
    for name, rgb in COLOURS.items():
        for seed in range(seeds):
            rel = f"videos/{name}-{seed}.mp4"
            frame = np.zeros((64, 96, 3), np.uint8)
            frame[:] = rgb
            (out / "videos").mkdir(exist_ok=True)
            write_video(out / rel, [frame] * 20, 10.0, 96, 64)
            info = probe(out / rel)
            samples.append(
                Sample(
                    sample_id=f"toy-{name}-{seed}",
                    suite="toy",
                    params={"colour": name, "seed": seed},
                    question="What colour is the screen?",
                    answer=name,
                    video=VideoRef(
                        path=rel,
                        sha256=sha256_file(out / rel),
                        fps=info.fps,
                        width=info.width,
                        height=info.height,
                        n_frames=info.n_frames,
                        duration_s=info.duration_s,
                    ),
                )
            )
    write_manifest(out, samples)
    write_dataset_info(out, {"suite": "toy", "n_samples": len(samples)})
    return out / "manifest.jsonl"


class ToyCommands(Commands):
    def add_commands(self, generate) -> None:
        import typer

        @generate.command("toy")
        def _generate(out: Path = typer.Option(..., "--out")) -> None:
            """Render the toy colour videos."""
            typer.echo(f"manifest: {generate_toy(out)}")


class ToyBaselines(Baselines):
    def oracle_answer(self, sample) -> str:
        return f"The screen is {sample.answer}: \\boxed{{{sample.answer}}}"

    def chance_answer(self, sample, rng, option: str = "") -> str:
        return f"\\boxed{{{sorted(COLOURS)[int(rng.integers(0, len(COLOURS)))]}}}"


class ToySuite(Suite):
    name = "toy"
    description = "What colour is the screen? (a plugin suite used by the tests)"
    default_prompt = "plain"
    viewer = ViewerSpec(group_label="colour", columns=[ViewerColumn(key="answer", label="answer")])
    commands = ToyCommands()
    baselines = ToyBaselines()

    def prompt_names(self) -> Sequence[str]:
        return ["plain"]

    def render_prompt(self, sample, condition) -> Prompt:
        return Prompt(None, f"{sample.question} Answer inside \\boxed{{}}.")

    # A free-text answer (no box) goes to the run's judge (``vidaudit run --judge SPEC``).
    judge_version = "toy-judge-1"
    capabilities = SuiteCapabilities(judges=True)

    def judge_prompt(self, sample, answer: str) -> Prompt | None:
        if _BOXED.search(answer or ""):
            return None
        return Prompt(
            "You grade answers.",
            f"The screen in the video is {sample.answer}. Does this answer say so? "
            f'Answer: {answer!r}. Reply with JSON only: {{"names_colour": true|false}}',
        )

    def score(self, trial: ScoreInput) -> TrialScore:
        from vidaudit.score.judge import read_verdict

        sample, text, judgement = trial.sample, trial.text, trial.judgement
        m = _BOXED.search(text or "")
        if m is None and text:
            if judgement is None:  # no judge in the run: in no figure's denominator, counted beside it
                return TrialScore.unjudged({"judge": "none"})
            v = read_verdict(judgement, "names_colour")
            if not v.ok:
                return TrialScore(
                    correct=False, parse=ParseResult(method="judge_unparseable"), metrics={"judge": "unparseable"}
                )
            return TrialScore(
                correct=bool(v.value), parse=ParseResult(value=str(v.value), method="judged"), metrics={"judge": "ok"}
            )
        if m is None:
            return TrialScore(correct=False, parse=ParseResult(method="unparseable"))
        return TrialScore(
            correct=m.group(1) == sample.answer,
            parse=ParseResult(value=m.group(1), method="boxed", span=m.span()),
            metrics={"said": m.group(1)},
        )

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        records = inputs.records
        models = sorted({r.model for r in records})
        conds = sorted({r.condition for r in records})
        acc = {}
        for m in models:
            for c in conds:
                acc[f"{m}|{c}"] = counted(r for r in records if r.model == m and r.condition == c).rate
        table = Table(
            id="toy-accuracy",
            title="Accuracy",
            columns=["model", "condition", "accuracy"],
            key_columns=2,
            rows=[[m, c, "-" if acc[f"{m}|{c}"] is None else f"{acc[f'{m}|{c}']:.2f}"] for m in models for c in conds],
        )
        fig = GridFigure(
            id="toy-grid",
            title="accuracy by model and condition",
            row_label="model",
            col_label="condition",
            rows=models,
            cols=conds,
            values=[[acc[f"{m}|{c}"] for c in conds] for m in models],
        )
        return SuiteReport(
            results={"accuracy": acc},
            sections=[Section(id="toy", title="Toy accuracy", figures=[fig], tables=[table])],
            notes=["toy suite: three colours"],
        )

    def viewer_trial(self, record, sample, raw_text) -> ViewerTrial:
        return ViewerTrial(
            trial_id=record.trial_id,
            sample_id=record.sample_id,
            model=record.model,
            condition=record.condition,
            group=str(sample.params["colour"]),
            status=record.status,
            correct=record.correct,
            columns={"answer": str(sample.answer)},
            raw_text=raw_text or "",
        )


SUITE = ToySuite()


class JudgedChance:
    """A composite model from the plugin: a chance answer, then the oracle as a judge who overrules it.

    Two stage calls per sample, each stored and cached by content by the executor.
    """

    composite = True
    needs_samples = True
    needs_suite = True

    def __init__(self, spec, *, samples=None, suite=None, **_: object) -> None:
        from vidaudit.core.types import ModelSpec
        from vidaudit.models.base import Capabilities
        from vidaudit.models.factory import make_adapter

        self.spec = spec
        self.capabilities = Capabilities(native_video=True, concurrency=2, local=True, synthetic=True)
        self.answerer = make_adapter(ModelSpec.parse("chance"), samples=samples, suite=suite)
        self.judge = make_adapter(ModelSpec.parse("oracle"), samples=samples, suite=suite)

    async def run(self, request, call):
        from vidaudit.models.base import combine_stages

        first = await call("answer", self.answerer, request)
        verdict = await call("judge", self.judge, request)
        overruled = first.text.replace("\\boxed", "")
        return combine_stages(f"first said {overruled}; judge: {verdict.text}", [first, verdict])

    async def aclose(self) -> None:
        await self.answerer.aclose()
        await self.judge.aclose()
