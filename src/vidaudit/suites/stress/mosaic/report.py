"""The mosaic probe's report: accuracy and recency errors per model x condition x stimulus x arrangement,
next to Reveal Table 12."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vidaudit.sdk import ScoreRecord, Table
from vidaudit.suites.stress.common import (
    REFERENCE_COLUMNS,
    HumanCeiling,
    ProbeReport,
    accuracy_cell,
    group_records,
    paper_text,
    reference_cells,
    with_interval,
)
from vidaudit.suites.stress.mosaic.tasks import ARRANGEMENTS, CHANCE, HUMAN_TABLE12, PAPER_TABLE12, paper_name

PROBE = "mosaic"


def aggregate(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    recs = [r for r in records if r.params.get("probe") == PROBE]
    cells: dict[str, Any] = {}
    key = lambda r: (r.model, r.condition, r.params.get("stimulus"), r.params.get("arrangement"))  # noqa: E731
    for (model, cond, stim, arr), rs in group_records(recs, key).items():
        cell = accuracy_cell(rs)
        errors = sum(r.status == "ok" and r.correct is False for r in rs)
        recency = sum(bool(r.metrics.get("recency_error")) for r in rs)
        name = paper_name(model)
        paper = PAPER_TABLE12[name][0 if arr == "temporal" else 1] if name else None
        cell.update(
            {
                "model": model,
                "condition": cond,
                "role": rs[0].model_role,
                "stimulus": stim,
                "arrangement": arr,
                "chance": CHANCE.get(stim),
                "n_errors": errors,
                "n_recency": recency,
                "recency_share_of_errors": recency / errors if errors else None,
                "paper_name": name,
                "paper": paper,
            }
        )
        cells[f"{model}|{cond}|{stim}|{arr}"] = cell
    return {
        "cells": cells,
        "chance": dict(CHANCE),
        "paper_table12": {k: list(v) for k, v in PAPER_TABLE12.items()},
        "human_table12": list(HUMAN_TABLE12),
        "human_ceiling": None,
    }


def _summary(cells: dict[str, Any], ceiling: HumanCeiling) -> Table:
    rows = []
    for c in sorted(
        cells.values(), key=lambda c: (c["model"], c["condition"], c["stimulus"], ARRANGEMENTS.index(c["arrangement"]))
    ):
        rows.append(
            [
                c["model"],
                c["condition"],
                c["stimulus"],
                c["arrangement"],
                *with_interval(c),
                f"{c['n_recency']}/{c['n_errors']}",
                *reference_cells(c["chance"], paper_text(c["paper"], c["paper_name"]), ceiling, c["condition"]),
            ]
        )
    return Table(
        id="stress-mosaic-accuracy",
        title="Sequential Mosaic: accuracy (%) and recency errors",
        key_columns=4,
        columns=[
            "model",
            "condition",
            "stimulus",
            "arrangement",
            "accuracy",
            "95% Wilson",
            "recency errors / errors",
            *REFERENCE_COLUMNS,
        ],
        rows=rows,
        caption="temporal: 4 frames, frame t showing only quadrant order[t]; spatial: the still itself (one "
        "image); spatial_tiled: the four masked frames shrunk into a 2x2 grid. A recency error "
        "names what the last temporal frame shows (docs/stress.md). Chance: 1/24 for text (a "
        "uniform guess over the generator's words), 1/4 for objects. 'paper reported' is Reveal "
        "Table 12 (temporal or spatial 2x2, out of 100) for the paper's model of that name, on its "
        "own stimuli.",
    )


def _paper_table() -> Table:
    rows = [[k, f"{t:.0f}", f"{s:.0f}"] for k, (t, s) in PAPER_TABLE12.items()]
    rows.append(["humans (paper)", f"{HUMAN_TABLE12[0]:.0f}", f"{HUMAN_TABLE12[1]:.0f}"])
    return Table(
        id="stress-mosaic-paper",
        title="Reveal Table 12: temporal vs spatial integration (out of 100)",
        columns=["model (paper)", "temporal", "spatial (2x2)"],
        rows=rows,
    )


mosaic_report = ProbeReport(
    PROBE,
    aggregate,
    title="Sequential Mosaic (B.3)",
    lede="The same four quadrants of a 448x448 still, shown one per frame (temporal) or together "
    "(spatial): a word through the centre, or two shapes in two quadrants.",
    count="model x condition x stimulus x arrangement",
    tables=lambda res, ceiling: [_summary(res["cells"], ceiling), _paper_table()],
)
