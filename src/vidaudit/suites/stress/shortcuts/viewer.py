"""One shortcut trial in the trace viewer (the columns of the suite's ``STRESS_VIEWER``)."""

from __future__ import annotations

from vidaudit.sdk import Sample, ScoreRecord, ViewerTrial
from vidaudit.suites.stress.viewer import probe_trial


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    p = sample.params
    opts = p.get("options") or []
    letters = "ABCD"

    def named(letter: object) -> str:
        if isinstance(letter, str) and letter in letters[: len(opts)]:
            return f"{letter}. {opts[letters.index(letter)]}"
        return str(letter)

    return probe_trial(
        "shortcuts",
        record,
        sample,
        raw_text,
        kind=p.get("video_condition"),
        answer=named(sample.answer),
        predicted=named(record.metrics.get("picked")),
        facts=[
            ("question", str(p.get("question_kind"))),
            ("video", str(p.get("video_condition"))),
            ("y_LP", named(p.get("option_lp"))),
            ("picked", str(record.metrics.get("picked_kind"))),
            ("canonical order", " > ".join(p.get("canonical") or [])),
            ("shown order", " > ".join(p.get("shown") or []) or "none"),
            ("perturbation", str(p.get("perturbation"))),
        ],
        grid_point=[p.get("video_condition"), p.get("question_kind")],
    )
