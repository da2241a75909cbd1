"""A cross-frame item as samples (asked with and without abstention), and the strips a masked condition shows of
a sample's video (planned, nothing rendered): what ``generate`` writes into each sample and dataset.json."""

from __future__ import annotations

from typing import Any

from vidaudit.sdk import Sample, VideoRef, parse_condition, plan_chain, select_frames
from vidaudit.suites.stress.cross_frame.nextqa import Item
from vidaudit.suites.stress.cross_frame.options import ABSTAIN, CHANCE_ABSTAIN, CHANCE_FORCED, letters

PROBE = "cross_frame"


def item_samples(it: Item, rel: str, video: VideoRef, preset: str, source_kind: str) -> list[Sample]:
    out = []
    for abstention in (False, True):
        opts = list(it.options) + ([ABSTAIN] if abstention else [])
        lets = letters(abstention)
        params = {
            "probe": PROBE,
            "item": it.item_id,
            "video_name": it.video,
            "qid": it.qid,
            "split": it.split,
            "type": it.type,
            "abstention": abstention,
            "options": opts,
            "letters": list(lets),
            "chance": CHANCE_ABSTAIN if abstention else CHANCE_FORCED,
            "answer_text": it.options[it.answer],
            "source": source_kind,
            "template": it.template,
            "template_args": dict(it.template_args),
            "preset": preset,
            "line": it.line,
        }
        sid = f"stress-{PROBE}-{it.item_id}-{'abs' if abstention else 'forced'}"
        out.append(
            Sample(
                sample_id=sid, suite="stress", params=params, question=it.question, answer=lets[it.answer], video=video
            )
        )
    return out


def strip_coverage(sample: Sample, conditions: list[str]) -> dict[str, float]:
    """Per masked condition (its video part), the share of the S strips that the frames it sends show at least
    once (planned: nothing is rendered)."""
    out: dict[str, float] = {}
    for text in conditions:
        cond = parse_condition(text, "mcq")
        if not cond.perturbations:
            continue
        pin = plan_chain(sample, cond.perturbations)
        assert pin.strip_info is not None
        sets, where = pin.strip_info["sets"], pin.strip_info["set_index"]
        seen = {j for i in select_frames(sample, cond, pin.video).indices for j in sets[where[i]]}
        out[text] = round(len(seen) / int(pin.strip_info["S"]), 6)
    return out


def coverage_summary(samples: list[Sample], conditions: list[str]) -> dict[str, dict[str, Any]]:
    """Per masked condition: the mean share of strips shown, and how many videos are sent too few to show all."""
    out = {}
    for c in conditions:
        vals = [s.params["coverage"][c] for s in samples if c in s.params.get("coverage", {})]
        if vals:
            out[c] = {
                "mean_strips_shown": round(sum(vals) / len(vals), 6),
                "n_samples": len(vals),
                "n_missing_strips": sum(v < 1 for v in vals),
            }
    return out
