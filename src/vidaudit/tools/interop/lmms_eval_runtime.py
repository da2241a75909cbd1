"""What an exported lmms-eval task calls while lmms-eval runs it (``TASKDIR/utils.py`` re-exports these).

lmms-eval passes each document (one line of ``TASKDIR/docs.jsonl``) to these hooks. ``process_results``
scores the response with the suite's own scorer, through :func:`vidaudit.score.stage.record`, against
the sample in the dataset's manifest, so lmms-eval's aggregate numbers are vidaudit's metrics. Besides
the averaged metrics (``vidaudit_correct`` and the suite's scalar metrics), it returns four keys that
are not in the task's ``metric_list``: lmms-eval skips them when it aggregates and writes them into
every ``--log_samples`` row, which is how ``score-responses --from lmms-eval`` finds the sample, suite,
condition and row format again (``vidaudit_sample_id``, ``vidaudit_suite``, ``vidaudit_condition``,
``vidaudit_format``), plus the full ``vidaudit_record``.

This module imports neither lmms-eval nor torch: the hooks are plain functions of JSON documents.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite
from vidaudit.score.stage import external_trial_id, record
from vidaudit.tools.interop.common import scalar_metrics

#: the version of the row format written into each logged sample (``vidaudit_format``)
ROW_FORMAT = 1
#: the model label of the record computed inside lmms-eval (it does not tell the hooks its model)
RUNTIME_MODEL = "lmms-eval"


@functools.lru_cache(maxsize=8)
def _samples(manifest: str) -> dict[str, Any]:
    return {s.sample_id: s for s in load_samples(manifest)}


@functools.lru_cache(maxsize=8)
def _suite(name: str) -> Any:
    return get_suite(name)


def doc_to_visual(doc: dict[str, Any]) -> list[str]:
    """The video file itself (lmms-eval's model samples its frames)."""
    return [doc["video"]]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The suite's prompt exactly as vidaudit renders it (pre/post prompts are not applied: they would change
    the text the trial is scored as)."""
    return str(doc["prompt"])


def doc_to_target(doc: dict[str, Any]) -> str:
    return str(doc["target"])


def score_doc(doc: dict[str, Any], text: str) -> Any:
    """The ScoreRecord of one response to one document."""
    sample = _samples(doc["manifest"]).get(doc["sample_id"])
    if sample is None:
        raise DataError(
            f"sample {doc['sample_id']!r} of this lmms-eval task is not in {doc['manifest']}; re-export "
            "the task from the dataset it should run on"
        )
    if doc.get("video_sha256") and sample.video.sha256 != doc["video_sha256"]:
        raise DataError(
            f"sample {doc['sample_id']!r} has a different video in {doc['manifest']} than when this task "
            "was exported; re-export the task (vidaudit export lmms-eval)"
        )
    return record(
        _suite(doc["suite"]),
        sample,
        trial_id=external_trial_id(sample.sample_id, RUNTIME_MODEL, doc["condition"]),
        model=RUNTIME_MODEL,
        role="model",
        condition=doc["condition"],
        status="ok",
        text=text,
    )


def process_results(doc: dict[str, Any], results: Sequence[Any], metrics: Sequence[str]) -> dict[str, Any]:
    """lmms-eval's per-document hook: vidaudit's metrics of the (single) response."""
    text = results[0] if results else ""
    if isinstance(text, list | tuple):  # some lmms-eval models wrap each response once more
        text = text[0] if text else ""
    rec = score_doc(doc, text if isinstance(text, str) else str(text))
    values = scalar_metrics(rec.metrics)
    out: dict[str, Any] = {"vidaudit_correct": 1.0 if rec.correct else 0.0}
    out.update({f"vidaudit_{m}": values.get(m) for m in metrics})
    out.update(
        {
            "vidaudit_format": ROW_FORMAT,
            "vidaudit_sample_id": rec.sample_id,
            "vidaudit_suite": rec.suite,
            "vidaudit_condition": rec.condition,
            "vidaudit_record": rec.model_dump(mode="json"),
        }
    )
    return out


def mean_defined(items: Sequence[Any]) -> float:
    """The mean over the documents where a metric is defined (trace ratios are undefined when N = 0); NaN
    when it is defined for none."""
    vals = [float(x) for x in items if isinstance(x, int | float) and not (isinstance(x, float) and math.isnan(x))]
    return sum(vals) / len(vals) if vals else math.nan
