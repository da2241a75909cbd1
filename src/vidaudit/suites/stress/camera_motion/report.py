"""The stress suite's report: sections built from ``report.model`` types (no rendering here)."""

from __future__ import annotations

from typing import Any

from vidaudit.sdk import GridFigure, Table
from vidaudit.suites.stress.camera_motion.aggregate import PREDICTED_COLUMNS, aggregate_camera
from vidaudit.suites.stress.camera_motion.options import CHANCE, DIRECTIONS, HUMAN_REPORTED, PAPER_REPORTED
from vidaudit.suites.stress.common import (
    CEILING_NOTE,
    REFERENCE_COLUMNS,
    HumanCeiling,
    ProbeReport,
    interval_text,
    paper_text,
    pct,
    reference_cells,
    with_interval,
)


def _summary_table(cells: dict[str, Any], ceiling: HumanCeiling) -> Table:
    rows = []
    for c in cells.values():
        paper = PAPER_REPORTED.get(c["paper_name"]) if c["paper_name"] else None
        rows.append(
            [
                c["model"],
                c["condition"],
                c["role"],
                str(c["n_planned"]),
                f"{c['n_scored']}/{c['n_planned']}",
                pct(c["accuracy"]),
                interval_text(c),
                *reference_cells(CHANCE, paper_text(paper, c["paper_name"]), ceiling, c["condition"]),
            ]
        )
    return Table(
        id="stress-camera-accuracy",
        title="Camera motion: 6-way accuracy (%)",
        key_columns=2,
        columns=[
            "model",
            "condition",
            "role",
            "planned",
            "completed",
            "accuracy",
            "95% Wilson",
            *REFERENCE_COLUMNS,
        ],
        rows=rows,
        caption="Accuracy over every planned trial: a failed call counts as wrong (completion shows "
        "how many were scored). Chance is 1/6. 'paper reported' is Reveal A.4 for the paper's "
        "model of the same name (its own stimuli, not these).",
    )


def _direction_table(cells: dict[str, Any]) -> Table:
    rows = []
    for c in cells.values():
        pd = c["per_direction"]
        rows.append(
            [c["model"], c["condition"]]
            + [f"{pct(pd[d]['accuracy'])} ({pd[d]['n_correct']}/{pd[d]['n_planned']})" for d in DIRECTIONS]
        )
    return Table(
        id="stress-camera-directions",
        title="Camera motion: accuracy per true direction (%)",
        key_columns=2,
        columns=["model", "condition", *DIRECTIONS],
        rows=rows,
    )


def _synthesis_table(cells: dict[str, Any], ceiling: HumanCeiling) -> Table:
    rows = []
    for c in cells.values():
        for syn, sc in c["per_synthesis"].items():
            rows.append(
                [
                    c["model"],
                    c["condition"],
                    syn,
                    *with_interval(sc),
                    pct(CHANCE),
                    ceiling.text(c["condition"]),
                ]
            )
    return Table(
        id="stress-camera-synthesis",
        title="Camera motion: accuracy per synthesis (%)",
        key_columns=3,
        columns=["model", "condition", "synthesis", "accuracy", "95% Wilson", "chance", "human ceiling"],
        rows=rows,
        caption="2d: stills moved by camera_2d (Algorithm 1); 3d: sprite scenes filmed by a "
        "moving pinhole camera (Algorithm 2). The paper reports 3D about 2 points above 2D.",
    )


def _confusion(c: dict[str, Any], i: int) -> GridFigure:
    conf = c["confusion"]
    values, notes = [], []
    for d in DIRECTIONS:
        total = sum(conf[d].values())
        values.append([conf[d][p] / total if total else None for p in PREDICTED_COLUMNS])
        notes.append([f"{conf[d][p]}/{total}" for p in PREDICTED_COLUMNS])
    return GridFigure(
        id=f"stress-camera-confusion-{i}",
        title=f"confusion: {c['model']} / {c['condition']}",
        group=[c["model"], c["condition"]],
        row_label="true direction",
        col_label="predicted",
        rows=list(DIRECTIONS),
        cols=list(PREDICTED_COLUMNS),
        values=values,
        annotations=notes,
        value_label="share of the row",
        caption="Rows: the true camera motion; columns: the parsed answer, 'unparsed' (no option "
        "in an answer position) or 'error' (the call failed).",
    )


def _paper_table() -> Table:
    return Table(
        id="stress-camera-paper",
        title="Reveal A.4: reported 6-way accuracy (%)",
        columns=["model (paper)", "accuracy"],
        rows=[[k, f"{v:.1f}"] for k, v in PAPER_REPORTED.items()] + [["humans (paper)", f"{HUMAN_REPORTED:.0f}"]],
        caption="As listed in reveal-checklist.md section 1 (A.4 prints 13.6 for GPT-5-nano). Humans: 50 "
        "clips, uniform over the six motions (the human-ceiling column is this run's imported study, if any).",
    )


camera_report = ProbeReport(
    "camera_motion",
    aggregate_camera,
    title="Camera motion",
    lede="Six-way camera motion on still scenes moved by camera_2d and on 3D sprite scenes filmed by a "
    "moving pinhole camera (physical direction names: pan_left = the content moves right). Chance "
    "is 1/6.",
    says=(f"chance {100 * CHANCE:.1f}%", CEILING_NOTE),
    figures=lambda res: [_confusion(c, i) for i, c in enumerate(res["cells"].values())],
    tables=lambda res, ceiling: [
        _summary_table(res["cells"], ceiling),
        _direction_table(res["cells"]),
        _synthesis_table(res["cells"], ceiling),
        _paper_table(),
    ],
)
