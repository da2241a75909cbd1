"""What every harness bridge shares: the dataset being bridged, optional libraries, and what a log reader found
(``ImportedLog``).

A bridge never imports a suite: it looks the suite up by the name the dataset records
(``dataset.json``'s ``suite``, else the samples' ``suite``) and calls the Suite protocol only
(``render_prompt``, ``score`` through :func:`vidaudit.score.stage.record`, ``aggregate`` in the report).
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from vidaudit.core.contract.roles import Baselines
from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import DATASET, MANIFEST, external_videos_allowed, load_samples
from vidaudit.core.registry import get_suite, missing_extra
from vidaudit.core.types import Condition, Sample
from vidaudit.score.stage import ResponseRow, record
from vidaudit.video.facts import resolve_video

EXTRA = "interop"


def require(module: str, what: str) -> ModuleType:
    """Import an optional library or fail with the one-line ``pip install "vidaudit[interop]"`` message."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is not None and e.name.split(".")[0] == module.split(".")[0]:
            raise missing_extra(what, EXTRA, e.name) from None
        raise


# --------------------------------------------------------------------------- the dataset


@dataclass(frozen=True)
class BridgedData:
    """A dataset written by ``vidaudit generate`` (or an importer such as RepCount's), ready to bridge."""

    root: Path
    samples: list[Sample]
    info: dict[str, Any]
    suite: Suite

    @property
    def by_id(self) -> dict[str, Sample]:
        return {s.sample_id: s for s in self.samples}


def load_data(data: str | Path) -> BridgedData:
    """The dataset at ``data`` (a directory or its ``manifest.jsonl``) and the suite it belongs to."""
    p = Path(data)
    root = p.parent if p.is_file() else p
    samples = load_samples(root if p.is_dir() else p)
    if not samples:
        raise DataError(f"{root / MANIFEST} holds no samples: nothing to bridge")
    info: dict[str, Any] = {}
    if (root / DATASET).is_file():
        info = json.loads((root / DATASET).read_text(encoding="utf-8"))
    names = sorted({s.suite for s in samples})
    if len(names) > 1:
        raise DataError(
            f"{root / MANIFEST} mixes samples of several suites ({', '.join(names)}); bridge one "
            "suite's dataset at a time"
        )
    name = str(info.get("suite") or names[0])
    if name != names[0]:
        raise DataError(f"{root / DATASET} says suite {name!r} but its samples are {names[0]!r} samples")
    if info.get("dry_run"):
        raise DataError(f"{root} is a dry run (no videos were rendered); generate the videos first")
    return BridgedData(root=root, samples=samples, info=info, suite=get_suite(name))


def check_videos(data: BridgedData) -> None:
    """Every video exists with the manifest's sha256 (a bridge never ships a file the trace does not describe)."""
    external = external_videos_allowed(data.root)
    for s in data.samples:
        src = resolve_video(data.root, s.video.path, allow_external=external, who=s.sample_id)
        if not src.is_file():
            raise DataError(f"video for {s.sample_id} is missing: {src}; regenerate the data")
        if s.video.sha256 is not None and sha256_file(src) != s.video.sha256:
            raise DataError(
                f"{src} does not match the manifest's sha256 for {s.sample_id}: the file changed; regenerate it"
            )


def native_condition(suite: Suite, prompt: str | None) -> Condition:
    """The condition of a harness that receives the video file and samples it itself: a bare ``native``.

    Its id (``native/PROMPT``) says that the backend chose the frame rate, which vidaudit cannot know.
    """
    name = prompt or suite.default_prompt
    suite.check_prompt(name)
    return Condition(prompt=name)


# --------------------------------------------------------------------------- inspect_ai outputs


def inspect_output_status(output: Any) -> str:
    """The status of an inspect_ai ``ModelOutput``, as a vidaudit adapter reads its finish reason: a content
    filter is a refusal, an output budget spent before any answer text (``max_tokens`` with an empty completion:
    a reasoning model that thought to the limit) is ``truncated``, never an empty (wrong) answer."""
    if output is None:
        return "ok"
    reason = getattr(output, "stop_reason", None)
    if reason == "content_filter":
        return "refused"
    if reason == "max_tokens" and not (output.completion or "").strip():
        return "truncated"
    return "ok"


# --------------------------------------------------------------------------- metrics as plain numbers


def scalar_metrics(metrics: Mapping[str, Any]) -> dict[str, float | None]:
    """The per-trial metrics that are numbers (bools as 0/1; None kept): what a harness can average.

    Lists, dicts and strings (matches, taxonomy, parse method) stay in the full record.
    """
    out: dict[str, float | None] = {}
    for k, v in metrics.items():
        if isinstance(v, bool):
            out[k] = 1.0 if v else 0.0
        elif isinstance(v, int | float):
            out[k] = float(v) if math.isfinite(v) else None
        elif v is None:
            out[k] = None
    return out


def scalar_metric_names(suite: Suite, samples: Iterable[Sample], condition: Condition) -> list[str]:
    """The names of a suite's scalar metrics, found by scoring answers offline (the oracle's where the suite
    has one, else an empty answer): every key that is a number for at least one sample."""
    order: dict[str, None] = {}
    numbers: set[str] = set()
    other: set[str] = set()
    for s in samples:
        try:
            text = Baselines.of(suite).oracle_answer(s)
        except ConfigError:
            text = ""
        rec = record(
            suite, s, trial_id="probe", model="probe", role="model", condition=condition.id, status="ok", text=text
        )
        for k, v in rec.metrics.items():
            order.setdefault(k)
            if isinstance(v, bool | int | float):
                numbers.add(k)
            elif v is not None:
                other.add(k)
    return [k for k in order if k in numbers and k not in other and k != "correct"]


# --------------------------------------------------------------------------- rows of responses


@dataclass(frozen=True)
class ImportedLog:
    """What a reader found in a log."""

    harness: str
    path: Path
    rows: list[ResponseRow]
    suites: set[str]
    key: str
    source: dict[str, str] = field(default_factory=dict)
    #: a name the log gives its dataset, ``SUITE`` or ``SUITE_<variant>`` (VLMEvalKit's ``vidaudit_<named>``)
    named: str | None = None

    def names_other_suite(self, suite: str) -> list[str]:
        """The suites the log names that are not ``suite``."""
        other = sorted(self.suites - {suite})
        if self.named is not None and not (self.named == suite or self.named.startswith(suite + "_")):
            other.append(f"{self.named} (its dataset name vidaudit_{self.named})")
        return other
