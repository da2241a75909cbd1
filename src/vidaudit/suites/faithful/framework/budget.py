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
- *tokens*: input tokens per question, H.12 (its total per video / Q). Computed, not a recipe
  (``token_match``): the cap K on G's memory (``memory_tokens=K``, ``memory.truncate``) that brings the
  framework's measured input tokens per question down to the end-to-end system's, from the run's own
  figures -- the measured H.12 tokens and each question's memory size (its reply header's ``memory=N``,
  estimated tokens): a question whose memory exceeds K loses the excess (to the truncation floor, the
  header and its note), one estimated token for one input token. The comparison names the spec to run
  (``object-centric:memory_tokens=K,...``) and the tokens it predicts; when even the floor leaves the
  framework above the end-to-end system, how many of G's frames to drop instead.

``budget_matched`` (kept from before: frames-matched) stays the frames rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from vidaudit.sdk import ModelSpec
from vidaudit.suites.faithful.framework.memory import render, tokens_of
from vidaudit.suites.faithful.framework.spec import parse_spec

FRAMES_TOL = 0.10
TOL = FRAMES_TOL
#: a capped memory keeps at least its header and the note saying what was cut (memory.truncate)
MEMORY_FLOOR_NOTE = "memory truncated to 100000 tokens (token-matched budget): 10000 states dropped"
#: the budgets a comparison can be matched by, and the per-question figure each compares
MATCH_KEYS = {
    "frames": "frames_used_per_question",
    "calls": "calls_per_question",
    "tokens": "input_tokens_per_question",
}
#: stages built once per video (their distinct calls count once); the others are per query (every use counts)
PER_VIDEO_STAGES = frozenset({"extract", "summarise", "caption"})
#: H.12's uniform rate, for input tokens comparable across systems whatever their image resolution
TOKENS_PER_FRAME_H12 = 256
STAGE_NAMES = {
    "extract": "E (extraction)",
    "summarise": "A (LLM summarise)",
    "retrieve": "R (retrieval)",
    "answer": "G (answer)",
    "caption": "caption",
    "direct": "end-to-end call",
}
RULE = (
    f"an end-to-end system of the framework's backbone (same model label) is matched to a framework system by "
    f"frames (frames used per question), calls or tokens (H.12: once-per-video stages once, per-query stages per "
    f"question, divided by the questions) when that figure is within {TOL:.0%} of the framework's. Recipes: frames, the backbone under "
    "frames#K (K = chunks x chunk_frames + answer_frames); calls, the framework's single pass "
    "(chunks=1,chunk_frames=64,retrieval=all); tokens, memory_tokens=K on the framework, K computed from the "
    "run's measured tokens and each question's memory size (token_match)."
)


def _ratio(e: Mapping[str, Any], f: Mapping[str, Any], key: str) -> float | None:
    return e[key] / f[key] if f[key] else None


def with_option(model: str, key: str, value: int) -> str:
    """The framework label with ``key=value`` set (replaced when the label has it, else first among the options)."""
    if re.search(rf"(?<=[:,]){re.escape(key)}=[^,]*", model):
        return re.sub(rf"(?<=[:,]){re.escape(key)}=[^,]*", f"{key}={value}", model, count=1)
    return model.replace("object-centric:", f"object-centric:{key}={value},", 1)


