"""The faithful suite (STRAND) behind the ``Suite`` protocol, and its roles; every hook delegates to the suite's
modules."""

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
    ModuleAudit,
    Prompt,
    Sample,
    ScoreInput,
    ScoreRecord,
    Suite,
    SuiteCapabilities,
    SuiteReport,
    TrialScore,
    Verification,
    ViewerTrial,
)
from vidaudit.suites.faithful.cli import add_import_strand, add_validate_strand, register
from vidaudit.suites.faithful.prompts import PROMPT_NAMES, render_prompt
from vidaudit.suites.faithful.scoring import score_answer
from vidaudit.suites.faithful.viewer import FAITHFUL_VIEWER, viewer_trial
from vidaudit.suites.faithful.world import source_video_of

#: sample parameters copied into each score record
RECORD_PARAMS = (
    "role",
    "target_id",
    "target_sample_id",
    "probe_type",
    "polarity",
    "video_id",
    "source_video_id",
    "domain",
    "sub_index",
    "source",
    "seed",
    "invalid",
)


def _yes_no(value: str, what: str) -> str:
    v = value.strip().casefold()
    if v not in ("yes", "no"):
        raise ConfigError(f"{what} must be Yes or No for the faithful suite, got {value!r} (e.g. constant:Yes)")
    return "Yes" if v == "yes" else "No"


class FaithfulCommands(Commands):
    """``vidaudit generate faithful``, ``import strand`` and ``validate strand``, and the demo's smoke worlds."""

    def add_commands(self, generate: Any) -> None:
        register(generate)

    def add_group_commands(self, groups: Mapping[str, Any]) -> None:
        add_import_strand(groups["import"])
        add_validate_strand(groups["validate"])

    def generate_demo(
        self, out: Path, *, workers: int | None = None, on_progress: Callable[[int, int], None] | None = None
    ) -> Path:
        from vidaudit.suites.faithful.generate import generate, specs_for

        return generate(specs_for("smoke"), out, workers=workers, on_progress=on_progress).manifest


class FaithfulVerification(Verification):
    """Every rendered world's facts checked against its videos' pixels (``vidaudit generate faithful`` data)."""

    module = "vidaudit.suites.faithful.verify"

    def refusal(self, data_dir: Path, info: Mapping[str, Any]) -> str | None:
        if not (info.get("capabilities") or {}).get("world_records"):
            return (
                f"{data_dir} has no world records to check pixels against (an imported STRAND "
                "release); pixel verification applies to `vidaudit generate faithful` data"
            )
        return None


class FaithfulBaselines(Baselines):
    """``Answer: Yes`` / ``Answer: No``: the gold answer, a fair coin, or the value named."""

    def oracle_answer(self, sample: Sample) -> str:
        return f"Answer: {sample.answer}"

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        if option:
            raise ConfigError(f"chance for the faithful suite is uniform Yes/No and takes no option, got {option!r}")
        return f"Answer: {'Yes' if rng.integers(2) else 'No'}"

    def constant_answer(self, sample: Sample, value: str) -> str:
        return f"Answer: {_yes_no(value, 'constant')}"


class FaithfulSuite(Suite):
    name = "faithful"
    description = (
        "Targets about the order of two events with their atomic sub-questions, scored jointly "
        "(faithful accuracy) on synthetic worlds with exact facts or the STRAND release."
    )
    paper = "002_fcde868126a0377a"
    default_prompt = "yes_no"
    kind_param = "role"
    viewer = FAITHFUL_VIEWER
    baselines = FaithfulBaselines()
    verification = FaithfulVerification()
    audit = ModuleAudit("vidaudit.suites.faithful.audit")
    commands = FaithfulCommands()

    # ------------------------------------------------------------------ prompts

    def prompt_names(self) -> Sequence[str]:
        return list(PROMPT_NAMES)

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        return Prompt(*render_prompt(sample, condition))

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        """The role, and for open-vocabulary data the schema and vocabulary the dataset says its videos need
        (public, never the answer: the object-centric framework extracts and reads questions with them)."""
        out = {"role": sample.params.get("role")}
        for key in ("schema", "vocabulary"):
            if sample.params.get(key):
                out[key] = sample.params[key]
        return out

    # ------------------------------------------------------------------ scoring

    def record_params(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        out = {k: p[k] for k in RECORD_PARAMS if k in p}
        out["gold"] = sample.answer
        return out

    def source_of(self, record: ScoreRecord) -> tuple[str, str]:
        """The item's source video (``source_video_id``: a STRAND source cut into several files is one), the
        cluster every faithful statistic counts; its video where the record names none."""
        return ("video", source_video_of(record.params, record.group_id))

    def score(self, trial: ScoreInput) -> TrialScore:
        from vidaudit.suites.faithful.framework.retrieval_eval import dropped_of, memory_of, retrieved_of

        text, status = trial.text, trial.status
        out = score_answer(trial.sample, text, status)
        retrieved = retrieved_of(text) if status == "ok" else None
        if retrieved is not None:  # an object-centric reply: what it retrieved, for retrieval precision/recall
            extra: dict[str, Any] = {"retrieved": retrieved}
            dropped = dropped_of(text)
            if dropped is not None:  # drop_one=on: what G answered without (D.6's intervention)
                extra["dropped"] = dropped
            size = memory_of(text)
            if size is not None:  # the memory's estimated tokens (a token-matched cap is computed from them)
                extra["memory_tokens"] = size
            out = out.model_copy(update={"metrics": {**out.metrics, **extra}})
        return out

    # the report stage fills AggregateInput.usage with the store's per-stage usage (the budget table reads it)
    capabilities = SuiteCapabilities(needs_usage=True)

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        from vidaudit.suites.faithful.aggregate import aggregate
        from vidaudit.suites.faithful.sections import (
            faithful_headline,
            faithful_sections,
            headline_notes,
        )

        # an imported human study: one more row per annotator
        results = aggregate(inputs.with_human, inputs.samples, usage=inputs.usage)
        return SuiteReport(
            results=results,
            sections=faithful_sections(results),
            notes=headline_notes(results),
            headline=faithful_headline(results),
        )

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        return viewer_trial(record, sample, raw_text)
