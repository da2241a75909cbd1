"""Report figures as inline SVG, written from the figure's numbers in Python: nothing drawn per pixel.

A page of matplotlib PNGs cost ~0.15 s of CPU per figure (the demo's 24 figures were most of a report's
CPU); an SVG string costs about a millisecond, stays sharp at any zoom, and keeps every number as text
in the page (a cell's value and annotation are ``<text>``; each cell has a ``<title>`` tooltip naming its
row and column). The same :class:`~vidaudit.core.contract.report.GridFigure` / ``LineFigure`` as the PNG
path (``heatmaps.py``, kept for papers: ``vidaudit report --figures png``) with the same conventions:
rows bottom to top, viridis over ``vmin..vmax``, grey cells without data, outlined cells framed,
long labels shortened with an ellipsis (the page shows the full name beside the figure).

Every text is escaped: labels come from model names, condition ids and data files. The markup uses
presentation attributes only (no ``style`` element, no script, no external reference), so the page's
Content-Security-Policy is unchanged.
"""

from __future__ import annotations

import math
from html import escape
from itertools import groupby
from typing import NamedTuple

from vidaudit.core.contract.report import GridFigure, LineFigure
from vidaudit.report.heatmaps import (
    _SERIES_COLOURS,
    COL_LABEL_CHARS,
    LEGEND_CHARS,
    ROW_LABEL_CHARS,
    _fmt_value,
    _shorten,
    by_kind,
    grid_alt_text,
    line_alt_text,
)

#: matplotlib's viridis at 33 evenly spaced points; colours between them are interpolated linearly
_VIRIDIS = (
    "440154",
    "470d60",
    "48186a",
    "482374",
    "472d7b",
    "453781",
    "424086",
    "3e4989",
    "3b528b",
    "375b8d",
    "33638d",
    "2f6b8e",
    "2c728e",
    "297a8e",
    "26828e",
    "23898e",
    "21918c",
    "1f988b",
    "1fa088",
    "22a785",
    "28ae80",
    "32b67a",
    "3fbc73",
    "4ec36b",
    "5ec962",
    "70cf57",
    "84d44b",
    "98d83e",
    "addc30",
    "c2df23",
    "d8e219",
    "ece51b",
    "fde725",
)
_RGB = tuple(tuple(int(h[i : i + 2], 16) for i in (0, 2, 4)) for h in _VIRIDIS)
_FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"'
_CHAR_PX = 6.4  # rough width of one 11 px character, for margins
_NO_DATA = "#e8e8e8"


class SvgFigure(NamedTuple):
    """A figure as SVG markup (escaped, ready for the page) and its alt text."""

    svg: str
    alt: str


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def viridis(t: float) -> tuple[int, int, int]:
    """The viridis colour at ``t`` in [0, 1] (clipped)."""
    t = min(1.0, max(0.0, t)) * (len(_RGB) - 1)
    i = min(int(t), len(_RGB) - 2)
    f = t - i
    a, b = _RGB[i], _RGB[i + 1]
    return (round(a[0] + (b[0] - a[0]) * f), round(a[1] + (b[1] - a[1]) * f), round(a[2] + (b[2] - a[2]) * f))


def _hex(rgb: tuple[int, int, int]) -> str:
    return f"#{rgb[0]:02x}{rgb[1]:02x}{rgb[2]:02x}"


def _light(rgb: tuple[int, int, int]) -> bool:
    r, g, b = (c / 255 for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5


def _finite(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering ``lo..hi`` (about ``n`` of them)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-9))
    first = math.ceil(lo / step - 1e-9)
    out = []
    k = first
    while k * step <= hi + step * 1e-9:
        out.append(round(k * step, 12))
        k += 1
    return out


def _tick_label(v: float) -> str:
    return f"{v:.10g}" if abs(v) >= 1e-12 else "0"


def _text(
    x: float,
    y: float,
    text: str,
    *,
    size: float = 11,
    anchor: str = "middle",
    fill: str = "#111111",
    weight: str | None = None,
    extra: str = "",
) -> str:
    w = f' font-weight="{weight}"' if weight else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{w}{extra}>'
        f"{_e(text)}</text>"
    )