def token_match(model: str, f: Mapping[str, Any], e: Mapping[str, Any], sizes: list[int] | None) -> dict[str, Any]:
    """The token-matched budget, computed: the largest cap K on G's memory whose predicted H.12 input tokens per
    question are at most the end-to-end system's (``sizes``: each answered question's memory, estimated tokens).

    Predicted tokens at K = measured - (sum over questions of max(0, size - max(K, floor))) / questions, the floor
    being the header and the note a cut memory keeps: one estimated memory token is taken for one input token
    (the cap's own unit; a tokenizer that counts otherwise shows in the next run's ``matched_by``)."""
    now, target = float(f["input_tokens_per_question"]), float(e["input_tokens_per_question"])
    n = max(1, int(f.get("n_questions") or 0))
    out: dict[str, Any] = {
        "end_to_end_input_tokens_per_question": target,
        "input_tokens_per_question": now,
        "memory_tokens": None,
        "spec": None,
        "predicted_input_tokens_per_question": None,
    }
    if now <= target:
        return {
            **out,
            "note": f"no cap: the framework already spends {target - now:.0f} fewer input tokens per "
            "question than the end-to-end system",
        }
    if not sizes:
        return {
            **out,
            "note": "not computed: the framework's replies do not say their memory size (memory=N in "
            "the header, since issue 32); rerun the framework",
        }
    floor = tokens_of(render([], [], (MEMORY_FLOOR_NOTE,)))

    def predicted(k: int) -> float:
        return now - sum(max(0, m - max(k, floor)) for m in sizes) / n

    out["memory_size_max"] = max(sizes)
    out["memory_floor"] = floor
    if predicted(floor) > target:
        per_frame = e.get("input_tokens_per_frame") or TOKENS_PER_FRAME_H12
        drop = math.ceil((predicted(floor) - target) / per_frame)
        return {
            **out,
            "memory_tokens": floor,
            "predicted_input_tokens_per_question": predicted(floor),
            "answer_frames_to_drop": drop,
            "note": f"the memory cannot absorb it: at the floor ({floor} tokens) the framework still spends "
            f"{predicted(floor) - target:.0f} more input tokens per question; lower answer_frames by "
            f"{drop} (about {per_frame:.0f} tokens a frame, the end-to-end system's) or chunk_frames",
        }
    lo, hi = floor, max(sizes)  # predicted(lo) <= target < predicted(hi + 1) = now
    while lo < hi:  # the largest K whose prediction fits
        mid = (lo + hi + 1) // 2
        if predicted(mid) <= target:
            lo = mid
        else:
            hi = mid - 1
    return {
        **out,
        "memory_tokens": lo,
        "spec": with_option(model, "memory_tokens", lo),
        "predicted_input_tokens_per_question": predicted(lo),
        "note": f"computed from {len(sizes)} answers' memory sizes (largest {max(sizes)} tokens)",
    }


def recipes(f: Mapping[str, Any], e: Mapping[str, Any], match: Mapping[str, Any] | None = None) -> dict[str, str]:
    """How to make each budget match for one comparison (framework ``f``, end-to-end ``e``; ``match``: the
    computed token match)."""
    k = round(f["frames_used_per_question"])
    m = match or {}
    if m.get("spec"):
        tokens = (
            f"{m['spec']} (memory_tokens={m['memory_tokens']} computed: predicted "
            f"{m['predicted_input_tokens_per_question']:.0f} input tokens per question against "
            f"{m['end_to_end_input_tokens_per_question']:.0f} end to end)"
        )
    else:
        tokens = str(m.get("note") or "not computed")
    return {
        "frames": f"the end-to-end system under frames#{k}" if k >= 1 else "not available (no frames used)",
        "calls": "the framework's single pass: object-centric:chunks=1,chunk_frames=64,retrieval=all,<backbone> "
        "(1 + Q calls per video)",
        "tokens": tokens,
    }


def backbone_label(model: str) -> str | None:
    """The backbone model label of an ``object-centric:...`` model (None: not a framework, or offline)."""
    if not model.startswith("object-centric:"):
        return None
    try:
        opts = parse_spec(ModelSpec.parse(model))
    except Exception:  # noqa: BLE001 - a label this version cannot parse is simply not compared
        return None
    return None if opts.offline else ModelSpec.parse(opts.backbone).label


def latency_split(latency: Mapping[str, Mapping[str, Any]], n: int, n_videos: int | None) -> dict[str, Any]:
    """H.12's latency split from the store's per-call latencies: one-off preprocessing (the once-per-video stages'
    distinct calls, summed, per video) and per query (the per-query stages' uses, summed, per question), and per
    stage the median of its distinct calls. Wall-clock of single calls as the store recorded them (one run, the
    run's concurrency); the paper's medians over N runs are ``framework.latency``'s."""
    pre = sum(float(v.get("sent_s") or 0.0) for st, v in latency.items() if st in PER_VIDEO_STAGES)
    per_q = sum(float(v.get("used_s") or 0.0) for st, v in latency.items() if st not in PER_VIDEO_STAGES)
    return {
        "preprocessing_s_per_video": pre / n_videos if n_videos else None,
        "preprocessing_s_total": pre,
        "per_query_s": per_q / n if n else None,
        "median_s_per_call": {st: v.get("median_s") for st, v in sorted(latency.items())},
    }


