"""One expectation trial in the trace viewer: the key (or the ground truth a judge read) beside the answer."""

from __future__ import annotations

from vidaudit.sdk import Sample, ScoreRecord, ViewerTrial
from vidaudit.suites.stress.common import LETTERS
from vidaudit.suites.stress.viewer import probe_trial


def viewer_trial(record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
    p = sample.params
    opts = p.get("options") or []

    def named(letter: object) -> str:
        if isinstance(letter, str) and letter in LETTERS[: len(opts)]:
            return f"{letter}. {opts[LETTERS.index(letter)]}"
        return str(letter)

    task = str(p.get("task"))
    facts = [
        ("task", task),
        ("procedure", str(p.get("procedure"))),
        ("shown order", " > ".join(p.get("shown") or [])),
        ("perturbation", str(p.get("perturbation"))),
    ]
    if p.get("direction"):
        facts.append(("clip", str(p["direction"])))
    if p.get("missing_action"):
        facts += [
            ("GT_VISIBLE_SUMMARY", str(p.get("visible_summary"))),
            ("GT_MISSING_ACTION", str(p["missing_action"])),
        ]
    if p.get("anomaly"):
        facts += [
            ("anomaly", f"{p['anomaly']} ({p.get('anomaly_kind')})"),
            ("descriptor", str(p.get("descriptor"))),
            ("answer layout followed", str(record.metrics.get("layout_ok"))),
        ]
    if record.metrics.get("judge"):
        facts.append(
            (
                "judge",
                str(record.metrics["judge"])
                + (f": {record.metrics['judge_why']}" if record.metrics.get("judge_why") else ""),
            )
        )
    predicted = named(record.metrics.get("picked")) if opts else str(record.metrics.get("verdict", "-"))
    return probe_trial(
        "expectation",
        record,
        sample,
        raw_text,
        kind=task,
        predicted=predicted,
        facts=facts,
        answer=named(sample.answer) if opts else None,
        grid_point=[task, p.get("anomaly") or p.get("direction")],
    )
