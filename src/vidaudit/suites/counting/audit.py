"""The counting suite's part of ``vidaudit audit``: the grid at a budget, and its headline read back from
``report.json``: exact match over every planned trial (Wilson 95%), the maximum count boundary (Table 2) and
the frequency boundary F*(N=1) of the weakest domain, beside the paper's Table 2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import vidaudit.suites.counting.grid as g
from vidaudit.sdk import AuditPart, PartFigures, ProfileFigure, accuracy, published
from vidaudit.suites.counting.generate import generate

#: frames at 1 fps: the rate the paper gave Gemini (A.3), and a condition every provider can serve
CONDITIONS = ("frames@1",)
#: budget -> (preset, seeds per cell; None: the preset's)
BUDGETS: dict[str, tuple[str, int | None]] = {
    "smoke": ("smoke", None),
    "standard": ("paper", 1),
    "paper": ("paper", None),
}
SOURCE = (
    "The Low-Frequency Trap: Video-Language Models Fail at Simple Event Bookkeeping, Table 2 (EM is the mean "
    "of the three domains' EM, 730 trials each)"
)
#: Table 2: model -> (input, bounce EM, blink EM, state EM, maximum count boundary)
PAPER_TABLE2: dict[str, tuple[str, float, float, float, int]] = {
    "Gemini 3.6 Flash": ("1 FPS", 19.6, 6.4, 37.1, 12),
    "Qwen3-VL-8B": ("2 FPS", 12.4, 10.9, 26.6, 2),
    "Qwen3-VL-32B": ("2 FPS", 15.5, 13.2, 26.2, 1),
    "Qwen3-VL-235B": ("2 FPS", 19.2, 12.0, 26.4, 1),
    "InternVL3.5-8B": ("16 frames", 9.0, 11.2, 26.2, 3),
    "InternVL3.5-30B-A3B": ("16 frames", 9.2, 10.4, 24.5, 3),
    "InternVL3.5-38B": ("16 frames", 12.8, 9.9, 32.0, 6),
}


def audit_parts(budget: str) -> list[AuditPart]:
    preset, seeds = BUDGETS[budget]
    return [AuditPart(name="counting", preset=preset, conditions=CONDITIONS, seeds=seeds)]


def generate_part(
    part: AuditPart, out: Path, *, workers: int | None = None, on_progress: Callable[[int, int], None] | None = None
) -> Path:
    points = g.preset(part.preset) if part.seeds is None else g.grid(seeds=range(part.seeds))
    return generate(points, out, workers=workers, skip_existing=True, on_progress=on_progress).manifest


def _weakest(values: Any) -> Any:
    """The lowest boundary of several (a ``"<x"`` text is below every tested value)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    below = [v for v in vals if isinstance(v, str)]
    return min(below, key=lambda v: float(v.lstrip("<"))) if below else min(vals)


def profile_figures(part: AuditPart, results: Mapping[str, Any]) -> PartFigures:
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for cell in results.get("cells") or []:
        key = (str(cell["model"]), str(cell["condition"]))
        k, n = counts.get(key, (0, 0))
        counts[key] = (k + int(cell.get("correct") or 0), n + int(cell.get("n") or 0))
    conditions = {c for _, c in counts}
    by_model: dict[str, list[ProfileFigure]] = {}
    for (model, cond), (k, n) in sorted(counts.items()):
        at = f" @ {cond}" if len(conditions) > 1 else ""
        boundary = (((results.get("max_count_boundary") or {}).get(model) or {}).get(cond) or {}).get("all") or {}
        freq = ((results.get("frequency_boundary") or {}).get(model) or {}).get(cond) or {}
        by_model.setdefault(model, []).extend(
            [
                accuracy(f"exact match{at}", k, n),
                ProfileFigure(name=f"max count boundary{at}", kind="boundary", value=boundary.get("value")),
                ProfileFigure(
                    name=f"F*(N=1){at}",
                    kind="boundary",
                    value=_weakest(d.get("1") for d in freq.values()),
                    note="Hz, weakest domain",
                ),
            ]
        )
    pub = {
        name: [
            published("exact match", (b + lt + s) / 3),
            ProfileFigure(name="max count boundary", kind="boundary", value=cb, note=f"published; {inp}"),
        ]
        for name, (inp, b, lt, s, cb) in PAPER_TABLE2.items()
    }
    return PartFigures(
        by_model=by_model,
        published=pub,
        published_source=SOURCE,
        notes=["chance depends on the answer range (0-12 for chance): no single chance column"],
    )