def system_budget(block: Mapping[str, Any], n_videos: int | None = None) -> dict[str, Any]:
    """Per question (trial) of one system: calls, frames and tokens, used and spent, and per stage; tokens per
    frame (input tokens over frames sent, by the stages that send frames: text included, so an upper bound) and
    the latency split (``n_videos``: the videos its questions are about)."""
    n = max(1, int(block.get("n_trials") or 0))
    stages = block.get("stages") or {}

    def per_q(key: str) -> float:
        return sum(int(s.get(key, 0)) for s in stages.values()) / n

    per_stage = {
        st: {
            "calls_spent": s["calls"],
            "uses": s["uses"],
            "frames_sent": s["frames_sent"],
            "input_tokens_per_frame": s["input_tokens_sent"] / s["frames_sent"] if s["frames_sent"] else None,
            "frames_used_per_question": s["frames_used"] / n,
            "input_tokens_sent": s["input_tokens_sent"],
            "output_tokens_sent": s["output_tokens_sent"],
            "input_tokens_used_per_question": s["input_tokens_used"] / n,
            "output_tokens_used_per_question": s["output_tokens_used"] / n,
        }
        for st, s in sorted(stages.items())
    }

    def h12(used: str, sent: str) -> float:
        """H.12's accounting per question: per-video stages once (sent), per-query stages per question (used)."""
        return sum(int(v.get(sent if st in PER_VIDEO_STAGES else used, 0)) for st, v in stages.items()) / n

    frames_h12 = h12("frames_used", "frames_sent")
    framed = [v for v in stages.values() if v.get("frames_sent")]
    return {
        "n_questions": int(block.get("n_trials") or 0),
        "n_videos": n_videos,
        "input_tokens_per_frame": sum(v["input_tokens_sent"] for v in framed) / sum(v["frames_sent"] for v in framed)
        if framed
        else None,
        "latency": latency_split(block.get("latency") or {}, n, n_videos),
        "calls_per_question": h12("uses", "calls"),
        "frames_per_question": frames_h12,
        "input_tokens_per_question": h12("input_tokens_used", "input_tokens_sent"),
        "output_tokens_per_question": h12("output_tokens_used", "output_tokens_sent"),
        "frame_tokens_at_256_per_question": TOKENS_PER_FRAME_H12 * frames_h12,
        "calls_used_per_question": per_q("uses"),
        "calls_spent_per_question": per_q("calls"),
        "frames_used_per_question": per_q("frames_used"),
        "frames_sent_per_question": per_q("frames_sent"),
        "input_tokens_used_per_question": per_q("input_tokens_used"),
        "output_tokens_used_per_question": per_q("output_tokens_used"),
        "input_tokens_spent_per_question": per_q("input_tokens_sent"),
        "output_tokens_spent_per_question": per_q("output_tokens_sent"),
        "stages": per_stage,
    }


def budgets(
    usage: Mapping[str, Mapping[str, Any]] | None,
    n_videos: Mapping[tuple[str, str], int] | None = None,
    memory: Mapping[tuple[str, str], list[int]] | None = None,
) -> dict[str, Any]:
    """``results["budget"]``: every system's budget and the framework / end-to-end comparisons (``n_videos``:
    per (model, condition), the videos its questions are about, for the latency per video; ``memory``: per
    (model, condition), each answered question's memory size, for the computed token match)."""
    if not usage:
        return {
            "systems": [],
            "comparisons": [],
            "rule": RULE,
            "note": "not available: no run store (per-stage usage is read from a run's stage calls)",
        }
    videos = n_videos or {}
    systems = [
        {
            "model": m,
            "condition": c,
            "framework": m.startswith("object-centric:"),
            **system_budget(b, videos.get((m, c))),
        }
        for m, conds in sorted(usage.items())
        for c, b in sorted(conds.items())
    ]
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
            comparisons.append(
                {
                    "framework": f["model"],
                    "framework_condition": f["condition"],
                    "end_to_end": e["model"],
                    "end_to_end_condition": e["condition"],
                    "frames_ratio": ratio,
                    "calls_ratio": _ratio(e, f, "calls_used_per_question"),
                    "input_tokens_ratio": _ratio(e, f, "input_tokens_used_per_question"),
                    "calls_h12_ratio": spent["calls"],
                    "input_tokens_h12_ratio": spent["tokens"],
                    "matched_by": matched,
                    "tokens_over": f["input_tokens_per_question"] - e["input_tokens_per_question"],
                    "budget_matched": ratio is not None and abs(ratio - 1) <= FRAMES_TOL,
                    "matching_condition": f"frames#{k}" if k >= 1 else None,
                    "token_match": (
                        tm := token_match(f["model"], f, e, (memory or {}).get((f["model"], f["condition"])))
                    ),
                    "recipes": recipes(f, e, tm),
                }
            )
    return {
        "systems": systems,
        "comparisons": comparisons,
        "rule": RULE,
        "frames_tolerance": FRAMES_TOL,
        "tolerance": TOL,
        "match_keys": dict(MATCH_KEYS),
    }
