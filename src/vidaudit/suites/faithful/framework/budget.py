"""Per-stage accounting and budget-matched comparisons, from the run store's stage usage.

Input: the report stage's ``stage_usage`` (``vidaudit.score.stage.stage_usage``): per model and
condition, the trials scored and per stage the uses, distinct calls, frames and tokens.

Two ways to count, both reported (a question is one trial):

- *used*: what one question's answer depended on -- every stage its trial used, cache hits included
  (for the framework: all M chunk extractions of its video, R and G). This is the budget that is
  matched: what an end-to-end call would need to see as much of the video.
- *spent*: distinct calls actually made, divided by the questions (extraction built once per video is
  shared by its questions: M/Q + 2 calls per question in the paper's setup, M + 2Q per video).

The matching rules (decided here, written in docs/faithful.md; the paper's Table 8 compares frame-, call-
and token-matched): an end-to-end system is compared with a framework system when its model is the
framework's backbone (same model label; any condition). Each comparison says by which budgets it is
matched (``matched_by``), each within ``TOL`` (10%) of the framework's, end-to-end / framework:

- *frames*: frames **used** per question (what an answer depended on; the paper's "64 frames globally").
  Recipe: the end-to-end system under ``frames#K``, K = the framework's frames used per question
  (``chunks x chunk_frames + answer_frames``);
H.12's accounting (``calls_per_question``, ``frames_per_question``, ``input_tokens_per_question``): stages
built once per video (``PER_VIDEO_STAGES``: extraction, summarise, a caption) count their distinct calls,
the per-query stages (R, G, an end-to-end call) every use, divided by the questions -- (M + 2Q) / Q for
the framework, 1 end to end, with Q counting question *occurrences* (as the paper's 39.7), so a repeated
question text is two queries. *Spent* (distinct calls) would let the framework's cache of repeated texts
count against it; *used* would count the extraction once per question.

- *calls*: calls per question, H.12 (the paper's "single pass": M + 2Q calls per video against Q).
  Recipe: the framework's single pass, ``object-centric:chunks=1,chunk_frames=64,retrieval=all,...``
  (one extraction over the whole video per video, no R call: (1 + Q) / Q calls per question, within
  10% of one call from Q = 10 questions per video on);
- *tokens*: input tokens per question, H.12 (its total per video / Q). Recipe: cap G's memory,
  ``memory_tokens=K`` (``memory.truncate``), lowering K by the excess (``tokens_over`` per question);
  when the framework's frames alone exceed the end-to-end tokens, lower ``chunk_frames`` / ``answer_frames``.

``budget_matched`` (kept from before: frames-matched) stays the frames rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vidaudit.core.types import ModelSpec

FRAMES_TOL = 0.10
TOL = FRAMES_TOL
#: the budgets a comparison can be matched by, and the per-question figure each compares
MATCH_KEYS = {"frames": "frames_used_per_question", "calls": "calls_per_question",
              "tokens": "input_tokens_per_question"}
#: stages built once per video (their distinct calls count once); the others are per query (every use counts)
PER_VIDEO_STAGES = frozenset({"extract", "summarise", "caption"})
#: H.12's uniform rate, for input tokens comparable across systems whatever their image resolution
TOKENS_PER_FRAME_H12 = 256
STAGE_NAMES = {"extract": "E (extraction)", "summarise": "A (LLM summarise)", "retrieve": "R (retrieval)",
               "answer": "G (answer)", "caption": "caption", "direct": "end-to-end call"}
RULE = (f"an end-to-end system of the framework's backbone (same model label) is matched to a framework system by "
        f"frames (frames used per question), calls or tokens (H.12: once-per-video stages once, per-query stages per "
        f"question, divided by the questions) when that figure is within {TOL:.0%} of the framework's. Recipes: frames, the backbone under "
        "frames#K (K = chunks x chunk_frames + answer_frames); calls, the framework's single pass "
        "(chunks=1,chunk_frames=64,retrieval=all); tokens, memory_tokens=K on the framework (lower K by the "
        "excess).")


def _ratio(e: Mapping[str, Any], f: Mapping[str, Any], key: str) -> float | None:
    return e[key] / f[key] if f[key] else None


def recipes(f: Mapping[str, Any], e: Mapping[str, Any]) -> dict[str, str]:
    """How to make each budget match for one comparison (framework ``f``, end-to-end ``e``)."""
    k = round(f["frames_used_per_question"])
    over = f["input_tokens_per_question"] - e["input_tokens_per_question"]
    tokens = (f"memory_tokens=K on the framework, K lowered by {over:.0f} tokens per question from what G's memory "
              "takes now" if over > 0 else
              f"the framework spends {-over:.0f} fewer input tokens per question: raise answer_frames or chunk_frames, "
              "or cap the end-to-end frames")
    return {"frames": f"the end-to-end system under frames#{k}" if k >= 1 else "not available (no frames used)",
            "calls": "the framework's single pass: object-centric:chunks=1,chunk_frames=64,retrieval=all,<backbone> "
                     "(1 + Q calls per video)",
            "tokens": tokens}


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


def latency_split(latency: Mapping[str, Mapping[str, Any]], n: int, n_videos: int | None) -> dict[str, Any]:
    """H.12's latency split from the store's per-call latencies: one-off preprocessing (the once-per-video stages'
    distinct calls, summed, per video) and per query (the per-query stages' uses, summed, per question), and per
    stage the median of its distinct calls. Wall-clock of single calls as the store recorded them (one run, the
    run's concurrency), not the paper's medians of 10 runs."""
    pre = sum(float(v.get("sent_s") or 0.0) for st, v in latency.items() if st in PER_VIDEO_STAGES)
    per_q = sum(float(v.get("used_s") or 0.0) for st, v in latency.items() if st not in PER_VIDEO_STAGES)
    return {"preprocessing_s_per_video": pre / n_videos if n_videos else None,
            "preprocessing_s_total": pre, "per_query_s": per_q / n if n else None,
            "median_s_per_call": {st: v.get("median_s") for st, v in sorted(latency.items())}}


def system_budget(block: Mapping[str, Any], n_videos: int | None = None) -> dict[str, Any]:
    """Per question (trial) of one system: calls, frames and tokens, used and spent, and per stage; tokens per
    frame (input tokens over frames sent, by the stages that send frames: text included, so an upper bound) and
    the latency split (``n_videos``: the videos its questions are about)."""
    n = max(1, int(block.get("n_trials") or 0))
    stages = block.get("stages") or {}

    def per_q(key: str) -> float:
        return sum(int(s.get(key, 0)) for s in stages.values()) / n

    per_stage = {st: {"calls_spent": s["calls"], "uses": s["uses"], "frames_sent": s["frames_sent"],
                      "input_tokens_per_frame": s["input_tokens_sent"] / s["frames_sent"] if s["frames_sent"] else None,
                      "frames_used_per_question": s["frames_used"] / n,
                      "input_tokens_sent": s["input_tokens_sent"], "output_tokens_sent": s["output_tokens_sent"],
                      "input_tokens_used_per_question": s["input_tokens_used"] / n,
                      "output_tokens_used_per_question": s["output_tokens_used"] / n}
                 for st, s in sorted(stages.items())}
    def h12(used: str, sent: str) -> float:
        """H.12's accounting per question: per-video stages once (sent), per-query stages per question (used)."""
        return sum(int(v.get(sent if st in PER_VIDEO_STAGES else used, 0)) for st, v in stages.items()) / n

    frames_h12 = h12("frames_used", "frames_sent")
    framed = [v for v in stages.values() if v.get("frames_sent")]
    return {"n_questions": int(block.get("n_trials") or 0), "n_videos": n_videos,
            "input_tokens_per_frame": sum(v["input_tokens_sent"] for v in framed) / sum(v["frames_sent"] for v in framed)
            if framed else None,
            "latency": latency_split(block.get("latency") or {}, n, n_videos),
            "calls_per_question": h12("uses", "calls"), "frames_per_question": frames_h12,
            "input_tokens_per_question": h12("input_tokens_used", "input_tokens_sent"),
            "output_tokens_per_question": h12("output_tokens_used", "output_tokens_sent"),
            "frame_tokens_at_256_per_question": TOKENS_PER_FRAME_H12 * frames_h12,
            "calls_used_per_question": per_q("uses"), "calls_spent_per_question": per_q("calls"),
            "frames_used_per_question": per_q("frames_used"), "frames_sent_per_question": per_q("frames_sent"),
            "input_tokens_used_per_question": per_q("input_tokens_used"),
            "output_tokens_used_per_question": per_q("output_tokens_used"),
            "input_tokens_spent_per_question": per_q("input_tokens_sent"),
            "output_tokens_spent_per_question": per_q("output_tokens_sent"),
            "stages": per_stage}


def budgets(usage: Mapping[str, Mapping[str, Any]] | None,
            n_videos: Mapping[tuple[str, str], int] | None = None) -> dict[str, Any]:
    """``results["budget"]``: every system's budget and the framework / end-to-end comparisons (``n_videos``:
    per (model, condition), the videos its questions are about, for the latency per video)."""
    if not usage:
        return {"systems": [], "comparisons": [], "rule": RULE,
                "note": "not available: no run store (per-stage usage is read from a run's stage calls)"}
    videos = n_videos or {}
    systems = [{"model": m, "condition": c, "framework": m.startswith("object-centric:"),
                **system_budget(b, videos.get((m, c)))}
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
            spent = {m: _ratio(e, f, key) for m, key in MATCH_KEYS.items()}
            matched = [m for m, r in spent.items() if r is not None and abs(r - 1) <= TOL + 1e-12]
            comparisons.append({
                "framework": f["model"], "framework_condition": f["condition"], "end_to_end": e["model"],
                "end_to_end_condition": e["condition"], "frames_ratio": ratio,
                "calls_ratio": _ratio(e, f, "calls_used_per_question"),
                "input_tokens_ratio": _ratio(e, f, "input_tokens_used_per_question"),
                "calls_h12_ratio": spent["calls"], "input_tokens_h12_ratio": spent["tokens"],
                "matched_by": matched, "tokens_over": f["input_tokens_per_question"] - e["input_tokens_per_question"],
                "budget_matched": ratio is not None and abs(ratio - 1) <= FRAMES_TOL,
                "matching_condition": f"frames#{k}" if k >= 1 else None, "recipes": recipes(f, e)})
    return {"systems": systems, "comparisons": comparisons, "rule": RULE, "frames_tolerance": FRAMES_TOL,
            "tolerance": TOL, "match_keys": dict(MATCH_KEYS)}
