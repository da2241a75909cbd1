"""The condition language: ``frames@8``, ``native@all``, ``keyframes@4+jitter``, ... with an optional
``|perturbation(args)`` chain, parsed into a ``Condition`` (see docs/running-models.md, "Conditions")."""

from __future__ import annotations

import re
from typing import Any

import yaml

from vidaudit.core.errors import ConfigError, validation_message
from vidaudit.core.types import Condition, PerturbationSpec, Presentation
from vidaudit.video.perturb.registry import resolve

_NUM = r"\d+(?:\.\d+)?"
_COND = re.compile(
    rf"^(?:native(?:@(?P<nat>all|{_NUM}))?|frames(?:@(?P<fps>{_NUM})|#(?P<count>\d+))"
    rf"|keyframes(?:\+-(?P<off>{_NUM})s?)?)$"
)
CONDITION_FORMS = (
    "native, native@K, native@all, frames@K, frames#K, keyframes or keyframes+-Ss, each optionally "
    "followed by perturbations +OP or +OP(KEY=VALUE,...), e.g. frames@24+strip_mask(S=128,k=4)"
)
_PERTURBATION = re.compile(r"^(?P<name>[a-z][a-z0-9_]*)(?:\((?P<args>[^()]*)\))?$")


def _perturbation_value(raw: str) -> Any:
    if raw in ("None", "null"):
        return None
    if raw in ("True", "False"):
        return raw == "True"
    try:
        v = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    return v if isinstance(v, (int, float, str, bool)) or v is None else raw


def parse_perturbation(text: str) -> PerturbationSpec:
    """``OP`` or ``OP(KEY=VALUE,...)`` (the form ``PerturbationSpec.id`` writes), checked against the op's
    parameters; the spec keeps the parameters as written (defaults are filled in where it is hashed)."""
    m = _PERTURBATION.match(text.strip())
    if not m:
        raise ConfigError(
            f"cannot read perturbation {text!r}; write OP or OP(KEY=VALUE,...), e.g. strip_mask(S=128,v=24,k=4)"
        )
    params: dict[str, Any] = {}
    for pair in filter(None, (x.strip() for x in (m.group("args") or "").split(","))):
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"perturbation {text!r}: {pair!r} is not KEY=VALUE")
        params[key.strip()] = _perturbation_value(raw.strip())
    spec = PerturbationSpec(name=m.group("name"), params=params)
    resolve(spec)  # unknown op or parameter, or a value out of range: the op's own ConfigError
    return spec


def parse_condition(text: str, prompt: str, timestamps: bool = True) -> Condition:
    """A condition from its written form (see ``CONDITION_FORMS``) plus a prompt name and the timestamps flag."""
    base, *perturbed = re.split(r"\+(?=[a-z])", text.strip())
    specs = tuple(parse_perturbation(p) for p in perturbed)
    m = _COND.match(base)
    if not m:
        raise ConfigError(f"cannot read condition {text!r}; write {CONDITION_FORMS}")
    head = base.split("@")[0].split("#")[0].split("+")[0]
    kw: dict[str, Any] = {
        "presentation": Presentation(head),
        "prompt": prompt,
        "timestamps": timestamps,
        "perturbations": specs,
    }
    if m.group("nat") == "all":
        kw["all_frames"] = True
    elif m.group("nat"):
        kw["fps"] = float(m.group("nat"))
    if m.group("fps"):
        kw["fps"] = float(m.group("fps"))
    if m.group("count"):
        kw["n_frames"] = int(m.group("count"))
    if m.group("off"):
        kw["keyframe_offset_s"] = float(m.group("off"))
    try:
        return Condition(**kw)
    except ValueError as e:  # a pydantic ValidationError too: its first problem, in one line
        raise ConfigError(f"condition {text!r}: {validation_message(e)}; write {CONDITION_FORMS}") from None
