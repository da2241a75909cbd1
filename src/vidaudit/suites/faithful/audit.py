"""The faithful suite's part of ``vidaudit audit``: synthetic worlds at a budget, and A_faith, A_target, A_sub
and A_cons read back from ``report.json`` (``results.detail``), beside STRAND's Table 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vidaudit.sdk import AuditPart, PartFigures, ProfileFigure, published
from vidaudit.suites.faithful.generate import generate, specs_for

#: one frame a second, as the suite's docs run it (docs/faithful.md)
CONDITIONS = ("frames@1",)
#: budget -> (preset, worlds; None: the preset's). paper: 40 worlds of the standard preset, about 400
#: targets, the size of STRAND's 382 temporally constrained targets
BUDGETS: dict[str, tuple[str, int | None]] = {
    "smoke": ("smoke", None),
    "standard": ("standard", None),
    "paper": ("standard", 40),
}
METRICS = ("a_faith", "a_target", "a_sub", "a_cons")
NAMES = {"a_faith": "A_faith", "a_target": "A_target", "a_sub": "A_sub", "a_cons": "A_cons"}
SOURCE = (
    "STRAND: Benchmarking and Improving Object-Centric Spatio-Temporal Monitoring in Video LLMs, Table 1 (on "
    "the STRAND release, not on these synthetic worlds)"
)
#: STRAND Table 1 (%): model -> (A_faith, A_target, A_sub, A_cons)
PAPER_TABLE1: dict[str, tuple[float, float, float, float]] = {
    "Ours (Gemini-3-Flash)": (59.4, 77.1, 76.3, 81.3),
    "Ours (Qwen3-VL-235B)": (54.2, 74.0, 72.6, 78.1),
    "Gemini-3.1-Pro": (38.9, 61.4, 64.9, 69.2),
    "Gemini-3-Flash": (28.7, 48.7, 61.7, 69.9),
    "Gemma-4-27B": (35.8, 55.5, 60.0, 72.7),
    "GPT-5": (20.0, 32.5, 43.2, 70.5),
    "Claude-4.6-Sonnet": (30.2, 48.3, 62.9, 73.2),
    "InternVL3-78B": (29.7, 49.9, 66.1, 71.0),
    "Qwen3-VL-32B Think": (46.1, 65.0, 70.6, 78.1),
    "Qwen3.5-27B": (45.5, 68.4, 66.7, 73.3),
    "Cosmos-Reason2-8B": (41.5, 54.7, 74.7, 83.7),
    "VideoRFT-7B": (16.4, 38.6, 55.1, 50.8),
    "Video-R1-7B": (4.3, 24.8, 19.6, 21.9),
    "VideoMind-7B": (18.9, 50.3, 37.9, 43.2),
    "TraveLER": (22.0, 50.6, 41.8, 49.3),
    "SeViLA": (26.1, 51.4, 59.6, 56.8),
}


def audit_parts(budget: str) -> list[AuditPart]:
    preset, seeds = BUDGETS[budget]
    return [AuditPart(name="faithful", preset=preset, conditions=CONDITIONS, seeds=seeds)]


def generate_part(
    part: AuditPart, out: Path, *, workers: int | None = None, on_progress: Callable[[int, int], None] | None = None
) -> Path:
    return generate(specs_for(part.preset, part.seeds), out, workers=workers, on_progress=on_progress).manifest


def _figure(name: str, m: Mapping[str, Any] | None) -> ProfileFigure:
    """A rate's figure with the interval the report says to read for claims about a model: the one over source
    videos (targets of one video are correlated), Wilson's over targets only where there is none."""
    m = m or {}
    lo, hi, note = m.get("ci_low"), m.get("ci_high"), "" if "k" in m else "conditional on correct targets"
    if m.get("video_ci_low") is not None:
        lo, hi, note = m["video_ci_low"], m["video_ci_high"], f"interval over {m['n_videos']} source videos"
    elif m.get("n_videos") == 1:
        note = "one source video: the interval speaks for that video only"
    return ProfileFigure(name=name, value=m.get("value"), ci_low=lo, ci_high=hi, k=m.get("k"), n=m.get("n"), note=note)


def profile_figures(part: AuditPart, results: Mapping[str, Any]) -> PartFigures:
    detail: Mapping[str, Any] = results.get("detail") or {}
    conditions = {c for per in detail.values() for c in per}
    by_model: dict[str, list[ProfileFigure]] = {}
    for model, per in sorted(detail.items()):
        for cond, d in sorted(per.items()):
            at = f" @ {cond}" if len(conditions) > 1 else ""
            by_model.setdefault(model, []).extend(_figure(NAMES[m] + at, d.get(m)) for m in METRICS)
    chance_src = (results.get("references") or {}).get("chance_expectation") or {}
    chance = {NAMES[m]: float(v) for m, v in chance_src.items() if m in NAMES and v is not None}
    pub = {
        name: [published(NAMES[m], v) for m, v in zip(METRICS, row, strict=True)] for name, row in PAPER_TABLE1.items()
    }
    return PartFigures(by_model=by_model, chance=chance, published=pub, published_source=SOURCE)
