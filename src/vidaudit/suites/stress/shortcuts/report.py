"""Shortcut numbers: accuracy per condition and question, CLP beside it (pooled and blank-only), and the
Blank-Avg (First and Last) by blank duration next to the paper's Table 22.

CLP = errors that pick y_LP / errors (Reveal Eq. 1). Errors are every planned trial that is not
correct: failed calls and unparsed answers are errors too (they never pick y_LP), so CLP never rises
by dropping trials; the error count is printed beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vidaudit.sdk import ScoreRecord, Table
from vidaudit.suites.stress.common import (
    CEILING_NOTE,
    REFERENCE_COLUMNS,
    HumanCeiling,
    ProbeReport,
    accuracy_cell,
    accuracy_text,
    group_records,
    model_condition_cells,
    paper_name,
    pct,
    reference_cells,
    with_interval,
)
from vidaudit.suites.stress.shortcuts.questions import CONDITIONS, QUESTIONS

CHANCE = 0.25
#: Reveal Table 22: Blank-Avg (First and Last) accuracy / CLP (%) at 10 s and 45 s of blank video
PAPER_BLANK_AVG: dict[str, dict[float, tuple[float, float]]] = {
    "Gemini 2.5 Pro": {10.0: (9.3, 70.9), 45.0: (1.0, 72.3)},
    "GPT-5-nano": {10.0: (56.8, 73.7), 45.0: (55.8, 72.3)},
    "Qwen2.5-VL-72B": {10.0: (14.9, 71.3), 45.0: (15.7, 74.2)},
    "Qwen2.5-VL-32B": {10.0: (14.2, 73.4), 45.0: (13.0, 73.6)},
    "Qwen2.5-VL-7B": {10.0: (15.6, 70.6), 45.0: (10.4, 71.9)},
    "LLaVA": {10.0: (18.1, 70.8), 45.0: (17.8, 68.6)},
}
#: Reveal §5.4 / D: human accuracy per condition (%), and human CLP
HUMAN_REPORTED = {"blank": 100.0, "reordered": 94.9, "unrelated": 96.1}
HUMAN_CLP_REPORTED = 2.6


def clp_cell(rs: Sequence[ScoreRecord]) -> dict[str, Any]:
    errors = [r for r in rs if r.correct is not True]
    lp = sum(r.metrics.get("picked_kind") == "lp" for r in errors)
    return {"errors": len(errors), "lp_errors": lp, "clp": lp / len(errors) if errors else None}


def _clp_text(c: dict[str, Any]) -> str:
    return "-" if c["clp"] is None else f"{pct(c['clp'])} ({c['lp_errors']}/{c['errors']})"


def _numbers(rs: list[ScoreRecord]) -> dict[str, Any]:
    """One model x condition cell: accuracy and CLP overall, per video condition, per video condition and
    question, and the blank Blank-Avg (First and Last) per blank duration."""
    per: dict[str, Any] = {}
    for (vc, q), sub in group_records(
        rs, lambda r: (r.params.get("video_condition"), r.params.get("question_kind"))
    ).items():
        per[f"{vc}|{q}"] = {"video_condition": vc, "question": q, **accuracy_cell(sub), **clp_cell(sub)}
    blank = [r for r in rs if r.params.get("video_condition") == "blank"]
    blank_avg = {}
    by_duration = group_records(
        [r for r in blank if r.params.get("question_kind") in ("first", "last")], lambda r: r.params.get("blank_s")
    )
    for dur, sub in sorted(by_duration.items(), key=lambda kv: float(kv[0])):  # 5 s before 10 s
        blank_avg[f"{dur:g}"] = {"blank_s": dur, **accuracy_cell(sub), **clp_cell(sub)}
    return {
        "paper_name": paper_name(rs[0].model),
        "overall": {**accuracy_cell(rs), **clp_cell(rs)},
        "by_video_condition": {
            vc: {**accuracy_cell(s), **clp_cell(s)}
            for vc, s in group_records(rs, lambda r: r.params.get("video_condition")).items()
        },
        "cells": per,
        "clp_pooled": clp_cell(rs),
        "clp_blank": clp_cell(blank),
        "blank_avg": blank_avg,
    }


def aggregate(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    return {
        "cells": model_condition_cells(records, _numbers),
        "chance": CHANCE,
        "paper_blank_avg": {k: {f"{d:g}": v for d, v in t.items()} for k, t in PAPER_BLANK_AVG.items()},
        "human_reported": HUMAN_REPORTED,
        "human_clp_reported": HUMAN_CLP_REPORTED,
        "clp_rule": "errors that pick y_LP / all errors (failed and unparsed answers are errors)",
        "human_ceiling": None,
    }


def _tables(res: dict[str, Any], ceiling: HumanCeiling) -> list[Table]:
    rows, clp_rows, blank_rows = [], [], []
    for c in res["cells"].values():
        for vc in CONDITIONS:
            for q in QUESTIONS:
                x = c["cells"].get(f"{vc}|{q}")
                if x is None:
                    continue
                rows.append(
                    [
                        c["model"],
                        c["condition"],
                        vc,
                        q,
                        *with_interval(x),
                        _clp_text(x),
                        *reference_cells(CHANCE, f"{HUMAN_REPORTED[vc]:.1f} (humans)", ceiling, c["condition"]),
                    ]
                )
        clp_rows.append(
            [
                c["model"],
                c["condition"],
                c["role"],
                accuracy_text(c["overall"]),
                _clp_text(c["clp_pooled"]),
                _clp_text(c["clp_blank"]),
                accuracy_text(c["by_video_condition"].get("blank", accuracy_cell([])))
                if "blank" in c["by_video_condition"]
                else "-",
            ]
        )
        paper = PAPER_BLANK_AVG.get(c["paper_name"] or "", {})
        for d, x in c["blank_avg"].items():
            ref = paper.get(float(d))
            blank_rows.append(
                [
                    c["model"],
                    c["condition"],
                    f"{float(d):g}",
                    accuracy_text(x),
                    _clp_text(x),
                    "-" if ref is None else f"{ref[0]:.1f} / {ref[1]:.1f} ({c['paper_name']})",
                ]
            )
    return [
        Table(
            id="stress-shortcuts-accuracy",
            title="Language shortcuts: accuracy (%) per condition and question",
            key_columns=4,
            columns=[
                "model",
                "condition",
                "video",
                "question",
                "accuracy",
                "95% Wilson",
                "CLP",
                *REFERENCE_COLUMNS,
            ],
            rows=rows,
            caption="Accuracy over every planned trial (a failed call is wrong). CLP = errors that pick the "
            "language-prior answer y_LP / all errors, printed beside accuracy. On blank and unrelated "
            "videos the correct option is 'None of the above / Cannot determine from the video'. "
            "'paper reported' is Reveal's human accuracy for the condition (its model table is lost).",
        ),
        Table(
            id="stress-shortcuts-clp",
            title="Cumulative Language Prior (%), pooled and blank-only",
            key_columns=2,
            columns=["model", "condition", "role", "accuracy (all)", "CLP pooled", "CLP blank", "accuracy (blank)"],
            rows=clp_rows,
            caption=f"Reveal reports CLP 56-70% for models and {HUMAN_CLP_REPORTED}% for humans.",
        ),
        Table(
            id="stress-shortcuts-blank-avg",
            title="Blank-Avg (First and Last) by blank duration",
            key_columns=3,
            columns=["model", "condition", "blank (s)", "accuracy", "CLP", "paper accuracy / CLP (Table 22)"],
            rows=blank_rows,
            caption="Table 22 of Reveal reports 10 s and 45 s for the models it names; its humans scored 100% on "
            "blank videos of 5, 10, 45 and 60 s (D.6).",
        ),
    ]


shortcuts_report = ProbeReport(
    "shortcuts",
    aggregate,
    title="Language shortcuts (reordered, blank, unrelated)",
    lede="Procedures whose text implies an order, shown reordered, blank or replaced by an unrelated video. "
    "A model that answers from the language prior picks y_LP; CLP counts how often its errors do.",
    says=("chance 25.0%", "CLP beside every accuracy", CEILING_NOTE),
    tables=_tables,
)
