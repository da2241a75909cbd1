"""Camera-motion numbers: accuracy over planned trials (EM: errors are wrong) with Wilson intervals,
per direction, per synthesis (2d / 3d), and the confusion counts (rows: true direction; columns: predicted, or unparsed / error)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vidaudit.sdk import ScoreRecord
from vidaudit.suites.stress.camera_motion.options import CHANCE, DIRECTIONS, PAPER_REPORTED, paper_name
from vidaudit.suites.stress.common import accuracy_cell as _cell
from vidaudit.suites.stress.common import by_model_condition

UNPARSED = "unparsed"
ERROR = "error"
PREDICTED_COLUMNS = (*DIRECTIONS, UNPARSED, ERROR)


def predicted_of(r: ScoreRecord) -> str:
    if r.status != "ok":
        return ERROR
    m = r.metrics.get("predicted_motion")
    return m if m in DIRECTIONS else UNPARSED


def aggregate_camera(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    """``{"cells": {"MODEL|CONDITION": {...}}, "chance": 1/6, "paper_reported": {...}}`` for camera_motion."""
    recs = [r for r in records if r.params.get("probe") == "camera_motion"]
    cells: dict[str, Any] = {}
    for (model, cond), rs in by_model_condition(recs).items():
        cell = _cell(rs)
        cell.update({"model": model, "condition": cond, "role": rs[0].model_role, "paper_name": paper_name(model)})
        cell["per_direction"] = {d: _cell([r for r in rs if r.params.get("motion") == d]) for d in DIRECTIONS}
        cell["per_synthesis"] = {
            syn: _cell([r for r in rs if r.params.get("synthesis") == syn])
            for syn in sorted({str(r.params.get("synthesis")) for r in rs})
        }
        confusion = {d: dict.fromkeys(PREDICTED_COLUMNS, 0) for d in DIRECTIONS}
        for r in rs:
            true = r.params.get("motion")
            if true in confusion:
                confusion[true][predicted_of(r)] += 1
        cell["confusion"] = confusion
        cells[f"{model}|{cond}"] = cell
    return {
        "cells": cells,
        "chance": CHANCE,
        "paper_reported": dict(PAPER_REPORTED),
        "human_ceiling": None,
        "directions": list(DIRECTIONS),
    }
