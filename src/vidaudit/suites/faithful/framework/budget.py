"""Per-stage accounting and budget-matched comparisons, from the run store's stage usage.

Input: the report stage's ``stage_usage`` (``vidaudit.score.stage.stage_usage``): per model and
condition, the trials scored and per stage the uses, distinct calls, frames and tokens.

Two ways to count, both reported (a question is one trial):

- *used*: what one question's answer depended on -- every stage its trial used, cache hits included
  (for the framework: all M chunk extractions of its video, R and G). This is the budget that is
  matched: what an end-to-end call would need to see as much of the video.
- *spent*: distinct calls actually made, divided by the questions (extraction built once per video is
  shared by its questions: M/Q + 2 calls per question in the paper's setup, M + 2Q per video).

The matching rule (decided here, written in docs/faithful.md): an end-to-end system is compared with a
framework system when its model is the framework's backbone (same model label; any condition), and
the comparison is *budget-matched* when the end-to-end frames used per question are within
``FRAMES_TOL`` (10%) of the framework's. Calls and tokens are stated beside it, never matched: one
end-to-end call cannot match M + 2 calls. The recipe for a matching end-to-end condition is
``frames#K`` with K the framework's frames used per question (rounded), i.e. ``chunks x chunk_frames +
answer_frames``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vidaudit.core.types import ModelSpec

FRAMES_TOL = 0.10
STAGE_NAMES = {"extract": "E (extraction)", "summarise": "A (LLM summarise)", "retrieve": "R (retrieval)",
               "answer": "G (answer)", "caption": "caption", "direct": "end-to-end call"}
RULE = (f"an end-to-end system of the framework's backbone (same model label) is budget-matched to a framework "
        f"system when its frames used per question are within {FRAMES_TOL:.0%} of the framework's; calls and tokens "
        "are stated, not matched. Recipe: run the backbone under frames#K, K = the framework's frames used per "
        "question (chunks x chunk_frames + answer_frames).")


def backbone_label(model: str) -> str | None:
    """The backbone model label of an ``object-centric:...`` model (None: not a framework, or offline)."""
    if not model.startswith("object-centric:"):
        return None
    from vidaudit.suites.faithful.framework.spec import parse_spec

    try:
        opts = parse_spec(ModelSpec.parse(model))
    except Exception:  # noqa: BLE001 - a label this version cannot parse is simply not compared
        return None
    return None if opts.offline else ModelSpec.parse(opts.backbone).label


def system_budget(block: Mapping[str, Any]) -> dict[str, Any]:
    """Per question (trial) of one system: calls, frames and tokens, used and spent, and per stage."""
    n = max(1, int(block.get("n_trials") or 0))
    stages = block.get("stages") or {}

    def per_q(key: str) -> float:
        return sum(int(s.get(key, 0)) for s in stages.values()) / n

    per_stage = {st: {"calls_spent": s["calls"], "uses": s["uses"], "frames_sent": s["frames_sent"],
                      "frames_used_per_question": s["frames_used"] / n,
                      "input_tokens_sent": s["input_tokens_sent"], "output_tokens_sent": s["output_tokens_sent"],
                      "input_tokens_used_per_question": s["input_tokens_used"] / n,
                      "output_tokens_used_per_question": s["output_tokens_used"] / n}
                 for st, s in sorted(stages.items())}
    return {"n_questions": int(block.get("n_trials") or 0),
            "calls_used_per_question": per_q("uses"), "calls_spent_per_question": per_q("calls"),
            "frames_used_per_question": per_q("frames_used"), "frames_sent_per_question": per_q("frames_sent"),
            "input_tokens_used_per_question": per_q("input_tokens_used"),
            "output_tokens_used_per_question": per_q("output_tokens_used"),
            "input_tokens_spent_per_question": per_q("input_tokens_sent"),
            "output_tokens_spent_per_question": per_q("output_tokens_sent"),
            "stages": per_stage}


def budgets(usage: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    """``results["budget"]``: every system's budget and the framework / end-to-end comparisons."""
    if not usage:
        return {"systems": [], "comparisons": [], "rule": RULE,
                "note": "not available: no run store (per-stage usage is read from a run's stage calls)"}
    systems = [{"model": m, "condition": c, "framework": m.startswith("object-centric:"), **system_budget(b)}
               for m, conds in sorted(usage.items()) for c, b in sorted(conds.items())]
    comparisons = []
    for f in systems:
        bb = backbone_label(f["model"])
        if bb is None:
            continue
        k = round(f["frames_used_per_question"])
        for e in systems:
            if e["model"] != bb or e["framework"]:
                continue
            ff, ef = f["frames_used_per_question"], e["frames_used_per_question"]
            ratio = ef / ff if ff else None
            comparisons.append({
                "framework": f["model"], "framework_condition": f["condition"], "end_to_end": e["model"],
                "end_to_end_condition": e["condition"], "frames_ratio": ratio,
                "calls_ratio": e["calls_used_per_question"] / f["calls_used_per_question"]
                if f["calls_used_per_question"] else None,
                "input_tokens_ratio": e["input_tokens_used_per_question"] / f["input_tokens_used_per_question"]
                if f["input_tokens_used_per_question"] else None,
                "budget_matched": ratio is not None and abs(ratio - 1) <= FRAMES_TOL,
                "matching_condition": f"frames#{k}" if k >= 1 else None})
    return {"systems": systems, "comparisons": comparisons, "rule": RULE, "frames_tolerance": FRAMES_TOL}
