"""The stress suite: a ``PartedSuite`` whose parts are the probes, each a ``Probe`` (a ``Suite``) of its own.

The probes live in sub-packages (``camera_motion/``, ...); this module lists them by lazy ``"module:attr"``
target and description (``PARTS``) and adds only what is the suite's own: the generate command, the audit
parts, one ground-truth error over every probe's samples, and the human-ceiling columns. The contract's
``PartedSuite`` routes every other hook to the probe a sample names, and gives each probe its own records and
the human study's records of its samples (``AggregateInput.human``). The report's results are keyed by
probe name; its sections are the probes' sections in the order of ``PARTS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vidaudit.sdk import (
    Commands,
    ConfigError,
    DataError,
    ModuleAudit,
    PartedSuite,
    Sample,
    SuiteCapabilities,
    get_suite,
)
from vidaudit.suites.stress.cli import register
from vidaudit.suites.stress.probe import Probe, probe_of
from vidaudit.suites.stress.viewer import STRESS_VIEWER

#: probe name -> (``"module:attr"`` of its ``Probe`` instance, what ``vidaudit suites`` lists for it);
#: the descriptions live here so that listing the suite imports no probe
PARTS: dict[str, tuple[str, str]] = {
    "camera_motion": (
        "vidaudit.suites.stress.camera_motion.probe:PROBE",
        "6-way camera motion (zoom in/out, pan left/right, tilt up/down) on moved stills; chance 1/6",
    ),
    "lane_change": (
        "vidaudit.suites.stress.lane_change.probe:PROBE",
        "binary lane change (F1, lane change positive) on a user's annotated driving clips (--source)",
    ),
    "cross_frame": (
        "vidaudit.suites.stress.cross_frame.probe:PROBE",
        "strip-masked multiple-choice video QA (NExT-QA format or synthetic), w/ and w/o abstention; TBSR",
    ),
    "wireframe": (
        "vidaudit.suites.stress.wireframe.probe:PROBE",
        "B.7 line connectivity in 4 frames (control / adversarial temporal groups / interleaved), widths "
        "1-10 px, x=112 contrast, spatial and counting tasks",
    ),
    "mosaic": (
        "vidaudit.suites.stress.mosaic.probe:PROBE",
        "Sequential Mosaic: 4 quadrants one per frame vs one image, cross-boundary text and two-shape "
        "scenes, recency errors",
    ),
    "shortcuts": (
        "vidaudit.suites.stress.shortcuts.probe:PROBE",
        "language shortcuts: First/Last/Sequence on reordered, blank, unrelated procedures; CLP; chance 1/4",
    ),
    "sycophancy": (
        "vidaudit.suites.stress.sycophancy.probe:PROBE",
        "AGREE/DISAGREE with a false claim and its true control (TR, FGA, SR, OA, COUNT); chance 1/2",
    ),
    "sycophancy_pairs": (
        "vidaudit.suites.stress.sycophancy.pairs_probe:PROBE",
        "source (b) of sycophancy: a generator model writes claim pairs for a user's videos",
    ),
    "expectation": (
        "vidaudit.suites.stress.expectation.probe:PROBE",
        "temporal expectation: anomalies (Spatial/Temporal/Overall), temporal gap (MCQ, summary), "
        "reversed clips; free text judged (--judge)",
    ),
}


class StressCommands(Commands):
    """``vidaudit generate stress --probe NAME``."""

    def add_commands(self, generate: Any) -> None:
        suite = get_suite(self.suite_name)  # the package's one instance (its entry point)
        assert isinstance(suite, PartedSuite)
        register(generate, suite)


class StressSuite(PartedSuite):
    name = "stress"
    description = (
        "Reveal stress probes: each opposes a shortcut answer to the visually correct one, with exact "
        "synthetic ground truth (select one with --probe)."
    )
    paper = "003_26ec3fd4175dfa64"
    default_prompt = "mcq"
    part_param = "probe"
    part_noun = "probe"
    parts = {name: target for name, (target, _) in PARTS.items()}
    probes = {name: text for name, (_, text) in PARTS.items()}
    viewer = STRESS_VIEWER
    capabilities = SuiteCapabilities(judges=True)  # the probes that declare ``judges`` (expectation) ask a judge
    audit = ModuleAudit("vidaudit.suites.stress.audit")
    commands = StressCommands()

    def probe(self, name: object) -> Probe:
        """The probe called ``name`` (a ConfigError naming the known ones otherwise)."""
        return probe_of(self, name)

    def check_samples(self, samples: Sequence[Sample], source: str) -> None:
        bad = []
        for s in samples:
            try:
                why = self.probe(s.params.get("probe")).check_sample(s)
            except ConfigError as e:
                why = str(e)
            if why:
                bad.append(f"{s.sample_id}: {why}")
        if bad:
            raise DataError(f"{source}: {len(bad)} stress samples cannot be trusted: " + "; ".join(bad[:5]))
