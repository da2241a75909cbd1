"""Camera-motion numbers: accuracy over planned trials (EM: errors are wrong) with Wilson intervals,
per direction, per synthesis (2d / 3d), and the confusion counts (rows: true direction; columns: predicted, or unparsed / error)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vidaudit.sdk import ScoreRecord
from vidaudit.suites.stress.camera_motion.options import CHANCE, DIRECTIONS, PAPER_REPORTED, paper_name
from vidaudit.suites.stress.common import accuracy_cell as _cell
from vidaudit.suites.stress.common import model_condition_cells

UNPARSED = "unparsed"
ERROR = "error"
PREDICTED_COLUMNS = (*DIRECTIONS, UNPARSED, ERROR)


def predicted_of(r: ScoreRecord) -> str:
    if r.status != "ok":
        return ERROR
    m = r.metrics.get("predicted_motion")
    return m if m in DIRECTIONS else UNPARSED


def _numbers(rs: list[ScoreRecord]) -> dict[str, Any]:
    """One model x condition cell: accuracy, per direction, per synthesis, and the confusion counts."""
    confusion = {d: dict.fromkeys(PREDICTED_COLUMNS, 0) for d in DIRECTIONS}
    for r in rs:
        true = r.params.get("motion")
        if true in confusion:
            confusion[true][predicted_of(r)] += 1
    return {
        **_cell(rs),
        "paper_name": paper_name(rs[0].model),
        "per_direction": {d: _cell([r for r in rs if r.params.get("motion") == d]) for d in DIRECTIONS},
        "per_synthesis": {
            syn: _cell([r for r in rs if r.params.get("synthesis") == syn])
            for syn in sorted({str(r.params.get("synthesis")) for r in rs})
        },
        "confusion": confusion,
    }


def aggregate_camera(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    """``{"cells": {"MODEL|CONDITION": {...}}, "chance": 1/6, "paper_reported": {...}}`` for camera_motion."""
    return {
        "cells": model_condition_cells([r for r in records if r.params.get("probe") == "camera_motion"], _numbers),
        "chance": CHANCE,
        "paper_reported": dict(PAPER_REPORTED),
        "human_ceiling": None,
        "directions": list(DIRECTIONS),
    }
