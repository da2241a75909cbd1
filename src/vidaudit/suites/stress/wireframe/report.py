"""The wireframe probe's report: accuracy per model x condition x task x arrangement x line width,
the most common connectivity answer (Reveal Table 19's form) and the paper's Tables 18-19."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from vidaudit.sdk import ScoreRecord, Table
from vidaudit.suites.stress.common import (
    CEILING_NOTE,
    REFERENCE_COLUMNS,
    HumanCeiling,
    ProbeReport,
    accuracy_cell,
    group_records,
    reference_cells,
    with_interval,
)
from vidaudit.suites.stress.wireframe.tasks import CHANCE, PAPER_MODEL, PAPER_TABLE18, PAPER_TABLE19, TASKS

PROBE = "wireframe"


def _paper(task: str, arrangement: str) -> str:
    if task == "window":
        return "succeeds (B.7.6, no count)" if arrangement == "adversarial" else "-"
    k = PAPER_TABLE18.get(task, {}).get(arrangement)
    return "-" if k is None else f"{100 * k / 5:.0f} ({PAPER_MODEL}, {k}/5)"


def aggregate(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    recs = [r for r in records if r.params.get("probe") == PROBE]
    cells: dict[str, Any] = {}

    def key(r: ScoreRecord) -> tuple[str, str, Any, Any, int]:
        return (
            r.model,
            r.condition,
            r.params.get("task"),
            r.params.get("arrangement"),
            int(r.params.get("line_width", 0)),
        )

    for (model, cond, task, arr, width), rs in group_records(recs, key).items():
        cell = accuracy_cell(rs)
        answers = Counter(str(r.metrics.get("predicted")) for r in rs if r.status == "ok")
        cell.update(
            {
                "model": model,
                "condition": cond,
                "role": rs[0].model_role,
                "task": task,
                "arrangement": arr,
                "line_width": width,
                "chance": CHANCE.get(task),
                "answers": dict(answers),
                "paper": _paper(task, arr),
                "n_hallucinated": sum(int(r.metrics.get("n_hallucinated") or 0) for r in rs),
            }
        )
        cells[f"{model}|{cond}|{task}|{arr}|w{width}"] = cell
    return {
        "cells": cells,
        "chance": dict(CHANCE),
        "paper_table18": PAPER_TABLE18,
        "paper_table19": {str(k): v for k, v in PAPER_TABLE19.items()},
        "human_ceiling": None,
    }


def _summary(cells: dict[str, Any], ceiling: HumanCeiling) -> Table:
    rows = []
    for c in sorted(
        cells.values(),
        key=lambda c: (c["model"], c["condition"], TASKS.index(c["task"]), c["arrangement"], c["line_width"]),
    ):
        top = Counter(c["answers"]).most_common(1)
        rows.append(
            [
                c["model"],
                c["condition"],
                c["task"],
                c["arrangement"],
                str(c["line_width"] or "-"),
                *with_interval(c),
                top[0][0] if top else "-",
                *reference_cells(c["chance"], c["paper"], ceiling, c["condition"]),
            ]
        )
    return Table(
        id="stress-wireframe-accuracy",
        title="Wireframe (B.7): accuracy (%) per task, arrangement and line width",
        key_columns=5,
        columns=[
            "model",
            "condition",
            "task",
            "arrangement",
            "width px",
            "accuracy",
            "95% Wilson",
            "most common answer",
            *REFERENCE_COLUMNS,
        ],
        rows=rows,
        caption="Accuracy over every planned trial (a failed call is wrong). connectivity: which two nodes "
        "B is joined to, every line crossing x = W/2 (split between temporal groups under "
        "adversarial); window: the same with every line crossing x = 112 or 336 inside one "
        "temporal group (the B.7.6 contrast). Chance: 1/10 (two of five letters), 1/2, 1/6. "
        "'paper reported' is Reveal Table 18 for Qwen2.5-VL-7B on its own stimuli (5 runs).",
    )


def _paper_tables() -> list[Table]:
    t18 = Table(
        id="stress-wireframe-paper18",
        title="Reveal Table 18: correct runs of 5 (Qwen2.5-VL-7B)",
        columns=["task", "control", "adversarial", "interleaved"],
        rows=[[t, *(f"{v[a]}/5" for a in ("control", "adversarial", "interleaved"))] for t, v in PAPER_TABLE18.items()],
    )
    t19 = Table(
        id="stress-wireframe-paper19",
        title="Reveal Table 19: nodes reported joined to B (truth D, F)",
        columns=["width px", "control", "adversarial", "interleaved"],
        rows=[[str(w), v["control"], v["adversarial"], v["interleaved"]] for w, v in PAPER_TABLE19.items()],
        caption="The paper labels the interleaved column 'Interleaved-8'; its setup says stride 4 (docs/stress.md).",
    )
    return [t18, t19]


wireframe_report = ProbeReport(
    PROBE,
    aggregate,
    title="Wireframe connectivity (B.7)",
    lede="448x448 scenes in 4 frames: control (four copies), adversarial (x < 224 in frames 0-1, "
    "x >= 224 in frames 2-3: the two temporal groups of a 2-frame patch), interleaved (frame t "
    "shows the columns x mod 4 = t). Every arrangement's frames unite to the control image.",
    count="model x condition x task x arrangement x width",
    says=(CEILING_NOTE,),
    tables=lambda res, ceiling: [_summary(res["cells"], ceiling), *_paper_tables()],
)
