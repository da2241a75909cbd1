"""The front door for suite authors: everything a suite needs from vidaudit, in one import.

A suite (built in under ``vidaudit/suites/NAME/`` or a plugin of its own) imports vidaudit only from here and
from its own package (``tests/codebase/test_layers.py`` holds the built-in suites to it; docs/design.md, "Adding a
suite", walks through one). The names are defined in the stages below (this module defines nothing); each has
one definition and, for a suite, one path: ``from vidaudit.sdk import Suite, Sample, video_ref``. What is not
here is the stages' own business and may change without notice.

This module sits on its own floor, between ``report`` and ``suites``. It is lazy, so that a suite's imports cost
only what they name: the names are listed once, as the imports below (what type checkers read), and a name is
imported from its module the first time it is asked for (PEP 562's module ``__getattr__``). Importing every
stage up front would add ~0.3 s of CPU to each command that loads one suite (``vidaudit generate counting
--help``: benchmarks/startup.py).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # every name of the front door, where it lives (imported on first use: see __getattr__)
    from vidaudit import __version__
    from vidaudit.core.confine import confined, name_problem
    from vidaudit.core.console import (
        console,
        executor_option,
        friendly_errors,
        parse_list,
        progress_bar,
        ray_address_option,
    )
    from vidaudit.core.contract.profile import AuditPart, PartFigures, ProfileFigure
    from vidaudit.core.contract.records import (
        NEEDS_JUDGE,
        SCORE_SCHEMA_VERSION,
        Counted,
        ParseResult,
        ScoreRecord,
        TrialScore,
        counted,
        unjudged_text,
    )
    from vidaudit.core.contract.report import (
        REPORT_SCHEMA_VERSION,
        EventTimeline,
        Figure,
        GridFigure,
        LineFigure,
        Report,
        Section,
        Series,
        SuiteReport,
        Table,
        TimelineEvent,
        ViewerColumn,
        ViewerFrame,
        ViewerSpec,
        ViewerTrial,
    )
    from vidaudit.core.contract.roles import (
        Audit,
        Baselines,
        Commands,
        Designs,
        ModuleAudit,
        ObservedFrame,
        OnProgress,
        Role,
        SequentialDesign,
        Verification,
        sequential_design,
    )
    from vidaudit.core.contract.suite import (
        AggregateInput,
        PartedSuite,
        Prompt,
        ScoreInput,
        Suite,
        SuiteCapabilities,
        SuiteInfo,
        check_suite,
        source_unit,
        sources_text,
    )
    from vidaudit.core.errors import ConfigError, DataError, VerificationError, VidauditError, check_choice
    from vidaudit.core.fileio import atomic_path, write_json_atomic, write_jsonl_atomic, write_text_atomic
    from vidaudit.core.hashing import canonical_json, rng_from, seed_from, sha256_file, sha256_text
    from vidaudit.core.jobs import PoolFactory, iter_completed, run_jobs
    from vidaudit.core.manifest import (
        MANIFEST,
        dataset_dir,
        existing_samples,
        guard_replace,
        load_samples,
        read_dataset_info,
        write_dataset_info,
        write_manifest,
    )
    from vidaudit.core.pcg64 import Draws
    from vidaudit.core.registry import get_suite
    from vidaudit.core.timeline import Timeline
    from vidaudit.core.types import (
        Condition,
        ErrorKind,
        Event,
        ImagePart,
        ModelSpec,
        Part,
        PerturbationSpec,
        Presentation,
        Request,
        Response,
        Sample,
        TextPart,
        Trace,
        Usage,
        VideoPart,
        VideoRef,
        unvalidated,
    )
    from vidaudit.core.untrusted import distinct_keys, read_json_file
    from vidaudit.core.versions import library_versions
    from vidaudit.models.base import Capabilities, ModelAdapter, ModelCallError, StageCall, combine_stages
    from vidaudit.models.baselines import SampleAnswerer
    from vidaudit.models.factory import make_adapter
    from vidaudit.models.ideal_observer import observed_frames
    from vidaudit.models.pricing import CHARS_PER_TOKEN
    from vidaudit.report.headline import headline_from_records, headline_table
    from vidaudit.report.profile_figures import accuracy, published
    from vidaudit.report.tables import MISSING, dig, flatten_table, fmt, numeric_key
    from vidaudit.run.conditions import parse_condition
    from vidaudit.run.perturbed import plan_chain
    from vidaudit.run.plan import select_frames
    from vidaudit.run.ray_pool import pool_factory
    from vidaudit.run.runconfig import RunConfig
    from vidaudit.run.store.reader import StoreReader
    from vidaudit.score.answers import boxed_spans, parse_agree, parse_count, parse_option, parse_yes_no
    from vidaudit.score.judge import read_verdict
    from vidaudit.score.stage import stage_usage
    from vidaudit.score.stats import (
        MIN_SOURCES_VERDICT,
        ClusteredInterval,
        cluster_wilson_interval,
        paired_bootstrap,
        source_interval,
        wilson_interval,
        wilson_lower,
    )
    from vidaudit.video import draw, synth3d
    from vidaudit.video.decode import iter_constant_rate, iter_frames, iter_frames_reused, iter_selected, read_frames
    from vidaudit.video.display import i420_to_rgb_half
    from vidaudit.video.encode import (
        X264_OPTIONS,
        NalDigest,
        VideoWriter,
        probe_stored,
        stored_nal_digest,
        write_video,
    )
    from vidaudit.video.facts import facts_problems
    from vidaudit.video.frame_cache import FrameCache
    from vidaudit.video.motion import classify_motion
    from vidaudit.video.perturb.base import SourceInfo as PerturbSourceInfo
    from vidaudit.video.perturb.camera import CONTENT_MOTION as CAMERA_CONTENT_MOTION
    from vidaudit.video.perturb.engine import apply as apply_perturbation
    from vidaudit.video.perturb.engine import plan_for as plan_perturbation
    from vidaudit.video.perturb.integration import quadrant_boxes
    from vidaudit.video.perturb.source import IMAGE_SUFFIXES as STILL_IMAGE_SUFFIXES
    from vidaudit.video.perturb.source import open_source as open_perturb_source
    from vidaudit.video.probe import VideoInfo, probe, ref_from, video_ref
    from vidaudit.video.sampling import at_fps, every_frame, uniform_count
    from vidaudit.video.streams import header_size

__all__ = [
    "__version__",
    # the suite protocol, its roles and the lookup (core.contract)
    "AggregateInput",
    "Audit",
    "Baselines",
    "Commands",
    "Designs",
    "ModuleAudit",
    "ObservedFrame",
    "OnProgress",
    "PartedSuite",
    "Prompt",
    "Role",
    "ScoreInput",
    "SequentialDesign",
    "Suite",
    "SuiteCapabilities",
    "SuiteInfo",
    "Verification",
    "check_suite",
    "get_suite",
    "sequential_design",
    "source_unit",
    "sources_text",
    # what score returns and scores.jsonl holds; the one rule for what a figure counts
    "NEEDS_JUDGE",
    "SCORE_SCHEMA_VERSION",
    "Counted",
    "ParseResult",
    "ScoreRecord",
    "TrialScore",
    "counted",
    "unjudged_text",
    # what aggregate and viewer_trial return and report.json holds
    "REPORT_SCHEMA_VERSION",
    "EventTimeline",
    "Figure",
    "GridFigure",
    "LineFigure",
    "Report",
    "Section",
    "Series",
    "SuiteReport",
    "Table",
    "TimelineEvent",
    "ViewerColumn",
    "ViewerFrame",
    "ViewerSpec",
    "ViewerTrial",
    # what a suite gives vidaudit audit, and the figures it is made of
    "AuditPart",
    "PartFigures",
    "ProfileFigure",
    "accuracy",
    "published",
    # records: samples, their videos and ground truth, conditions, requests and responses
    "Condition",
    "ErrorKind",
    "Event",
    "ImagePart",
    "ModelSpec",
    "Part",
    "PerturbationSpec",
    "Presentation",
    "Request",
    "Response",
    "Sample",
    "TextPart",
    "Trace",
    "Usage",
    "VideoPart",
    "VideoRef",
    "unvalidated",
    # errors: a one-line message and exit 2
    "ConfigError",
    "DataError",
    "VerificationError",
    "VidauditError",
    "check_choice",
    # datasets: manifests, dataset.json, atomic files, untrusted input, hashes and seeds
    "Draws",
    "MANIFEST",
    "atomic_path",
    "canonical_json",
    "confined",
    "dataset_dir",
    "distinct_keys",
    "existing_samples",
    "guard_replace",
    "library_versions",
    "load_samples",
    "name_problem",
    "read_dataset_info",
    "read_json_file",
    "rng_from",
    "seed_from",
    "sha256_file",
    "sha256_text",
    "write_dataset_info",
    "write_json_atomic",
    "write_jsonl_atomic",
    "write_manifest",
    "write_text_atomic",
    # per-video jobs (serial, local processes, Ray) and the terminal (progress bars, one-line errors)
    "PoolFactory",
    "console",
    "executor_option",
    "friendly_errors",
    "iter_completed",
    "parse_list",
    "pool_factory",
    "progress_bar",
    "ray_address_option",
    "run_jobs",
    # video: reading, writing, the player's clock, frame sampling, drawing, motion, 3-D scenes
    "FrameCache",
    "NalDigest",
    "Timeline",
    "VideoInfo",
    "VideoWriter",
    "X264_OPTIONS",
    "at_fps",
    "classify_motion",
    "draw",
    "every_frame",
    "facts_problems",
    "header_size",
    "i420_to_rgb_half",
    "iter_constant_rate",
    "iter_frames",
    "iter_frames_reused",
    "iter_selected",
    "probe",
    "probe_stored",
    "read_frames",
    "ref_from",
    "stored_nal_digest",
    "synth3d",
    "uniform_count",
    "video_ref",
    "write_video",
    # perturbations (video.perturb): render one, plan one from a source's facts, the sources they read
    "CAMERA_CONTENT_MOTION",
    "PerturbSourceInfo",
    "STILL_IMAGE_SUFFIXES",
    "apply_perturbation",
    "open_perturb_source",
    "plan_perturbation",
    "quadrant_boxes",
    # models a suite builds its own on (references, observers, composites)
    "CHARS_PER_TOKEN",
    "Capabilities",
    "ModelAdapter",
    "ModelCallError",
    "SampleAnswerer",
    "StageCall",
    "combine_stages",
    "make_adapter",
    "observed_frames",
    # a run: its conditions and frames, perturbed inputs, and what a suite reads back from a run it generates from
    "RunConfig",
    "StoreReader",
    "parse_condition",
    "plan_chain",
    "select_frames",
    "stage_usage",
    # answers and statistics
    "MIN_SOURCES_VERDICT",
    "ClusteredInterval",
    "boxed_spans",
    "cluster_wilson_interval",
    "paired_bootstrap",
    "source_interval",
    "parse_agree",
    "parse_count",
    "parse_option",
    "parse_yes_no",
    "read_verdict",
    "wilson_interval",
    "wilson_lower",
    # report building blocks: tables and the headline
    "MISSING",
    "dig",
    "flatten_table",
    "fmt",
    "headline_from_records",
    "headline_table",
    "numeric_key",
]


def _sources() -> dict[str, tuple[str, str]]:
    """Each name of ``__all__`` -> the module it is imported from and its name there (``import x as name``: a
    name that says what it is in this flat namespace), read from this file's ``TYPE_CHECKING`` block."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return {
        a.asname or a.name: (n.module or "", a.name)
        for n in block.body
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }


_SOURCES = _sources()


def __getattr__(name: str) -> Any:
    """``name`` from the module it lives in (a submodule such as ``draw`` imported as one), kept here after."""
    found = _SOURCES.get(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    source, defined = found
    module = importlib.import_module(source)
    value = getattr(module, defined) if hasattr(module, defined) else importlib.import_module(f"{source}.{defined}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
