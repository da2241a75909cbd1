"""The faithful report's budget section: what each system cost per question (calls, frames, tokens), per stage,
the framework against its backbone end to end (the paper's Table 8), and the tokens-per-frame and latency split
(H.12)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vidaudit.sdk import MISSING, Table, fmt
from vidaudit.suites.faithful.framework.budget import STAGE_NAMES

BUDGET_LEDE = (
    "What each system cost per question (one trial): calls, frames and input/output tokens, read from the "
    "run store's stage calls. 'Used' counts every stage a question's answer depended on, cache hits "
    "included (the framework's extraction of the whole video); 'spent' counts distinct calls made, "
    "divided by the questions (extraction is built once per video and shared). Then, per stage, and the "
    "comparisons of each framework run with its backbone run end to end: matched by frames (used), calls "
    "or tokens (H.12: once-per-video stages once, per-query stages per question) within 10%, with a recipe for each (the paper's Table 8)."
)


def _n(x: Any) -> str:
    return MISSING if x is None else f"{x:.1f}"


def budget_tables(results: Mapping[str, Any]) -> list[Table]:
    b = results.get("budget") or {}
    systems = b.get("systems") or []
    t1 = Table(
        id="faithful-budget",
        title="Budget per question",
        key_columns=2,
        columns=[
            "model",
            "condition",
            "questions",
            "calls used",
            "calls spent",
            "calls (H.12)",
            "frames used",
            "frames sent",
            "input tokens used",
            "output tokens used",
            "input tokens spent",
            "output tokens spent",
        ],
        rows=[
            [
                s["model"],
                s["condition"],
                str(s["n_questions"]),
                _n(s["calls_used_per_question"]),
                _n(s["calls_spent_per_question"]),
                _n(s.get("calls_per_question")),
                _n(s["frames_used_per_question"]),
                _n(s["frames_sent_per_question"]),
                _n(s["input_tokens_used_per_question"]),
                _n(s["output_tokens_used_per_question"]),
                _n(s["input_tokens_spent_per_question"]),
                _n(s["output_tokens_spent_per_question"]),
            ]
            for s in systems
        ],
        caption=b.get("note")
        or "per question; used = with cache hits, spent = distinct calls / questions, "
        "H.12 = once-per-video stages once, per-query stages per question",
    )
    t2 = Table(
        id="faithful-stage-usage",
        title="Per-stage accounting",
        key_columns=3,
        columns=[
            "model",
            "condition",
            "stage",
            "calls spent",
            "uses",
            "frames sent",
            "frames used / question",
            "input tokens sent",
            "output tokens sent",
        ],
        rows=[
            [
                s["model"],
                s["condition"],
                STAGE_NAMES.get(st, st),
                str(v["calls_spent"]),
                str(v["uses"]),
                str(v["frames_sent"]),
                _n(v["frames_used_per_question"]),
                str(v["input_tokens_sent"]),
                str(v["output_tokens_sent"]),
            ]
            for s in systems
            for st, v in s["stages"].items()
        ],
    )
    t3 = Table(
        id="faithful-budget-matched",
        title="Framework against its backbone end to end",
        key_columns=4,
        columns=[
            "framework",
            "condition",
            "end to end",
            "condition",
            "frames ratio (e2e / framework)",
            "calls ratio (H.12)",
            "input tokens ratio (H.12)",
            "matched by",
            "frame-matching condition",
            "recipes (frames / calls / tokens)",
        ],
        rows=[
            [
                c["framework"],
                c["framework_condition"],
                c["end_to_end"],
                c["end_to_end_condition"],
                fmt(c["frames_ratio"], 3),
                fmt(c.get("calls_h12_ratio"), 3),
                fmt(c.get("input_tokens_h12_ratio"), 3),
                ", ".join(c.get("matched_by") or []) or "none",
                c["matching_condition"] or MISSING,
                " / ".join((c.get("recipes") or {}).values()) or MISSING,
            ]
            for c in b.get("comparisons") or []
        ],
        caption=b.get("rule"),
    )
    return [t1, t2, t3, latency_table(results)]


def latency_table(results: Mapping[str, Any]) -> Table:
    systems = (results.get("budget") or {}).get("systems") or []
    rows = []
    for s in systems:
        lat = s.get("latency") or {}
        rows.append(
            [
                s["model"],
                s["condition"],
                fmt(s.get("input_tokens_per_frame")),
                _n(s.get("frame_tokens_at_256_per_question")),
                _n(s.get("input_tokens_per_question")),
                fmt(lat.get("preprocessing_s_per_video"), 2),
                fmt(lat.get("per_query_s"), 2),
                ", ".join(f"{k} {fmt(v, 2)}" for k, v in (lat.get("median_s_per_call") or {}).items()) or MISSING,
            ]
        )
    return Table(
        id="faithful-h12",
        title="Tokens per frame and latency split (H.12)",
        key_columns=2,
        columns=[
            "model",
            "condition",
            "input tokens per frame sent",
            "frame tokens at 256/frame per question",
            "input tokens per question (H.12)",
            "preprocessing s per video",
            "per-query s",
            "median s per call, by stage",
        ],
        rows=rows,
        caption="tokens per frame: input tokens over frames sent by the stages that send frames (their text "
        "included: an upper bound); latency: the store's wall-clock per call, one run",
    )
