"""What every harness bridge shares: the dataset being bridged, optional libraries, response rows and
their scoring.

A bridge never imports a suite: it looks the suite up by the name the dataset records
(``dataset.json``'s ``suite``, else the samples' ``suite``) and calls the Suite protocol only
(``render_prompt``, ``score`` through :func:`vidaudit.score.stage.record`, ``aggregate`` in the report).
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.hashing import sha256_json
from vidaudit.core.manifest import DATASET, MANIFEST, load_samples
from vidaudit.core.registry import get_suite, missing_extra
from vidaudit.core.types import Condition, Sample
from vidaudit.suites.base import Suite

EXTRA = "interop"
#: statuses a response row may carry (the same as ``responses.jsonl``)
STATUSES = ("ok", "api_error", "refused", "timeout")
#: how many unmatched keys an error message lists before it says "and N more"
MAX_LISTED = 10


def require(module: str, what: str) -> ModuleType:
    """Import an optional library or fail with the one-line ``pip install "vidaudit[interop]"`` message."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is not None and e.name.split(".")[0] == module.split(".")[0]:
            raise missing_extra(what, EXTRA, e.name) from None
        raise


def listed(items: Sequence[Any], limit: int = MAX_LISTED) -> str:
    """``a, b, c`` or ``a, b, c and 7 more``."""
    shown = ", ".join(str(x) for x in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


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
        raise DataError(f"{root / MANIFEST} mixes samples of several suites ({', '.join(names)}); bridge one "
                        "suite's dataset at a time")
    name = str(info.get("suite") or names[0])
    if name != names[0]:
        raise DataError(f"{root / DATASET} says suite {name!r} but its samples are {names[0]!r} samples")
    if info.get("dry_run"):
        raise DataError(f"{root} is a dry run (no videos were rendered); generate the videos first")
    return BridgedData(root=root, samples=samples, info=info, suite=get_suite(name))


def check_videos(data: BridgedData) -> None:
    """Every video exists with the manifest's sha256 (a bridge never ships a file the trace does not describe)."""
    from vidaudit.core.hashing import sha256_file

    for s in data.samples:
        src = data.root / s.video.path
        if not src.is_file():
            raise DataError(f"video for {s.sample_id} is missing: {src}; regenerate the data")
        if s.video.sha256 is not None and sha256_file(src) != s.video.sha256:
            raise DataError(f"{src} does not match the manifest's sha256 for {s.sample_id}: the file changed; "
                            "regenerate it")


def manifest_suite(samples: Mapping[str, Sample], suite: str | None, where: str) -> str:
    """The suite of a manifest's samples, checked against an explicitly named one."""
    names = sorted({s.suite for s in samples.values()})
    if not names:
        raise DataError(f"{where} holds no samples")
    if len(names) > 1:
        raise DataError(f"{where} mixes samples of several suites ({', '.join(names)}); score one suite at a time")
    if suite is not None and suite != names[0]:
        raise ConfigError(f"--suite {suite} does not match the manifest {where}, whose samples are {names[0]!r} "
                          "samples")
    return names[0]


def native_condition(suite: Suite, prompt: str | None) -> Condition:
    """The condition of a harness that receives the video file and samples it itself: a bare ``native``.

    Its id (``native/PROMPT``) says that the backend chose the frame rate, which vidaudit cannot know.
    """
    name = prompt or suite.default_prompt
    suite.check_prompt(name)
    return Condition(prompt=name)


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
    from vidaudit.score.stage import record

    order: dict[str, None] = {}
    numbers: set[str] = set()
    other: set[str] = set()
    for s in samples:
        try:
            text = suite.oracle_answer(s)
        except ConfigError:
            text = ""
        rec = record(suite, s, trial_id="probe", model="probe", role="model", condition=condition.id, status="ok",
                     text=text)
        for k, v in rec.metrics.items():
            order.setdefault(k)
            if isinstance(v, bool | int | float):
                numbers.add(k)
            elif v is not None:
                other.add(k)
    return [k for k in order if k in numbers and k not in other and k != "correct"]


# --------------------------------------------------------------------------- rows of responses


@dataclass(frozen=True)
class ResponseRow:
    """One response read from a harness log: the row ``score-responses`` takes, plus where it was read.

    ``frame_times`` are the presentation times of the frames actually sent, when the harness recorded
    them (vidaudit's own inspect_ai tasks do for frame conditions); None for native video.
    """

    sample_id: str
    response: str | None
    model: str = "external"
    condition: str = "external"
    status: str = "ok"
    where: str = ""
    frame_times: tuple[float, ...] | None = None
    frame_indices: tuple[int, ...] | None = None

    def as_json(self) -> dict[str, Any]:
        """The ``responses.jsonl`` line of this row."""
        return {"sample_id": self.sample_id, "response": self.response, "model": self.model,
                "condition": self.condition, "status": self.status}


def external_trial_id(sample_id: str, model: str, condition: str) -> str:
    """The trial id ``score-responses`` gives a response line (so both paths name a trial alike)."""
    return sha256_json(["external", sample_id, model, condition])


def score_rows(samples: Mapping[str, Sample], rows: Sequence[ResponseRow], *, suite: str | None = None,
               dedupe: str | None = None, source: Mapping[str, str] | None = None,
               data_dir: Path | None = None) -> Any:
    """Score in-memory response rows exactly as ``score_responses`` scores a ``responses.jsonl``.

    The same checks (known sample, string response, known status, ``ok`` has text, one row per (sample,
    model, condition) unless ``dedupe`` is ``first`` or ``last``) and the same trial ids; frame times,
    where a row has them, reach the suite's scorer as they do in a run. Returns a ``Scored``.
    """
    from vidaudit.score.stage import DEDUPE, Scored, record

    if dedupe is not None and dedupe not in DEDUPE:
        raise ConfigError(f"--dedupe must be first or last, got {dedupe!r}")
    name = manifest_suite(samples, suite, "the manifest")
    s = get_suite(name)
    chosen: dict[tuple[str, str, str], ResponseRow] = {}
    for row in rows:
        where = row.where or row.sample_id
        if row.sample_id not in samples:
            raise DataError(f"{where}: sample_id {row.sample_id!r} is not in the manifest")
        if row.response is not None and not isinstance(row.response, str):
            raise DataError(f"{where}: response must be a string or null, got {type(row.response).__name__}")
        if row.status not in STATUSES:
            raise DataError(f"{where}: status {row.status!r} is not one of {', '.join(STATUSES)}")
        if row.status == "ok" and row.response is None:
            raise DataError(f"{where}: status ok needs a response string")
        key = (row.sample_id, row.model, row.condition)
        if key in chosen and dedupe is None:
            raise DataError(f"{chosen[key].where or row.sample_id} and {where} are both for sample {row.sample_id!r}, "
                            f"model {row.model!r}, condition {row.condition!r} (a log with several epochs or "
                            "repeats?); pass --dedupe first|last to keep one")
        if key not in chosen or dedupe == "last":
            chosen[key] = row
    out = Scored(suite=s, records=[], samples=dict(samples), source=dict(source or {}), data_dir=data_dir)
    for (sid, model, condition), row in chosen.items():
        tid = external_trial_id(sid, model, condition)
        out.records.append(record(s, samples[sid], trial_id=tid, model=model, role="model", condition=condition,
                                  status=row.status, text=row.response,
                                  frame_times=list(row.frame_times) if row.frame_times else None))
        out.raw_text[tid] = row.response
        if row.frame_indices and row.frame_times:
            out.frames[tid] = list(zip(row.frame_indices, row.frame_times, strict=False))
    return out
