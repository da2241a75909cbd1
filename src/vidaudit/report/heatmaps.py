"""Drawing primitives for report figures: a grid heatmap and a line figure, as inline PNGs.

The numbers come from a :class:`~vidaudit.core.contract.report.GridFigure` or
:class:`~vidaudit.core.contract.report.LineFigure` (figures are stored as data in report.json); this
module only draws them. The figure's name is not drawn into the picture (where a long one would be cut
off): the page shows it in full as text beside it, and the alt text carries it. A grid cell carries its value and an optional annotation (e.g. k/n) so
that a reader never has to trust a colour alone; outlined cells are framed; cells without data
are grey.

All text is drawn literally: labels come from model names, condition ids and data files, and a
``$`` in them must neither crash matplotlib's mathtext nor be typeset (``parse_math=False``,
``usetex=False`` on every text). Figures use fixed margins in inches instead of a layout engine:
constrained layout measures every annotation and doubles the drawing time of a text-heavy grid.
Matplotlib is used through ``Figure`` objects only (Agg canvas, no pyplot, no global state).
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np

from vidaudit.core.contract.report import GridFigure, LineFigure

_LITERAL: dict[str, Any] = {"parse_math": False, "usetex": False}
_DPI = 110
_CHAR_IN = 0.062  # rough width of one 8 pt character, for fixed margins
#: a label longer than this is shortened with an ellipsis (the page and the alt text carry the full text)
ROW_LABEL_CHARS = 40
COL_LABEL_CHARS = 40
LEGEND_CHARS = 48
T = TypeVar("T")
_SERIES_COLOURS = ("#1f5fbf", "#e07b00", "#2e7d32", "#c62828", "#6a3d9a", "#00838f", "#8d6e63", "#546e7a")


class RenderedFigure(NamedTuple):
    """A drawn figure: the PNG as base64 (for a data: URL) and alt text carrying the numbers' gist."""

    png_b64: str
    alt: str


def figure_heading(fig: GridFigure | LineFigure) -> str:
    """The figure's full name: its group then its title ("model · condition · domain")."""
    return " · ".join([*fig.group, fig.title]) if fig.group else fig.title


