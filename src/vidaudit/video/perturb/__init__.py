"""Perturbations of any video: registered, pure functions of (source, parameters, seed).

Each writes new frames plus machine-readable metadata of exactly what it did (``DST.json``: op, params with
defaults filled in, seed, source sha256, fps and frame count read back from the file, and the op's
frame-by-frame map). See ``docs/perturbations.md`` for every op.

- ``apply(source, spec, out, seed=, second_source=)``: write ``out`` and its JSON atomically.
- ``cached(source, source_sha256, spec, seed, cache_dir)``: the same, content-addressed.
- ``preview(source, spec, seed=)``: the metadata without rendering.
- ``check_strip_coverage(meta, sent_indices)``: problems with the frames a sampler would send.
- ``perturb_command(...)``: the ``vidaudit perturb`` command.
"""

from vidaudit.video.perturb.base import Plan, SourceInfo
from vidaudit.video.perturb.cache import cache_paths, cached, cached_chain, lookup
from vidaudit.video.perturb.camera import CONTENT_MOTION
from vidaudit.video.perturb.cli import ops_help, parse_sets, perturb_command, summary_lines
from vidaudit.video.perturb.engine import (
                                           ENGINE_VERSION,
                                           PerturbMeta,
                                           PerturbResult,
                                           apply,
                                           cache_key,
                                           meta_json,
                                           plan_for,
                                           preview,
)
from vidaudit.video.perturb.integration import check_strip_coverage, quadrant_boxes
from vidaudit.video.perturb.registry import canonical_spec, describe_params, get_op, op_names, resolve
from vidaudit.video.perturb.source import IMAGE_SUFFIXES, open_source

__all__ = [
    "CONTENT_MOTION", "ENGINE_VERSION", "IMAGE_SUFFIXES", "PerturbMeta", "PerturbResult", "Plan", "SourceInfo", "apply",
    "cache_key", "cache_paths", "cached", "cached_chain", "canonical_spec", "check_strip_coverage", "describe_params",
    "get_op", "lookup", "meta_json", "op_names", "open_source", "ops_help", "parse_sets", "plan_for",
    "perturb_command", "preview", "quadrant_boxes", "resolve", "summary_lines",
]
