"""Expectation numbers: anomaly detection (Spatial, Temporal and Overall, always together), the temporal gap
(MCQ and summary), and the reversed clips (direction MCQ and description), each beside chance, the paper's
value and the human ceiling.

Judged accuracy (``judged_cell``) is over the planned trials that were judged or could not be: a trial the
run had no judge for is *not judged* -- counted and shown, never in the denominator as a pass or a fail; an
unparseable verdict is wrong and counted. Overall = (Spatial + Temporal) / 2, unweighted (§3.8), defined
only when both are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from vidaudit.sdk import ScoreRecord, Table
from vidaudit.suites.stress.common import (
    CEILING_NOTE,
    PAPER_MATCH,
    QWEN2_MATCH,
    REFERENCE_COLUMNS,
    HumanCeiling,
    ProbeReport,
    accuracy_cell,
    group_records,
    interval_of,
    interval_text,
    model_condition_cells,
    paper_name,
    pct,
    with_interval,
)
from vidaudit.suites.stress.expectation.generate import ANOMALIES, SPATIAL, TEMPORAL
from vidaudit.suites.stress.expectation.prompts import JUDGE_VERSION

PROBE = "expectation"
CHANCE = {"direction": 0.5, "gap_mcq": 0.25}
#: Reveal Table 6 / §5.5: anomaly Spatial / Temporal accuracy (%); Overall is their mean (derived)
PAPER_ANOMALY: dict[str, tuple[float, float]] = {
    "Gemini 2.5 Pro": (91.3, 30.6),
    "Qwen2.5-VL-72B": (56.2, 2.8),
    "Qwen2.5-VL-7B": (19.3, 2.9),
}
#: Reveal §5.5: the smaller Qwen2-VL models' anomaly scores (%), printed without saying which metric (Spatial,
#: Temporal or Overall): shown as "unlabelled", never as one of the three columns
PAPER_ANOMALY_UNLABELLED: dict[str, float] = {
    "Qwen2-VL-7B Instruct": 9.8,
    "Qwen2-VL-7B Base": 9.6,
    "Qwen2-VL-2B Instruct": 7.9,
    "Qwen2-VL-2B Base": 6.6,
}
MATCH = (*PAPER_MATCH, *QWEN2_MATCH)
HUMAN_ANOMALY = (93.0, 97.0, 95.0)
#: Reveal §5.5 / E.4: temporal gap MCQ / summary (%)
PAPER_GAP: dict[str, tuple[float, float]] = {"Gemini 2.5 Pro": (70.0, 38.0)}
HUMAN_GAP = (82.0, 78.0)


def judged_cell(rs: Sequence[ScoreRecord]) -> dict[str, Any]:
    """Accuracy of judged trials: not-judged ones counted apart; failed calls and unparseable verdicts are wrong."""
    not_judged = sum(r.metrics.get("judge") == "not_judged" for r in rs)
    unparseable = sum(r.metrics.get("judge") == "unparseable" for r in rs)
    judgeable = [r for r in rs if r.metrics.get("judge") != "not_judged"]
    n = len(judgeable)
    k = sum(r.correct is True for r in rs)
    iv = interval_of(judgeable, lambda r: r.correct)
    scores = {s: sum(r.metrics.get("verdict") == s for r in rs) for s in ("1.0", "0.5", "0.0")}
    return {
        "n_planned": len(rs),
        "n_judgeable": n,
        "n_correct": k,
        "not_judged": not_judged,
        "unparseable": unparseable,
        "failed": sum(r.status != "ok" for r in rs),
        "accuracy": k / n if n else None,
        "ci_low": iv["ci_low"],
        "ci_high": iv["ci_high"],
        "scores": scores,
        **{key: iv[key] for key in ("ci_unit", "n_sources", "design_effect")},
    }


def judged_text(c: dict[str, Any]) -> str:
    if not c["n_planned"]:
        return "-"
    if not c["n_judgeable"]:
        return f"not judged ({c['not_judged']})"
    return f"{pct(c['accuracy'])} ({c['n_correct']}/{c['n_judgeable']})"


def judge_counts_text(c: dict[str, Any]) -> str:
    return f"{c['unparseable']} unparseable, {c['not_judged']} not judged"


def overall(spatial: float | None, temporal: float | None) -> float | None:
    """Reveal's anomaly Overall: the unweighted mean of Spatial and Temporal (None unless both exist)."""
    if spatial is None or temporal is None:
        return None
    return (spatial + temporal) / 2


def _task(rs: Sequence[ScoreRecord], task: str, **where: Any) -> list[ScoreRecord]:
    return [r for r in rs if r.params.get("task") == task and all(r.params.get(k) == v for k, v in where.items())]


CLIPS = ("forward", "reverse", "all")


def _clips(rs: Sequence[ScoreRecord], task: str, clip: str) -> list[ScoreRecord]:
    return _task(rs, task) if clip == "all" else _task(rs, task, direction=clip)


def _filled(rs: Sequence[ScoreRecord]) -> dict[str, int]:
    errors = [r for r in rs if r.correct is not True]
    return {"errors": len(errors), "filled": sum(r.metrics.get("picked_kind") == "filled" for r in errors)}