def _literal_texts(fig: Any) -> None:
    """Belt and braces: no text of the figure is parsed as mathtext or TeX, whoever created it."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        t.set_parse_math(False)
        t.set_usetex(False)


def _png(fig: Any) -> str:
    """The figure as a 256-colour PNG: a heatmap, its labels and their anti-aliasing fit a palette with no
    visible change, at about a quarter of the bytes of a true-colour PNG (the demo's 24 figures: 773 KB
    of base64 in the page before)."""
    from PIL import Image

    _literal_texts(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(out, format="PNG", optimize=True)
    return base64.b64encode(out.getvalue()).decode("ascii")


def _luminance(rgba: tuple[float, ...]) -> float:
    r, g, b = rgba[:3]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _fmt_value(v: float) -> str:
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}"


def _shorten(text: str, n: int = 28) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def render_grid(fig: GridFigure) -> RenderedFigure:
    """Draw one grid heatmap: rows bottom to top, annotated and outlined cells, grey for None."""
    from matplotlib import colormaps
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    n_rows, n_cols = len(fig.rows), len(fig.cols)
    values = np.array([[np.nan if v is None else float(v) for v in row] for row in fig.values], dtype=float).reshape(
        n_rows, n_cols
    )
    values[~np.isfinite(values)] = np.nan

    row_names = [_shorten(r, ROW_LABEL_CHARS) for r in fig.rows]
    col_names = [_shorten(c, COL_LABEL_CHARS) for c in fig.cols]
    row_chars = max((len(r) for r in row_names), default=1)
    col_chars = max((len(c) for c in col_names), default=1)
    slanted = col_chars > 12  # long column names (conditions, models) are drawn at 35 degrees, not cut
    cell_w = max(0.62, min(1.2, 0.1 + min(col_chars, 12) * _CHAR_IN))
    cell_h = 0.42
    left = 0.42 + row_chars * _CHAR_IN
    right, bottom, top, bar = 0.95, 0.55 + (0.45 * col_chars * _CHAR_IN if slanted else 0.0), 0.14, 0.12
    if slanted:
        left = max(left, 0.6 * col_chars * _CHAR_IN)  # the first slanted name reaches left of the grid
    width = left + cell_w * max(n_cols, 3) + right
    height = bottom + cell_h * max(n_rows, 3) + top
    figure = Figure(figsize=(width, height), dpi=_DPI)
    axes_box = (left / width, bottom / height, 1 - (left + right) / width, 1 - (bottom + top) / height)
    ax = figure.add_axes(axes_box)
    cax = figure.add_axes((1 - (right - 0.15) / width, bottom / height, bar / width, axes_box[3]))
    cmap = colormaps["viridis"]
    norm = Normalize(fig.vmin, fig.vmax)
    shown = values if values.size else np.full((1, 1), np.nan)
    image = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, norm=norm, aspect="auto", origin="lower")
    ax.set_facecolor("#e8e8e8")
    ax.set_xticks(range(n_cols), col_names, fontsize=8, **_LITERAL)
    if slanted:
        for label in ax.get_xticklabels():
            label.set_rotation(35)
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")
    ax.set_yticks(range(n_rows), row_names, fontsize=8, **_LITERAL)
    ax.set_xlabel(fig.col_label, fontsize=8.5, **_LITERAL)
    ax.set_ylabel(fig.row_label, fontsize=8.5, **_LITERAL)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if not values.size:
        ax.text(0, 0, "no cells", ha="center", va="center", fontsize=8, color="#555555", **_LITERAL)
    for r in range(n_rows):
        for c in range(n_cols):
            v = values[r, c]
            note = fig.annotations[r][c] if fig.annotations else ""
            if np.isnan(v) and not note:
                continue
            colour = "#111111" if np.isnan(v) or _luminance(cmap(norm(v))) > 0.5 else "#ffffff"
            cell_text = "—" if np.isnan(v) else _fmt_value(v)
            if note:
                ax.text(
                    c,
                    r + 0.13,
                    cell_text,
                    ha="center",
                    va="center",
                    fontsize=8,
                    color=colour,
                    weight="bold",
                    **_LITERAL,
                )
                ax.text(
                    c, r - 0.2, _shorten(note, 12), ha="center", va="center", fontsize=6.5, color=colour, **_LITERAL
                )
            else:
                ax.text(c, r, cell_text, ha="center", va="center", fontsize=8, color=colour, weight="bold", **_LITERAL)
    if fig.outlined:
        for r in range(n_rows):
            for c in range(n_cols):
                if fig.outlined[r][c]:
                    # add_artist, not add_patch: the limits are the image's, and add_patch's limit update
                    # walks the transform tree (tens of ms per patch once the cells carry text)
                    ax.add_artist(
                        Rectangle((c - 0.47, r - 0.47), 0.94, 0.94, fill=False, edgecolor="#111111", linewidth=1.4)
                    )
    colourbar = figure.colorbar(image, cax=cax)
    colourbar.ax.tick_params(labelsize=7)
    colourbar.set_label(fig.value_label, fontsize=7.5, **_LITERAL)
    return RenderedFigure(_png(figure), grid_alt_text(fig, values))


def grid_alt_text(fig: GridFigure, values: np.ndarray | None = None) -> str:
    """Alt text for a grid: what it shows, its axes and the mean of its cells."""
    if values is None:
        values = np.array([[np.nan if v is None else float(v) for v in row] for row in fig.values], dtype=float)
    finite = values[np.isfinite(values)] if values.size else values
    mean = f"{float(finite.mean()):.2f}" if finite.size else "n/a"
    rows = f"{fig.rows[0]}–{fig.rows[-1]}" if fig.rows else "none"
    cols = f"{fig.cols[0]}–{fig.cols[-1]}" if fig.cols else "none"
    return (
        f"Heatmap of {fig.value_label} for {figure_heading(fig)}: {fig.row_label} {rows} (rows) by "
        f"{fig.col_label} {cols} (columns), {finite.size} cells with data, mean {mean}."
    )


def _series_array(vals: list[float | None] | None, n: int) -> np.ndarray:
    if vals is None:
        return np.full(n, np.nan)
    out = np.array([np.nan if v is None else float(v) for v in vals], dtype=float)
    out[~np.isfinite(out)] = np.nan
    return out


def render_line(fig: LineFigure) -> RenderedFigure:
    """Draw lines over a shared x axis; a series with ``low``/``high`` gets a shaded band."""
    from matplotlib.figure import Figure

    x = np.array(fig.x, dtype=float)
    legend_chars = max((len(_shorten(s.name, LEGEND_CHARS)) for s in fig.series), default=0)
    left, bottom, top = 0.62, 0.5, 0.14
    right = 0.2 + (0.4 + legend_chars * _CHAR_IN if fig.series else 0.0)
    plot_w, plot_h = 3.4, 2.3
    width, height = left + plot_w + right, bottom + plot_h + top
    figure = Figure(figsize=(width, height), dpi=_DPI)
    ax = figure.add_axes((left / width, bottom / height, plot_w / width, plot_h / height))
    finite_x = x[np.isfinite(x)] if x.size else x
    for i, s in enumerate(fig.series):
        colour = _SERIES_COLOURS[i % len(_SERIES_COLOURS)]
        y = _series_array(s.y, len(x))
        if s.low is not None and s.high is not None:
            lo, hi = _series_array(s.low, len(x)), _series_array(s.high, len(x))
            ok = np.isfinite(lo) & np.isfinite(hi)
            if ok.any():
                ax.fill_between(
                    x, np.where(ok, lo, np.nan), np.where(ok, hi, np.nan), color=colour, alpha=0.15, linewidth=0
                )
        ax.plot(x, y, marker="o", markersize=3.5, linewidth=1.6, color=colour, label=_shorten(s.name, LEGEND_CHARS))
    if fig.y_min is not None or fig.y_max is not None:
        ax.set_ylim(fig.y_min, fig.y_max)
    if finite_x.size == 1:
        ax.set_xlim(finite_x[0] - 1, finite_x[0] + 1)
    ax.set_xlabel(fig.x_label, fontsize=8.5, **_LITERAL)
    ax.set_ylabel(fig.y_label, fontsize=8.5, **_LITERAL)
    ax.tick_params(labelsize=7.5)
    ax.grid(True, color="#e3e7ed", linewidth=0.8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if fig.series:
        legend = ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7.5, frameon=False)
        for t in legend.get_texts():
            t.set_parse_math(False)
            t.set_usetex(False)
    else:
        ax.text(
            0.5,
            0.5,
            "no series",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=8,
            color="#555555",
            **_LITERAL,
        )
    return RenderedFigure(_png(figure), line_alt_text(fig))


def line_alt_text(fig: LineFigure) -> str:
    """Alt text for a line figure: its axes and each series' range."""
    parts = []
    for s in fig.series[:8]:
        ys = [v for v in s.y if v is not None and math.isfinite(v)]
        parts.append(f"{s.name}: {min(ys):.2f}–{max(ys):.2f}" if ys else f"{s.name}: no values")
    more = f" and {len(fig.series) - 8} more" if len(fig.series) > 8 else ""
    xs = f"{min(fig.x):g}–{max(fig.x):g}" if fig.x else "none"
    return (
        f"Line chart of {fig.y_label} against {fig.x_label} ({xs}) for {figure_heading(fig)}: "
        + ("; ".join(parts) if parts else "no series")
        + more
        + "."
    )


def by_kind(fig: GridFigure | LineFigure, grid: Callable[[GridFigure], T], line: Callable[[LineFigure], T]) -> T:
    """``grid(fig)`` or ``line(fig)`` by the figure's type: one place that knows the figure kinds."""
    if isinstance(fig, GridFigure):
        return grid(fig)
    if isinstance(fig, LineFigure):
        return line(fig)
    raise TypeError(f"cannot draw a {type(fig).__name__}; report figures are GridFigure or LineFigure")


def render_figure(fig: GridFigure | LineFigure) -> RenderedFigure:
    """Draw any report figure."""
    return by_kind(fig, render_grid, render_line)