def svg_grid(fig: GridFigure) -> SvgFigure:
    """One heatmap: a rect and its value (and annotation) per cell, a colour bar, the axes' names."""
    n_rows, n_cols = len(fig.rows), len(fig.cols)
    row_names = [_shorten(r, ROW_LABEL_CHARS) for r in fig.rows]
    col_names = [_shorten(c, COL_LABEL_CHARS) for c in fig.cols]
    row_chars = max((len(r) for r in row_names), default=1)
    col_chars = max((len(c) for c in col_names), default=1)
    slanted = col_chars > 12
    cell_w = max(52.0, min(100.0, 12 + min(col_chars, 12) * _CHAR_PX))
    cell_h = 34.0
    left = 30 + row_chars * _CHAR_PX
    bottom = 40 + (0.75 * col_chars * _CHAR_PX if slanted else 0.0)
    if slanted:
        left = max(left, 0.8 * col_chars * _CHAR_PX)
    top, right = 10.0, 84.0
    gw, gh = cell_w * max(n_cols, 1), cell_h * max(n_rows, 1)
    width, height = left + gw + right, top + gh + bottom
    span = (fig.vmax - fig.vmin) or 1.0
    parts = [
        f'<svg class="figure-svg figure-svg-grid" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{_e(grid_alt_text(fig))}" '
        f'{_FONT} data-rows="{n_rows}" data-cols="{n_cols}">',
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{gw:.1f}" height="{gh:.1f}" fill="{_NO_DATA}"/>',
    ]
    for r in range(n_rows):
        y = top + (n_rows - 1 - r) * cell_h  # row 0 at the bottom
        for c in range(n_cols):
            x = left + c * cell_w
            v = _finite(fig.values[r][c])
            note = fig.annotations[r][c] if fig.annotations else ""
            rgb = viridis((v - fig.vmin) / span) if v is not None else None
            shown = "—" if v is None else _fmt_value(v)
            tip = f"{fig.rows[r]} · {fig.cols[c]}: {shown}" + (f" ({note})" if note else "")
            cell = [f'<g class="cell" data-row="{r}" data-col="{c}"><title>{_e(tip)}</title>']
            if rgb is not None:
                cell.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell_w:.1f}" height="{cell_h:.1f}" fill="{_hex(rgb)}"/>'
                )
            if v is not None or note:
                ink = "#111111" if rgb is None or _light(rgb) else "#ffffff"
                cx = x + cell_w / 2
                if note:
                    cell.append(_text(cx, y + cell_h / 2 - 2, shown, fill=ink, weight="bold", extra=' class="v"'))
                    cell.append(
                        _text(cx, y + cell_h / 2 + 11, _shorten(note, 12), size=9, fill=ink, extra=' class="note"')
                    )
                else:
                    cell.append(_text(cx, y + cell_h / 2 + 4, shown, fill=ink, weight="bold", extra=' class="v"'))
            if fig.outlined and fig.outlined[r][c]:
                cell.append(
                    f'<rect x="{x + 2:.1f}" y="{y + 2:.1f}" width="{cell_w - 4:.1f}" height="{cell_h - 4:.1f}" '
                    'fill="none" stroke="#111111" stroke-width="1.6" class="outlined"/>'
                )
            cell.append("</g>")
            parts.append("".join(cell))
    if not n_rows or not n_cols:
        parts.append(_text(left + gw / 2, top + gh / 2 + 4, "no cells", fill="#555555"))
    for r, name in enumerate(row_names):
        parts.append(
            _text(
                left - 6,
                top + (n_rows - 1 - r) * cell_h + cell_h / 2 + 4,
                name,
                anchor="end",
                extra=' class="row-label"',
            )
        )
    for c, name in enumerate(col_names):
        x, y = left + c * cell_w + cell_w / 2, top + gh + 14
        if slanted:
            parts.append(
                _text(x, y, name, anchor="end", extra=f' transform="rotate(-35 {x:.1f} {y:.1f})" class="col-label"')
            )
        else:
            parts.append(_text(x, y, name, extra=' class="col-label"'))
    parts.append(_text(left + gw / 2, height - 6, fig.col_label, size=11.5, extra=' class="axis-label"'))
    yl = top + gh / 2
    parts.append(
        _text(12, yl, fig.row_label, size=11.5, extra=f' transform="rotate(-90 12 {yl:.1f})" class="axis-label"')
    )
    parts.append(_colour_bar(left + gw + 14, top, gh, fig))
    parts.append("</svg>")
    return SvgFigure("".join(parts), grid_alt_text(fig))


def _colour_bar(x: float, y: float, h: float, fig: GridFigure) -> str:
    """A vertical bar of viridis bands (no gradient element: ids would have to be unique in the page)."""
    n = 32
    bands = "".join(
        f'<rect x="{x:.1f}" y="{y + h - (i + 1) * h / n:.2f}" width="12" height="{h / n + 0.3:.2f}" '
        f'fill="{_hex(viridis((i + 0.5) / n))}"/>'
        for i in range(n)
    )
    span = (fig.vmax - fig.vmin) or 1.0
    ticks = "".join(
        _text(x + 16, y + h - (t - fig.vmin) / span * h + 4, _tick_label(t), size=9.5, anchor="start")
        for t in nice_ticks(fig.vmin, fig.vmax, 4)
    )
    ly = y + h / 2
    label = _text(x + 66, ly, fig.value_label, size=10.5, extra=f' transform="rotate(-90 {x + 66:.1f} {ly:.1f})"')
    return f'<g class="colour-bar">{bands}{ticks}{label}</g>'


def _runs(ok: list[bool]) -> list[tuple[int, int]]:
    """(start, stop) of each run of True: where a line is drawn unbroken."""
    out, i = [], 0
    for value, group in groupby(ok):
        n = len(list(group))
        if value:
            out.append((i, i + n))
        i += n
    return out


