"""One stress probe: the unit the stress suite dispatches to by ``sample.params["probe"]``.

The Reveal probes share nothing but the pipeline: each renders its own stimuli, asks its own question,
scores its own answer format and reports its own tables. A probe is a ``Probe`` subclass in its own
sub-package of ``vidaudit.suites.stress`` and is listed in ``PROBE_TARGETS``; the suite (``suite.py``)
only routes every hook of the ``Suite`` protocol to the probe a sample names. A dataset holds the
samples of one probe (one ``generate`` call); a run may mix datasets of several probes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.core.contract.records import ScoreRecord, TrialScore
from vidaudit.core.contract.report import Section, ViewerTrial
from vidaudit.core.contract.suite import ObservedFrame, Prompt
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Condition, Sample

#: probe name -> ``"module:attr"`` of its ``Probe`` instance (imported on first use)
PROBE_TARGETS: dict[str, str] = {
    "camera_motion": "vidaudit.suites.stress.camera_motion.probe:PROBE",
    "lane_change": "vidaudit.suites.stress.lane_change.probe:PROBE",
    "cross_frame": "vidaudit.suites.stress.cross_frame.probe:PROBE",
    "wireframe": "vidaudit.suites.stress.wireframe.probe:PROBE",
    "mosaic": "vidaudit.suites.stress.mosaic.probe:PROBE",
    "shortcuts": "vidaudit.suites.stress.shortcuts.probe:PROBE",
    "sycophancy": "vidaudit.suites.stress.sycophancy.probe:PROBE",
    "sycophancy_pairs": "vidaudit.suites.stress.sycophancy.pairs_probe:PROBE",
    "expectation": "vidaudit.suites.stress.expectation.probe:PROBE",
}
#: what ``vidaudit suites`` lists for each probe (kept here so listing imports no probe)
PROBE_DESCRIPTIONS: dict[str, str] = {
    "camera_motion": "6-way camera motion (zoom in/out, pan left/right, tilt up/down) on moved stills; chance 1/6",
    "lane_change": "binary lane change (F1, lane change positive) on a user's annotated driving clips (--source)",
    "cross_frame": "strip-masked multiple-choice video QA (NExT-QA format or synthetic), w/ and w/o abstention; TBSR",
    "wireframe": "B.7 line connectivity in 4 frames (control / adversarial temporal groups / interleaved), widths "
                 "1-10 px, x=112 contrast, spatial and counting tasks",
    "mosaic": "Sequential Mosaic: 4 quadrants one per frame vs one image, cross-boundary text and two-shape "
              "scenes, recency errors",
    "shortcuts": "language shortcuts: First/Last/Sequence on reordered, blank, unrelated procedures; CLP; chance 1/4",
    "sycophancy": "AGREE/DISAGREE with a false claim and its true control (TR, FGA, SR, OA, COUNT); chance 1/2",
    "sycophancy_pairs": "source (b) of sycophancy: a generator model writes claim pairs for a user's videos",
    "expectation": "temporal expectation: anomalies (Spatial/Temporal/Overall), temporal gap (MCQ, summary), "
                   "reversed clips; free text judged (--judge)",
}


@dataclass(frozen=True)
class GenerateOptions:
    """What ``vidaudit generate stress`` passes to a probe's generator.

    ``source`` is a user's input where the probe reads one (a folder of stills, a NExT-QA-format set,
    annotated driving clips); ``settings`` are the ``--set KEY=VALUE`` pairs, which each probe checks
    against the keys it knows (an unknown key is an error naming the known ones).

    ``workers`` and ``pool`` say where a probe's per-video jobs run (``run.jobs``): serially by default
    (``workers`` 1), on a local process pool of ``workers`` (None: the cores), or on the executor
    ``pool(initializer=...)`` makes (``--executor ray``). The videos are the same bytes whichever way they
    ran; the probe's generator alone writes the manifest and ``dataset.json``.
    """

    preset: str = "smoke"
    seeds: int | None = None
    source: Path | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    force: bool = False
    workers: int | None = 1
    pool: Callable[..., Executor] | None = None

    def refuse_pool(self, probe: str, why: str) -> None:
        """A ConfigError for ``--executor ray`` on a probe that renders no video of its own (``why`` says so)."""
        if self.pool is not None:
            raise ConfigError(f"probe {probe} {why}, so it has nothing to run on Ray: drop --executor ray")

    def check_settings(self, known: Sequence[str], probe: str) -> None:
        unknown = sorted(set(self.settings) - set(known))
        if unknown:
            hint = f"; it takes: {', '.join(known)}" if known else "; it takes none"
            raise ConfigError(f"probe {probe} has no setting {', '.join(unknown)}{hint}")


@dataclass
class ProbeReport:
    """One probe's part of the suite report: its numbers, its sections and its headline notes."""

    results: dict[str, Any] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Probe:
    """Base class of a stress probe; the defaults refuse what a probe does not offer."""

    name: str = ""
    description: str = ""
    presets: tuple[str, ...] = ("smoke",)
    prompt_names: tuple[str, ...] = ("mcq",)
    #: sample parameters copied into every score record
    record_keys: tuple[str, ...] = ("probe",)

    # ------------------------------------------------------------------ data

    def generate(self, out: Path, options: GenerateOptions) -> Path:
        """Render (or load) the probe's samples into ``out``; returns the manifest path."""
        raise ConfigError(f"probe {self.name} has no generator")

    def check_sample(self, sample: Sample) -> str | None:
        """Why this sample's ground truth cannot be trusted, or None."""
        return None

    # ------------------------------------------------------------------ asking and scoring

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        raise NotImplementedError

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        """Public facts a local observer may read (never the answer)."""
        return {}

    #: the version of the probe's judge prompts ("" for a probe that never asks a judge)
    judge_version: str = ""
    #: whether ``judge_prompt`` may ask a judge and ``score`` takes ``judgement=`` (declared, never introspected)
    judges: bool = False

    def judge_prompt(self, sample: Sample, answer: str) -> Prompt | None:
        """What a judge (``vidaudit run --judge SPEC``) is asked about this answer; None: parsed, no judge."""
        return None

    def score(self, sample: Sample, text: str | None, status: str, *,
              frame_times: Sequence[float] | None = None) -> TrialScore:
        raise NotImplementedError

    def aggregate(self, records: Sequence[ScoreRecord], samples: Mapping[str, Sample]) -> ProbeReport:
        raise NotImplementedError

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        raise NotImplementedError

    # ------------------------------------------------------------------ baselines

    def oracle_answer(self, sample: Sample) -> str:
        raise ConfigError(f"probe {self.name} has no oracle answer")

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        raise ConfigError(f"probe {self.name} has no chance answer")

    def constant_answer(self, sample: Sample, value: str) -> str:
        raise ConfigError(f"probe {self.name} has no constant answer")

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        raise ConfigError(f"probe {self.name} has no pixel observer: no classical reader exists for it")


_LOADED: dict[str, Probe] = {}


def probe_names() -> list[str]:
    return list(PROBE_TARGETS)


def get_probe(name: object) -> Probe:
    """The probe called ``name``; a ConfigError naming the known probes otherwise."""
    if not isinstance(name, str) or name not in PROBE_TARGETS:
        raise ConfigError(f"unknown stress probe {name!r}; choose from {', '.join(PROBE_TARGETS)}")
    if name not in _LOADED:
        module, _, attr = PROBE_TARGETS[name].partition(":")
        probe = getattr(importlib.import_module(module), attr)
        if not isinstance(probe, Probe) or probe.name != name:
            raise ConfigError(f"{PROBE_TARGETS[name]} is not the Probe {name!r}")
        _LOADED[name] = probe
    return _LOADED[name]


def probe_of(sample: Sample) -> Probe:
    return get_probe(sample.params.get("probe"))
