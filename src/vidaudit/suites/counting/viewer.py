"""How the trace viewer shows a counting trial: N, F, the predicted count, F1 and the event timeline.

The numbers come from the score record (``record.metrics`` holds what
:meth:`vidaudit.suites.counting.scoring.CountingScore.to_dict` produced, ``record.params`` the grid
point); the true events come from the sample's trace. Frames are attached by the report stage.
"""

from __future__ import annotations

import math
from typing import Any

from vidaudit.sdk import (
    DataError,
    EventTimeline,
    Sample,
    ScoreRecord,
    TimelineEvent,
    ViewerColumn,
    ViewerSpec,
    ViewerTrial,
    fmt,
)

#: correct counts whose trace F1 is below this are accidental correctness (paper F.6): shown first
ACCIDENTAL_F1 = 0.8

COUNTING_VIEWER = ViewerSpec(
    group_label="domain",
    columns=[
        ViewerColumn(key="n_events", label="N", numeric=True),
        ViewerColumn(key="frequency_hz", label="F (Hz)", numeric=True),
        ViewerColumn(key="predicted", label="predicted", numeric=True),
        ViewerColumn(key="f1", label="F1", numeric=True),
    ],
)


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _cell(v: Any) -> str | int | float | bool | None:
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    return str(v)


def _true_label(event: Any) -> str:
    label = f"frame {event.frame}"
    if event.state_after is not None:
        label += f", state after: {event.state_after}"
    return label


def _timeline(record: ScoreRecord, sample: Sample, metrics: dict[str, Any]) -> EventTimeline:
    true_events = [TimelineEvent(t=_finite(e.t), label=_true_label(e)) for e in sample.trace.events]
    times = list(metrics.get("reported_times") or [])
    labels = list(metrics.get("reported_labels") or [])
    reported = [
        TimelineEvent(t=_finite(t), label=None if i >= len(labels) or labels[i] is None else str(labels[i]))
        for i, t in enumerate(times)
    ]
    matches = []
    for pair in metrics.get("matches") or []:
        if not (
            isinstance(pair, (list, tuple))
            and len(pair) == 2
            and all(isinstance(i, int) and not isinstance(i, bool) for i in pair)
            and 0 <= pair[0] < len(true_events)
            and 0 <= pair[1] < len(reported)
        ):
            raise DataError(
                f"trial {record.trial_id}: match {pair!r} does not index its true and reported events; "
                "re-score the run (matches are [true_idx, reported_idx] pairs)"
            )
        matches.append((pair[0], pair[1]))
    return EventTimeline(
        duration_s=_finite(sample.video.duration_s),
        true_events=true_events,
        reported_events=reported,
        matches=matches,
        window_s=_finite(metrics.get("delta_s")),
    )


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    """One counting trial for the viewer: columns N, F, predicted, F1; facts; the timeline of events."""
    if record.sample_id != sample.sample_id:
        raise DataError(
            f"trial {record.trial_id} is for sample {record.sample_id!r}, got sample "
            f"{sample.sample_id!r}; pass the record's own sample"
        )
    metrics, params = dict(record.metrics), dict(record.params)
    domain = params.get("domain", metrics.get("domain"))
    n = params.get("n_events", metrics.get("n_events", sample.answer))
    f = params.get("frequency_hz", metrics.get("frequency_hz"))
    predicted = metrics.get("predicted_count")
    if predicted is None and record.parse is not None:
        predicted = record.parse.value
    method = record.parse.method if record.parse is not None else metrics.get("parse_method")
    f1 = _finite(metrics.get("f1"))
    timeline = _timeline(record, sample, metrics)
    k, m, n_true = len(timeline.matches), len(timeline.reported_events), len(timeline.true_events)
    facts = [
        ("answer", fmt(sample.answer)),
        ("predicted", fmt(predicted) + (f" ({method})" if method else "")),
        ("matched K / reported M / true N", f"{k} / {m} / {n_true}"),
        ("P · R · F1", " · ".join(fmt(_finite(metrics.get(x)), 2) for x in ("precision", "recall", "f1"))),
        ("window ±w", f"±{timeline.window_s:.3f} s" if timeline.window_s is not None else fmt(None)),
        ("duration", f"{timeline.duration_s:.2f} s" if timeline.duration_s is not None else fmt(None)),
    ]
    if not metrics.get("trace_available") and record.scored:
        facts.append(("trace", "not scored (the sample's trace does not list its events)"))
    return ViewerTrial.of(
        record,
        raw_text,
        group="" if domain is None else str(domain),
        columns={"n_events": _cell(n), "frequency_hz": _cell(f), "predicted": _cell(predicted), "f1": f1},
        facts=facts,
        timeline=timeline,
        grid_point=[_cell(n), _cell(f)],
        preferred=record.correct is True and f1 is not None and f1 < ACCIDENTAL_F1,
    )
