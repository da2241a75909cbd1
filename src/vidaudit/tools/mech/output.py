"""What every probe writes: ``OUT/NAME.json`` (its numbers, with its figure as report data) and ``OUT/NAME.svg``.

The figure is a ``report.model.LineFigure`` (per-layer curves), stored in the JSON under ``figure`` so the
report's mechanism section (``mech.report_section``) draws the same data; the SVG is a plain rendering of
it for a reader without the report. Both files are written to a temporary name and renamed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from vidaudit.core.contract.report import LineFigure, Series
from vidaudit.core.fileio import write_json_atomic, write_text_atomic

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def svg(fig: LineFigure, width: int = 560, height: int = 320) -> str:
    """A minimal line chart of ``fig`` (axes, one polyline per series, a legend)."""
    pad_l, pad_r, pad_t, pad_b = 50, 150, 30, 40
    ys = [v for s in fig.series for v in s.y if v is not None]
    lo = fig.y_min if fig.y_min is not None else min(ys, default=0.0)
    hi = fig.y_max if fig.y_max is not None else max(ys, default=1.0)
    if hi <= lo:
        hi = lo + 1.0
    x0, x1 = min(fig.x), max(fig.x)
    span = (x1 - x0) or 1.0

    def px(x: float) -> float:
        return pad_l + (x - x0) / span * (width - pad_l - pad_r)

    def py(y: float) -> float:
        return height - pad_b - (y - lo) / (hi - lo) * (height - pad_t - pad_b)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        f'font-size="11"><rect width="100%" height="100%" fill="white"/>',
        f'<text x="{pad_l}" y="18" font-size="13">{escape(fig.title)}</text>',
        f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - pad_r}" y2="{height - pad_b}" stroke="black"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{height - pad_b}" stroke="black"/>',
        f'<text x="{(width - pad_r + pad_l) / 2}" y="{height - 8}" text-anchor="middle">{escape(fig.x_label)}</text>',
        f'<text x="4" y="{pad_t - 8}">{escape(fig.y_label)} [{lo:.3g}, {hi:.3g}]</text>',
    ]
    for x in fig.x:
        out.append(f'<text x="{px(x):.1f}" y="{height - pad_b + 14}" text-anchor="middle">{x:g}</text>')
    for i, s in enumerate(fig.series):
        c = COLOURS[i % len(COLOURS)]
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(fig.x, s.y, strict=True) if y is not None)
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{pts}"/>')
        out.append(f'<text x="{width - pad_r + 8}" y="{pad_t + 14 * i + 10}" fill="{c}">{escape(s.name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def write_probe(out_dir: str | Path, name: str, payload: dict[str, Any], figure: LineFigure) -> dict[str, Path]:
    """Write ``NAME.json`` (``payload`` plus ``figure``) and ``NAME.svg`` under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    js, pic = out / f"{name}.json", out / f"{name}.svg"
    write_json_atomic(js, {**payload, "probe": name, "figure": figure.model_dump(mode="json")})
    write_text_atomic(pic, svg(figure))
    return {"json": js, "svg": pic}


def curve(
    fig_id: str,
    title: str,
    x: Sequence[float],
    series: Mapping[str, Sequence[float | None]],
    *,
    x_label: str = "layer",
    y_label: str,
    y_min: float | None = None,
    y_max: float | None = None,
    caption: str = "",
) -> LineFigure:
    clean = {k: [None if v is None or v != v else float(v) for v in ys] for k, ys in series.items()}
    return LineFigure(
        id=fig_id,
        title=title,
        caption=caption,
        x_label=x_label,
        y_label=y_label,
        x=[float(v) for v in x],
        series=[Series(name=k, y=v) for k, v in clean.items()],
        y_min=y_min,
        y_max=y_max,
    )
