"""One cross-frame trial in the trace viewer (the strips shown are added by the report stage)."""

from __future__ import annotations

from vidaudit.sdk import Sample, ScoreRecord, ViewerTrial
from vidaudit.suites.stress.common import options_block
from vidaudit.suites.stress.cross_frame.report import mask_of
from vidaudit.suites.stress.viewer import probe_trial


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    p = sample.params
    mask = mask_of(record.condition)
    return probe_trial(
        "cross_frame",
        record,
        sample,
        raw_text,
        kind=p.get("split"),
        predicted=record.metrics.get("predicted"),
        facts=[
            ("split", f"{p.get('split')} ({p.get('type')})"),
            ("abstention", "yes" if p.get("abstention") else "no"),
            ("input", mask or "raw video"),
            ("question", sample.question),
            ("options", options_block(p.get("options", []))),
            ("source", str(p.get("source"))),
        ],
        grid_point=[p.get("split"), bool(p.get("abstention")), "masked" if mask else "raw"],
    )