def _numbers(rs: list[ScoreRecord]) -> dict[str, Any]:
    """One model x condition cell: anomaly detection, the temporal gap and the reversed clips."""
    sp = judged_cell([r for r in _task(rs, "anomaly") if r.params.get("anomaly_kind") == "spatial"])
    tp = judged_cell([r for r in _task(rs, "anomaly") if r.params.get("anomaly_kind") == "temporal"])
    anomaly_rs = _task(rs, "anomaly")
    return {
        "paper_name": paper_name(rs[0].model, MATCH),
        "anomaly": {
            "spatial": sp,
            "temporal": tp,
            "overall": overall(sp["accuracy"], tp["accuracy"]),
            "all": judged_cell(anomaly_rs),
            "layout_ok": sum(r.metrics.get("layout_ok") is True for r in anomaly_rs),
            "by_anomaly": {
                op: judged_cell(sub) for op, sub in group_records(anomaly_rs, lambda r: r.params.get("anomaly")).items()
            },
        },
        "gap": {
            "mcq": {**accuracy_cell(_task(rs, "gap_mcq")), **_filled(_task(rs, "gap_mcq"))},
            "summary": judged_cell(_task(rs, "gap_summary")),
        },
        "reversed": {
            "direction": {d: accuracy_cell(_clips(rs, "direction", d)) for d in CLIPS},
            "describe": {d: judged_cell(_clips(rs, "describe", d)) for d in CLIPS},
        },
    }