def svg_line(fig: LineFigure) -> SvgFigure:
    """Lines over a shared x axis, markers at the points, a shaded band where a series has low/high."""
    xs = [_finite(v) for v in fig.x]
    fx = [v for v in xs if v is not None]
    series = [(s, [_finite(v) for v in s.y]) for s in fig.series]
    fy = [v for _, ys in series for v in ys if v is not None]
    fy += [v for s in fig.series for b in (s.low, s.high) if b is not None for v in map(_finite, b) if v is not None]
    x0, x1 = (min(fx), max(fx)) if fx else (0.0, 1.0)
    if x1 <= x0:
        x0, x1 = x0 - 1, x1 + 1
    y0 = fig.y_min if fig.y_min is not None else (min(fy) if fy else 0.0)
    y1 = fig.y_max if fig.y_max is not None else (max(fy) if fy else 1.0)
    y0, y1 = min([y0, *fy]), max([y1, *fy])  # a value outside the stated range widens it, never drops off
    if y1 <= y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    legend_chars = max((len(_shorten(s.name, LEGEND_CHARS)) for s in fig.series), default=0)
    left, top, pw, ph, bottom = 56.0, 10.0, 360.0, 230.0, 42.0
    right = 16 + (30 + legend_chars * _CHAR_PX if fig.series else 0)
    width, height = left + pw + right, top + ph + bottom

    def px(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * pw

    def py(v: float) -> float:
        return top + ph - (v - y0) / (y1 - y0) * ph

    def pt(xv: float | None, yv: float | None) -> str | None:
        return None if xv is None or yv is None else f"{px(xv):.1f},{py(yv):.1f}"

    parts = [
        f'<svg class="figure-svg figure-svg-line" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{_e(line_alt_text(fig))}" '
        f'{_FONT} data-series="{len(fig.series)}">'
    ]
    for t in nice_ticks(y0, y1):
        parts.append(f'<line x1="{left:.1f}" x2="{left + pw:.1f}" y1="{py(t):.1f}" y2="{py(t):.1f}" stroke="#e3e7ed"/>')
        parts.append(_text(left - 6, py(t) + 3.5, _tick_label(t), size=9.5, anchor="end"))
    for t in nice_ticks(x0, x1):
        parts.append(f'<line x1="{px(t):.1f}" x2="{px(t):.1f}" y1="{top:.1f}" y2="{top + ph:.1f}" stroke="#e3e7ed"/>')
        parts.append(_text(px(t), top + ph + 14, _tick_label(t), size=9.5))
    parts.append(f'<path d="M{left:.1f},{top:.1f}V{top + ph:.1f}H{left + pw:.1f}" fill="none" stroke="#333333"/>')
    for i, (s, ys) in enumerate(series):
        colour = _SERIES_COLOURS[i % len(_SERIES_COLOURS)]
        g = [f'<g class="series" data-name="{_e(s.name)}">']
        if s.low is not None and s.high is not None:
            lo = [pt(xs[k], _finite(v)) for k, v in enumerate(s.low)]
            hi = [pt(xs[k], _finite(v)) for k, v in enumerate(s.high)]
            for a, b in _runs([lo[k] is not None and hi[k] is not None for k in range(len(xs))]):
                ring = [p for p in [*hi[a:b], *reversed(lo[a:b])] if p is not None]
                g.append(f'<polygon points="{" ".join(ring)}" fill="{colour}" fill-opacity="0.15"/>')
        line = [pt(xs[k], ys[k]) for k in range(len(xs))]
        for a, b in _runs([p is not None for p in line]):
            pts = " ".join(p for p in line[a:b] if p is not None)
            g.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.8"/>')
        for p, xv, yv in zip(line, xs, ys, strict=True):
            if p is not None and xv is not None and yv is not None:
                cx, cy = p.split(",")
                g.append(
                    f'<circle cx="{cx}" cy="{cy}" r="2.8" fill="{colour}">'
                    f"<title>{_e(s.name)}: {_e(_tick_label(xv))}, {yv:.3f}</title></circle>"
                )
        ly = top + 8 + i * 16
        g.append(
            f'<line x1="{left + pw + 12:.1f}" x2="{left + pw + 30:.1f}" y1="{ly:.1f}" y2="{ly:.1f}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        g.append(_text(left + pw + 34, ly + 3.5, _shorten(s.name, LEGEND_CHARS), size=10, anchor="start"))
        g.append("</g>")
        parts.append("".join(g))
    if not fig.series:
        parts.append(_text(left + pw / 2, top + ph / 2, "no series", fill="#555555"))
    parts.append(_text(left + pw / 2, height - 6, fig.x_label, size=11.5, extra=' class="axis-label"'))
    yl = top + ph / 2
    parts.append(
        _text(12, yl, fig.y_label, size=11.5, extra=f' transform="rotate(-90 12 {yl:.1f})" class="axis-label"')
    )
    parts.append("</svg>")
    return SvgFigure("".join(parts), line_alt_text(fig))


def svg_figure(fig: GridFigure | LineFigure) -> SvgFigure:
    """Any report figure as SVG."""
    return by_kind(fig, svg_grid, svg_line)
