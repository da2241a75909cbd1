"""Lane-change numbers and tables: F1 with lane change as the positive class, and its confusion counts.

Over every *planned* trial: a failed call or an unparsed answer is wrong, so it is a false negative on a
lane-change clip and a false positive on a no-change clip (the counts of each are shown beside). Chance
is a fair coin per clip, whose expected F1 is ``p / (p + 1/2)`` at the set's lane-change share ``p``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vidaudit.sdk import AggregateInput, ScoreRecord, SuiteReport, Table
from vidaudit.suites.stress.common import (
    HumanCeiling,
    accuracy_cell,
    by_model_condition,
    pct,
    probe_report,
)
from vidaudit.suites.stress.lane_change.options import HUMAN_REPORTED, PAPER_F1_RANGE, POSITIVE


def predicted_positive(r: ScoreRecord) -> bool:
    """True when the trial answered "lane change"; a failure or unparsed answer is the wrong answer."""
    if r.status == "ok" and r.metrics.get("predicted_label") in ("lane_change", "no_change"):
        return r.metrics["predicted_label"] == POSITIVE
    return r.params.get("label") != POSITIVE


def f1_cell(rs: Sequence[ScoreRecord]) -> dict[str, Any]:
    tp = fn = fp = tn = 0
    for r in rs:
        pos, said = r.params.get("label") == POSITIVE, predicted_positive(r)
        tp += pos and said
        fn += pos and not said
        fp += (not pos) and said
        tn += (not pos) and not said
    n_pos = tp + fn
    p = n_pos / len(rs) if rs else None
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / n_pos if n_pos else None
    f1 = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else None
    return {
        "tp": tp,
        "fn": fn,
        "fp": fp,
        "tn": tn,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "positive_share": p,
        "chance_f1": p / (p + 0.5) if p else None,
        "n_unparsed": sum(r.status == "ok" and r.metrics.get("predicted_label") is None for r in rs),
        "n_error": sum(r.status != "ok" for r in rs),
    }


def aggregate_lane(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    cells = {}
    for (model, cond), rs in by_model_condition(records).items():
        cell = {"model": model, "condition": cond, "role": rs[0].model_role, **accuracy_cell(rs), **f1_cell(rs)}
        cells[f"{model}|{cond}"] = cell
    return {
        "cells": cells,
        "positive": POSITIVE,
        "paper_f1_range": list(PAPER_F1_RANGE),
        "human_reported": HUMAN_REPORTED,
        "human_ceiling": None,
    }


def lane_report(inputs: AggregateInput) -> SuiteReport:
    ceiling = HumanCeiling.of("lane_change", inputs.human)
    res = aggregate_lane(inputs.records)
    rows = []
    for c in res["cells"].values():
        rows.append(
            [
                c["model"],
                c["condition"],
                c["role"],
                str(c["n_planned"]),
                str(c["tp"]),
                str(c["fn"]),
                str(c["fp"]),
                str(c["tn"]),
                pct(c["precision"]),
                pct(c["recall"]),
                pct(c["f1"]),
                pct(c["accuracy"]),
                f"{c['n_unparsed']}/{c['n_error']}",
                pct(c["chance_f1"]),
                f"{PAPER_F1_RANGE[0]:.0f}-{PAPER_F1_RANGE[1]:.0f} (models)",
                ceiling.text(c["condition"]),
            ]
        )
    table = Table(
        id="stress-lane-f1",
        title="Lane change: F1 with lane change positive (%)",
        key_columns=2,
        columns=[
            "model",
            "condition",
            "role",
            "planned",
            "TP",
            "FN",
            "FP",
            "TN",
            "precision",
            "recall",
            "F1",
            "accuracy",
            "unparsed/error",
            "chance F1",
            "paper reported F1",
            "human ceiling",
        ],
        rows=rows,
        caption="Over every planned trial: a failed call or an unparsed answer is wrong (FN on a lane "
        "change, FP on no change). Chance F1 is a fair coin's expected F1 at this set's lane-change "
        "share. Paper: models 14-31% F1, mostly false negatives, on Kaggle driving clips (not these); "
        f"humans {HUMAN_REPORTED:.0f}% on 50 balanced clips.",
    )
    return probe_report(
        "lane_change",
        res,
        [f"lane_change: {len(rows)} model x condition cells; " + ceiling.note()],
        title="Lane change",
        lede="Does the vehicle change lanes in this clip? A user's annotated "
        "driving clips; F1 with lane change as the positive class.",
        tables=lambda: [table],
    )
