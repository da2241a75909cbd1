"""The stress suite behind the ``Suite`` protocol: every hook routes to the probe a sample names.

The probes themselves live in sub-packages (``camera_motion/``, ...) behind ``probe.Probe``; this module
knows none of them by name. The report's results are keyed by probe name; its sections are the probes'
sections in the order of ``PROBE_TARGETS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.core.contract.profile import AuditPart, PartFigures
from vidaudit.core.contract.records import ScoreRecord, TrialScore
from vidaudit.core.contract.report import SuiteReport, ViewerTrial
from vidaudit.core.contract.suite import AggregateInput, Capabilities, ObservedFrame, Prompt, ScoreInput, Suite
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import Condition, PerturbationSpec, Sample
from vidaudit.suites.stress.common import HUMAN_CELLS, human_cells
from vidaudit.suites.stress.probe import PROBE_DESCRIPTIONS, get_probe, probe_names, probe_of
from vidaudit.suites.stress.viewer import STRESS_VIEWER

#: name -> description, as ``vidaudit suites`` lists them
PROBES: dict[str, str] = dict(PROBE_DESCRIPTIONS)


class StressSuite(Suite):
    name = "stress"
    description = ("Reveal stress probes: each opposes a shortcut answer to the visually correct one, with exact "
                   "synthetic ground truth (select one with --probe).")
    paper = "003_26ec3fd4175dfa64"
    default_prompt = "mcq"
    probes = PROBES
    viewer = STRESS_VIEWER
    capabilities = Capabilities(judges=True)  # the probes that declare ``judges`` (expectation) ask a judge

    def add_commands(self, generate) -> None:
        from vidaudit.suites.stress.cli import register

        register(generate)

    # ------------------------------------------------------------------ audit

    def audit_parts(self, budget: str) -> Sequence[AuditPart]:
        from vidaudit.suites.stress.audit import audit_parts

        return audit_parts(budget)

    def generate_part(self, part: AuditPart, out: Path, *, workers: int | None = None,
                      on_progress: Callable[[int, int], None] | None = None) -> Path:
        from vidaudit.suites.stress.audit import generate_part

        return generate_part(part, out, workers=workers)

    def part_conditions(self, part: AuditPart, data_dir: Path) -> tuple[str, ...]:
        from vidaudit.suites.stress.audit import part_conditions

        return part_conditions(part, data_dir)

    def profile_figures(self, part: AuditPart, results: Mapping[str, Any]) -> PartFigures:
        from vidaudit.suites.stress.audit import profile_figures

        return profile_figures(part, results)

    def check_samples(self, samples: Sequence[Sample], source: str) -> None:
        bad = []
        for s in samples:
            try:
                why = probe_of(s).check_sample(s)
            except ConfigError as e:
                why = str(e)
            if why:
                bad.append(f"{s.sample_id}: {why}")
        if bad:
            raise DataError(f"{source}: {len(bad)} stress samples cannot be trusted: " + "; ".join(bad[:5]))

    def perturbation_problem(self, sample: Sample, spec: PerturbationSpec) -> str | None:
        probe = probe_of(sample)
        hook = getattr(probe, "perturbation_problem", None)
        if hook is None:
            return f"probe {probe.name} does not define its ground truth under {spec.name}; drop the perturbation"
        return hook(sample, spec)

    # ------------------------------------------------------------------ prompts

    def prompt_names(self) -> Sequence[str]:
        names = [self.default_prompt]
        for p in probe_names():
            names += [n for n in get_probe(p).prompt_names if n not in names]
        return names

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        probe = probe_of(sample)
        if condition is not None and condition.prompt not in probe.prompt_names:
            raise ConfigError(f"probe {probe.name} has no prompt {condition.prompt!r}; it has "
                              f"{', '.join(probe.prompt_names)}")
        return probe.render_prompt(sample, condition)

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        return {"probe": sample.params.get("probe"), **probe_of(sample).request_metadata(sample)}

    # ------------------------------------------------------------------ scoring

    def record_params(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        return {k: p[k] for k in probe_of(sample).record_keys if k in p}

    def score(self, trial: ScoreInput) -> TrialScore:
        sample, text, status, frame_times = trial.sample, trial.text, trial.status, trial.frame_times
        probe = probe_of(sample)
        if probe.judges:
            # a probe that declares ``judges`` takes judgement= (the base Probe.score does not)
            return probe.score(sample, text, status, frame_times=frame_times,  # type: ignore[call-arg]
                               judgement=trial.judgement)
        return probe.score(sample, text, status, frame_times=frame_times)

    # ------------------------------------------------------------------ judges (routed to the probes that judge)

    @property
    def judge_version(self) -> str:  # type: ignore[override]
        """Every judging probe's prompt version, e.g. ``expectation:expectation-judges-1``."""
        return ";".join(f"{n}:{v}" for n in probe_names() if (v := get_probe(n).judge_version))

    def judge_prompt(self, sample: Sample, answer: str) -> Prompt | None:
        return probe_of(sample).judge_prompt(sample, answer)

    def judges_any(self, samples: Sequence[Sample]) -> bool:
        """Only probes that declare ``judges`` ever ask a judge (camera_motion's answers are parsed)."""
        return any(probe_of(s).judges for s in samples)

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        # human-study records fill the human-ceiling columns only; the probes' model rows never see them
        records = inputs.records
        token = HUMAN_CELLS.set(human_cells(records))
        try:
            return self._aggregate([r for r in records if r.model_role != "human"], inputs.samples)
        finally:
            HUMAN_CELLS.reset(token)

    def _aggregate(self, records: Sequence[ScoreRecord], samples: Mapping[str, Sample]) -> SuiteReport:
        by_probe: dict[str, list[ScoreRecord]] = {}
        for r in records:
            by_probe.setdefault(str(r.params.get("probe")), []).append(r)
        out = SuiteReport()
        for name in probe_names():
            if name not in by_probe:
                continue
            part = get_probe(name).aggregate(by_probe.pop(name), samples)
            out.results.update(part.results)
            out.sections.extend(part.sections)
            out.notes.extend(part.notes)
        if by_probe:
            raise DataError(f"score records of unknown stress probes {sorted(by_probe)}; re-score the run with "
                            "this version of vidaudit")
        return out

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        return probe_of(sample).viewer_trial(record, sample, raw_text)

    # ------------------------------------------------------------------ baselines

    def oracle_answer(self, sample: Sample) -> str:
        return probe_of(sample).oracle_answer(sample)

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        return probe_of(sample).chance_answer(sample, rng, option)

    def constant_answer(self, sample: Sample, value: str) -> str:
        return probe_of(sample).constant_answer(sample, value)

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        return get_probe(metadata.get("probe")).observe(frames, metadata)


SUITE = StressSuite()
