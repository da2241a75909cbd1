"""The counting suite behind the ``Suite`` protocol: what the generic stages call, and the roles it declares.

Everything here delegates to the suite's own modules (prompts, scoring, aggregate, detector, ledger);
this file only maps them onto the protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.sdk import (
    AggregateInput,
    Baselines,
    Commands,
    Condition,
    ConfigError,
    Designs,
    ModuleAudit,
    ObservedFrame,
    ParseResult,
    Prompt,
    Sample,
    ScoreInput,
    ScoreRecord,
    SequentialDesign,
    Suite,
    SuiteReport,
    TrialScore,
    Verification,
    ViewerTrial,
)
from vidaudit.suites.counting.adaptive import AdaptiveDesign
from vidaudit.suites.counting.cli import register
from vidaudit.suites.counting.grid import preset
from vidaudit.suites.counting.ledger import ledger_text
from vidaudit.suites.counting.prompts import PROMPT_NAMES, render_prompt
from vidaudit.suites.counting.viewer import COUNTING_VIEWER, viewer_trial

#: the answer range of the paper's grid (N in 0..12): what ``chance`` draws from by default
CHANCE_RANGE = (0, 12)
#: CountingScore fields that the ScoreRecord already carries under its own names
_RECORD_FIELDS = frozenset({"sample_id", "group_id", "domain", "n_events", "frequency_hz", "status", "correct"})


def _int_answer(value: str, what: str) -> int:
    try:
        k = int(value)
    except ValueError as e:
        raise ConfigError(f"{what} must be an integer count, got {value!r}") from e
    if k < 0:
        raise ConfigError(f"{what} must be a non-negative count, got {k}")
    return k


class CountingCommands(Commands):
    """``vidaudit generate counting`` (and ``generate repcount``), and the demo's smoke grid."""

    def add_commands(self, generate: Any) -> None:
        register(generate)

    def generate_demo(
        self, out: Path, *, workers: int | None = None, on_progress: Callable[[int, int], None] | None = None
    ) -> Path:
        from vidaudit.suites.counting.generate import generate

        res = generate(preset("smoke"), out, workers=workers, skip_existing=True, on_progress=on_progress)
        return res.manifest


class CountingVerification(Verification):
    """Every rendered video's events checked against its trace from decoded pixels."""

    module = "vidaudit.suites.counting.verify"

    def refusal(self, data_dir: Path, info: Mapping[str, Any]) -> str | None:
        if info.get("real_video"):
            return (
                f"{data_dir} holds real videos with annotated counts; pixel verification applies "
                "to rendered suites only"
            )
        if info.get("dry_run"):
            return f"{data_dir} is a dry run: it has no videos to verify"
        return None


class CountingDesigns(Designs):
    """``--design adaptive``: the adaptive search for the operating boundary (docs/adaptive.md)."""

    def sequential_design(self, name: str, rule: str | None, planned: Sequence[Any]) -> SequentialDesign:
        if name != "adaptive":
            raise ConfigError(f"unknown design {name!r} for the counting suite; choose full or adaptive")
        return AdaptiveDesign(planned, rule or "point")


class CountingBaselines(Baselines):
    """The oracle's ledger from the trace, chance over 0..12 (or ``chance:LO-HI``), ``\\boxed{K}`` for a value, and
    the pixel observer's ledger from the events it detects."""

    def oracle_answer(self, sample: Sample) -> str:
        events = [(e.t, e.state_after) for e in sample.trace.events]
        return ledger_text(sample.params.get("domain"), events, int(sample.answer))

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        lo, hi = CHANCE_RANGE
        if option:
            a, _, b = option.partition("-")
            lo, hi = _int_answer(a, "chance's low end"), _int_answer(b or a, "chance's high end")
            if lo > hi:
                raise ConfigError(f"chance range {lo}-{hi} is empty; write chance:LOW-HIGH, e.g. chance:0-12")
        return f"\\boxed{{{int(rng.integers(lo, hi + 1))}}}"

    def constant_answer(self, sample: Sample, value: str) -> str:
        return f"\\boxed{{{_int_answer(value, 'constant')}}}"

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        from vidaudit.suites.counting.detector import detect_events

        domain = metadata.get("domain")
        if not domain:
            raise ConfigError("the request carries no domain metadata")
        found = detect_events(domain, frames)
        return ledger_text(domain, [(d.t, d.label) for d in found])


class CountingSuite(Suite):
    name = "counting"
    description = (
        "Count wall contacts, blinks and state transitions over an N x F grid with executable traces "
        "(Low-Frequency Trap)."
    )
    paper = "000_2cdda6f6d04db62c"
    default_prompt = "structured_trace"
    kind_param = "domain"
    viewer = COUNTING_VIEWER
    baselines = CountingBaselines()
    verification = CountingVerification()
    designs = CountingDesigns()
    audit = ModuleAudit("vidaudit.suites.counting.audit")
    commands = CountingCommands()

    # ------------------------------------------------------------------ ground truth

    def check_samples(self, samples: Sequence[Sample], source: str) -> None:
        from vidaudit.suites.counting.verify import check_answers

        check_answers(samples, source)

    # ------------------------------------------------------------------ prompts

    def prompt_names(self) -> Sequence[str]:
        return list(PROMPT_NAMES)

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        system, text = render_prompt(sample, condition)
        return Prompt(system, text)

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        return {"domain": sample.params.get("domain")}

    # ------------------------------------------------------------------ scoring

    def record_params(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        out = {
            "domain": p.get("domain"),
            "n_events": p.get("n_events", sample.answer),
            "frequency_hz": p.get("frequency_hz"),
        }
        for key in ("seed", "source", "action", "split"):
            if key in p:
                out[key] = p[key]
        return out

    def score(self, trial: ScoreInput) -> TrialScore:
        from vidaudit.suites.counting.scoring import score_record

        rec = score_record(
            trial.sample,
            trial.text if trial.status == "ok" else None,
            trial.status,
            frame_times=list(trial.frame_times) if trial.frame_times else None,
        )
        if not rec["scored"]:
            return TrialScore(correct=None)
        metrics = {k: v for k, v in rec.items() if k not in _RECORD_FIELDS}
        span = rec["parse_span"]
        return TrialScore(
            correct=bool(rec["correct"]),
            metrics=metrics,
            parse=ParseResult(
                value=rec["predicted_count"],
                method=rec["parse_method"] or "unparseable",
                span=tuple(span) if span else None,
            ),
        )

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        from vidaudit.suites.counting.report import counting_report

        return counting_report(inputs.with_human)  # an imported human study: one more row per annotator

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        return viewer_trial(record, sample, raw_text)
