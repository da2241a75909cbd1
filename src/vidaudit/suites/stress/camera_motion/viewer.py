"""One camera-motion trial in the trace viewer (the columns of the suite's ``STRESS_VIEWER``)."""

from __future__ import annotations

from vidaudit.sdk import Sample, ScoreRecord, ViewerTrial
from vidaudit.suites.stress.viewer import probe_trial


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    p = sample.params
    return probe_trial(
        "camera_motion",
        record,
        sample,
        raw_text,
        kind=p.get("motion"),
        predicted=record.metrics.get("predicted_motion"),
        facts=[
            ("synthesis", str(p.get("synthesis"))),
            ("content motion", str(p.get("content_motion"))),
            ("perturbation", str(p.get("perturbation"))),
        ],
        grid_point=[p.get("motion")],
    )
