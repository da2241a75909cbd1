"""One shortcut trial in the trace viewer (the columns of the suite's ``STRESS_VIEWER``)."""

from __future__ import annotations

from vidaudit.sdk import Sample, ScoreRecord, ViewerTrial


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    p = sample.params
    opts = p.get("options") or []
    letters = "ABCD"

    def named(letter: object) -> str:
        if isinstance(letter, str) and letter in letters[: len(opts)]:
            return f"{letter}. {opts[letters.index(letter)]}"
        return str(letter)

    return ViewerTrial(trial_id=record.trial_id, sample_id=record.sample_id, model=record.model,
                       condition=record.condition, group=f"shortcuts: {p.get('video_condition')}",
                       status=record.status, correct=record.correct,
                       columns={"answer": named(sample.answer), "predicted": named(record.metrics.get("picked")),
                                "parse": record.parse.method if record.parse else None},
                       facts=[("probe", "shortcuts"), ("question", str(p.get("question_kind"))),
                              ("video", str(p.get("video_condition"))), ("y_LP", named(p.get("option_lp"))),
                              ("picked", str(record.metrics.get("picked_kind"))),
                              ("canonical order", " > ".join(p.get("canonical") or [])),
                              ("shown order", " > ".join(p.get("shown") or []) or "none"),
                              ("perturbation", str(p.get("perturbation")))],
                       raw_text=raw_text or "", grid_point=[p.get("video_condition"), p.get("question_kind")])
