"""Lane-change numbers and tables: F1 with lane change as the positive class, and its confusion counts.

Over every *planned* trial: a failed call or an unparsed answer is wrong, so it is a false negative on a
lane-change clip and a false positive on a no-change clip (the counts of each are shown beside). Chance
is a fair coin per clip, whose expected F1 is ``p / (p + 1/2)`` at the set's lane-change share ``p``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vidaudit.sdk import ScoreRecord, Table
from vidaudit.suites.stress.common import (
    HumanCeiling,
    ProbeReport,
    accuracy_cell,
    model_condition_cells,
    pct,
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
    return {
        "cells": model_condition_cells(records, lambda rs: {**accuracy_cell(rs), **f1_cell(rs)}),
        "positive": POSITIVE,
        "paper_f1_range": list(PAPER_F1_RANGE),
        "human_reported": HUMAN_REPORTED,
        "human_ceiling": None,
    }


#: the table's count columns and rate columns: header -> key of the cell (counts as numbers, rates in percent)
COUNT_COLUMNS = {"planned": "n_planned", "TP": "tp", "FN": "fn", "FP": "fp", "TN": "tn"}
RATE_COLUMNS = {"precision": "precision", "recall": "recall", "F1": "f1", "accuracy": "accuracy"}


def _f1_table(res: dict[str, Any], ceiling: HumanCeiling) -> Table:
    rows = [
        [
            c["model"],
            c["condition"],
            c["role"],
            *(str(c[k]) for k in COUNT_COLUMNS.values()),
            *(pct(c[k]) for k in RATE_COLUMNS.values()),
            f"{c['n_unparsed']}/{c['n_error']}",
            pct(c["chance_f1"]),
            f"{PAPER_F1_RANGE[0]:.0f}-{PAPER_F1_RANGE[1]:.0f} (models)",
            ceiling.text(c["condition"]),
        ]
        for c in res["cells"].values()
    ]
    return Table(
        id="stress-lane-f1",
        title="Lane change: F1 with lane change positive (%)",
        key_columns=2,
        columns=[
            "model",
            "condition",
            "role",
            *COUNT_COLUMNS,
            *RATE_COLUMNS,
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


lane_report = ProbeReport(
    "lane_change",
    aggregate_lane,
    title="Lane change",
    lede="Does the vehicle change lanes in this clip? A user's annotated "
    "driving clips; F1 with lane change as the positive class.",
    tables=lambda res, ceiling: [_f1_table(res, ceiling)],
)