def aggregate(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    return {
        "cells": model_condition_cells(records, _numbers),
        "chance": CHANCE,
        "judge_version": JUDGE_VERSION,
        "paper_anomaly": {
            k: {"spatial": s, "temporal": t, "overall_derived": (s + t) / 2} for k, (s, t) in PAPER_ANOMALY.items()
        },
        "paper_anomaly_unlabelled": dict(PAPER_ANOMALY_UNLABELLED),
        "human_anomaly_reported": dict(zip(("spatial", "temporal", "overall"), HUMAN_ANOMALY, strict=True)),
        "paper_gap": {k: {"mcq": m, "summary": s} for k, (m, s) in PAPER_GAP.items()},
        "human_gap_reported": {"mcq": HUMAN_GAP[0], "summary": HUMAN_GAP[1]},
        "overall_rule": "(Spatial + Temporal) / 2, unweighted; 0.5 and 1.0 judge scores count as correct",
        "human_ceiling": None,
    }


def _acc(x: float | None) -> str:
    return pct(x)


def _anomaly_paper(name: str | None) -> str:
    if name in PAPER_ANOMALY:
        s, t = PAPER_ANOMALY[name]
        return f"{s:.1f} / {t:.1f} / {(s + t) / 2:.1f} ({name}; Overall derived)"
    if name in PAPER_ANOMALY_UNLABELLED:
        return f"{PAPER_ANOMALY_UNLABELLED[name]:.1f} ({name}; §5.5, metric unlabelled)"
    return "{:.0f} / {:.0f} / {:.0f} (humans)".format(*HUMAN_ANOMALY)


def _judged(x: dict[str, Any]) -> list[str]:
    """A judged task's accuracy, its interval, its verdict counts, and its chance column (free text has none)."""
    return [judged_text(x), interval_text(x) if x["n_judgeable"] else "-", judge_counts_text(x), "- (free text)"]


def _direction(x: dict[str, Any]) -> list[str]:
    """The direction MCQ's accuracy and interval, no verdicts (it is not judged), and its chance."""
    return [*with_interval(x), "-", pct(CHANCE["direction"])]


#: the reversed-clips table's tasks, in its row order: (task shown, key of c["reversed"], its cells)
REVERSED_TASKS: tuple[tuple[str, str, Callable[[dict[str, Any]], list[str]]], ...] = (
    ("forward or reverse (MCQ)", "direction", _direction),
    ("description in the order shown", "describe", _judged),
)


def _tables(res: dict[str, Any], ceiling: HumanCeiling) -> list[Table]:
    an_rows, op_rows, gap_rows, rev_rows = [], [], [], []
    for c in res["cells"].values():
        m, cond, a = c["model"], c["condition"], c["anomaly"]
        human = ceiling.text(cond)
        if a["all"]["n_planned"]:
            an_rows.append(
                [
                    m,
                    cond,
                    judged_text(a["spatial"]),
                    judged_text(a["temporal"]),
                    _acc(a["overall"]),
                    judge_counts_text(a["all"]),
                    f"{a['layout_ok']}/{a['all']['n_planned']}",
                    "- (free text)",
                    _anomaly_paper(c["paper_name"]),
                    human,
                ]
            )
            for op in ANOMALIES:
                x = a["by_anomaly"].get(op)
                if x is None:
                    continue
                sc = x["scores"]
                op_rows.append(
                    [
                        m,
                        cond,
                        "spatial" if op in SPATIAL else "temporal",
                        op,
                        judged_text(x),
                        interval_text(x) if x["n_judgeable"] else "-",
                        f"{sc['1.0']} / {sc['0.5']} / {sc['0.0']}",
                        judge_counts_text(x),
                    ]
                )
        g = c["gap"]
        paper = PAPER_GAP.get(c["paper_name"] or "")
        if g["mcq"]["n_planned"]:
            gap_rows.append(
                [
                    m,
                    cond,
                    "MCQ (4-way)",
                    *with_interval(g["mcq"]),
                    f"{g['mcq']['filled']} of {g['mcq']['errors']} errors picked the filled-in sequence",
                    pct(CHANCE["gap_mcq"]),
                    f"{paper[0]:.0f} ({c['paper_name']})" if paper else f"{HUMAN_GAP[0]:.0f} (humans)",
                    human,
                ]
            )
        if g["summary"]["n_planned"]:
            s = g["summary"]
            gap_rows.append(
                [
                    m,
                    cond,
                    "summary (not hallucinated)",
                    *_judged(s),
                    f"{paper[1]:.0f} ({c['paper_name']})" if paper else f"{HUMAN_GAP[1]:.0f} (humans)",
                    human,
                ]
            )
        for task, key, cells_text in REVERSED_TASKS:
            for d in CLIPS:
                x = c["reversed"][key][d]
                if x["n_planned"]:
                    rev_rows.append([m, cond, task, d, *cells_text(x), "- (not reported)", human])
    tables = []
    if an_rows:
        tables.append(
            Table(
                id="stress-expectation-anomaly",
                title="Anomaly detection: Spatial, Temporal and Overall (%)",
                key_columns=2,
                columns=[
                    "model",
                    "condition",
                    "spatial",
                    "temporal",
                    "overall",
                    "verdicts",
                    "answer layout followed",
                    "chance",
                    "paper reported (S / T / O)",
                    "human ceiling",
                ],
                rows=an_rows,
                caption="The three E.2.2 questions in one request, judged jointly (score 1 / 0.5 / 0; 0.5 counts as "
                "correct, as in the paper). Overall = (Spatial + Temporal) / 2, unweighted. Accuracy is over "
                "judged trials; an unparseable verdict is wrong; a trial without a judge is 'not judged' and "
                "left out of the denominator. Anomaly detection has no chance rate.",
            )
        )
        tables.append(
            Table(
                id="stress-expectation-anomaly-by-op",
                title="Anomaly detection per injected anomaly",
                key_columns=4,
                columns=[
                    "model",
                    "condition",
                    "kind",
                    "anomaly",
                    "accuracy",
                    "95% Wilson",
                    "scores 1 / 0.5 / 0",
                    "verdicts",
                ],
                rows=op_rows,
                caption="Parameters of each anomaly are in docs/stress.md (the paper's Table 25 is lost).",
            )
        )
    if gap_rows:
        tables.append(
            Table(
                id="stress-expectation-gap",
                title="Temporal gap: MCQ of the visible sequence and one-sentence summary",
                key_columns=3,
                columns=[
                    "model",
                    "condition",
                    "task",
                    "accuracy",
                    "95% Wilson",
                    "errors / verdicts",
                    *REFERENCE_COLUMNS,
                ],
                rows=gap_rows,
                caption="One step removed (temporal_gap) and the clip presented as whole. The summary is judged with "
                "the E.2.3 hallucination prompt; correct = hallucinated_summary false. The 'filled-in' option "
                "is the full procedure, the answer of a model that infers the missing step.",
            )
        )
    if rev_rows:
        tables.append(
            Table(
                id="stress-expectation-reversed",
                title="Reversed clips: direction and description",
                key_columns=4,
                columns=[
                    "model",
                    "condition",
                    "task",
                    "clip",
                    "accuracy",
                    "95% Wilson",
                    "verdicts",
                    *REFERENCE_COLUMNS,
                ],
                rows=rev_rows,
                caption="Forward and reversed copies of each procedure. The description (E.2.2 Q1) is judged for "
                "giving the steps in the order shown. The paper reports no behavioural number for reversed "
                "clips (its numbers are linear probes).",
            )
        )
    return tables


def _not_judged(records: Sequence[ScoreRecord], res: dict[str, Any]) -> list[str]:
    """The note counting free-text answers no judge scored, if any."""
    not_judged = sum(
        c["anomaly"]["all"]["not_judged"]
        + c["gap"]["summary"]["not_judged"]
        + c["reversed"]["describe"]["all"]["not_judged"]
        for c in res["cells"].values()
    )
    if not not_judged:
        return []
    return [f"expectation: {not_judged} free-text answers were not judged (run with --judge SPEC to score them)"]


expectation_report = ProbeReport(
    PROBE,
    aggregate,
    title="Temporal expectation bias (anomalies, temporal gap, reversed clips)",
    lede="Videos whose events defy the usual course: anomalies injected, a step removed, the clip played "
    "backwards. A model that reports what should happen rather than what is shown fails here.",
    says=(f"judge prompts {JUDGE_VERSION}", "anomaly Spatial, Temporal and Overall shown together", CEILING_NOTE),
    more_notes=_not_judged,
    tables=_tables,
)


__all__ = ["aggregate", "expectation_report", "judged_cell", "overall", "SPATIAL", "TEMPORAL"]
