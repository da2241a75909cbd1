"""Capability-surface heatmaps: one N x F grid of exact-match accuracy per model x condition x domain.

The numbers come from report.json's ``cells``; this module only draws them. Each cell is
annotated with its accuracy and k/n so that a reader never has to trust a colour alone,
and cells inside the reported count boundary are outlined, so the reliable operating
region is visible on the surface itself (paper section 4, Figure 3).
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidaudit.core.errors import DataError
from vidaudit.report.tables import dig

NO_FREQUENCY = "n/a"  # column label for cells without a frequency (the N = 0 no-event controls)


@dataclass(frozen=True)
class Heatmap:
    """One rendered surface: the PNG and the grid it shows (kept so tests and alt text can read it)."""

    model: str
    condition: str
    domain: str
    counts: tuple[int, ...]  # row labels, N ascending
    frequencies: tuple[str, ...]  # column labels, F ascending ("n/a" first when present)
    accuracy: tuple[tuple[float | None, ...], ...]  # [row][col], None where the grid has no cell
    png_b64: str
    alt: str

    @property
    def key(self) -> str:
        """A stable, attribute-safe id for the page."""
        return "heatmap-" + "-".join(_slug(p) for p in (self.model, self.condition, self.domain))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


def format_frequency(value: Any) -> str:
    """Render a frequency the way report.json keys it ("0.5", "1", "2.5")."""
    if value is None:
        return NO_FREQUENCY
    f = float(value)
    return str(int(f)) if f.is_integer() else f"{f:g}"


def _frequency_sort_key(label: str) -> float:
    return -1.0 if label == NO_FREQUENCY else float(label)


def group_cells(cells: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str], list[Mapping[str, Any]]]:
    """Group report cells by (model, condition, domain), in first-seen order; reject malformed cells."""
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    required = ("model", "condition", "domain", "n_events", "n", "correct")
    for i, cell in enumerate(cells):
        if not isinstance(cell, Mapping):
            raise DataError(f"report cells[{i}] is {type(cell).__name__}, expected an object; regenerate report.json")
        missing = [k for k in required if k not in cell]
        if missing:
            raise DataError(f"report cells[{i}] lacks {', '.join(missing)}; every cell needs {', '.join(required)}")
        key = (str(cell["model"]), str(cell["condition"]), str(cell["domain"]))
        groups.setdefault(key, []).append(cell)
    return groups


def _cell_accuracy(cell: Mapping[str, Any]) -> float | None:
    acc = cell.get("accuracy")
    if acc is None and cell.get("n"):
        acc = cell["correct"] / cell["n"]
    if acc is None:
        return None
    acc = float(acc)
    if not math.isfinite(acc) or not 0.0 <= acc <= 1.0:
        raise DataError(f"cell accuracy {acc!r} for {cell.get('model')}/{cell.get('domain')} is outside [0, 1]")
    return acc


def surface_grid(cells: Sequence[Mapping[str, Any]]) -> tuple[list[int], list[str], list[list[Mapping[str, Any] | None]]]:
    """Arrange one group's cells into rows N (ascending) x columns F (ascending); duplicates are an error."""
    counts = sorted({int(c["n_events"]) for c in cells})
    freqs = sorted({format_frequency(c.get("frequency_hz")) for c in cells}, key=_frequency_sort_key)
    grid: list[list[Mapping[str, Any] | None]] = [[None] * len(freqs) for _ in counts]
    for c in cells:
        r, col = counts.index(int(c["n_events"])), freqs.index(format_frequency(c.get("frequency_hz")))
        if grid[r][col] is not None:
            raise DataError(
                f"two cells for {c['model']}/{c['condition']}/{c['domain']} at N={c['n_events']}, "
                f"F={format_frequency(c.get('frequency_hz'))}; aggregate trials into one cell per (N, F)"
            )
        grid[r][col] = c
    return counts, freqs, grid


def _reliable_mask(counts: list[int], freqs: list[str], boundary: Mapping[str, Any] | None) -> np.ndarray:
    """Cells inside the reported count boundary N*(F): positive N up to the boundary at that F."""
    mask = np.zeros((len(counts), len(freqs)), dtype=bool)
    if not boundary:
        return mask
    for col, f in enumerate(freqs):
        value = boundary.get(f)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            for r, n in enumerate(counts):
                mask[r, col] = 0 < n <= value
    return mask


def render_heatmap(
    model: str,
    condition: str,
    domain: str,
    cells: Sequence[Mapping[str, Any]],
    count_boundary: Mapping[str, Any] | None = None,
) -> Heatmap:
    """Draw one surface as a PNG (matplotlib, Agg backend, no global state touched)."""
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    counts, freqs, grid = surface_grid(cells)
    acc = np.full((len(counts), len(freqs)), np.nan)
    for r, row in enumerate(grid):
        for col, cell in enumerate(row):
            if cell is not None:
                a = _cell_accuracy(cell)
                acc[r, col] = np.nan if a is None else a
    reliable = _reliable_mask(counts, freqs, count_boundary)

    # Fixed margins in inches instead of a layout engine: constrained layout measures every
    # annotation and doubles the drawing time of a text-heavy grid.
    cell_w, cell_h = 0.62, 0.42
    left, right, bottom, top, bar = 0.62, 0.95, 0.55, 0.32, 0.12
    width = left + cell_w * max(len(freqs), 3) + right
    height = bottom + cell_h * max(len(counts), 3) + top
    fig = Figure(figsize=(width, height), dpi=110)
    ax = fig.add_axes((left / width, bottom / height, 1 - (left + right) / width, 1 - (bottom + top) / height))
    cax = fig.add_axes((1 - (right - 0.15) / width, bottom / height, bar / width, 1 - (bottom + top) / height))
    cmap = _colormap()
    norm = Normalize(0.0, 1.0)
    image = ax.imshow(np.ma.masked_invalid(acc), cmap=cmap, norm=norm, aspect="auto", origin="lower")
    ax.set_facecolor("#e8e8e8")
    ax.set_xticks(range(len(freqs)), [f if f == NO_FREQUENCY else f"{f}" for f in freqs], fontsize=8)
    ax.set_yticks(range(len(counts)), [str(n) for n in counts], fontsize=8)
    ax.set_xlabel("event frequency F (Hz)", fontsize=8.5)
    ax.set_ylabel("event count N", fontsize=8.5)
    ax.set_title(f"{model} · {condition} · {domain}", fontsize=9, loc="left")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    for r, row in enumerate(grid):
        for col, cell in enumerate(row):
            if cell is None:
                continue
            a = acc[r, col]
            label = "—" if np.isnan(a) else f"{a:.2f}"
            colour = "#111111" if np.isnan(a) or _luminance(cmap(norm(a))) > 0.5 else "#ffffff"
            ax.text(col, r + 0.13, label, ha="center", va="center", fontsize=8, color=colour, weight="bold")
            ax.text(col, r - 0.2, f"{int(cell['correct'])}/{int(cell['n'])}", ha="center", va="center",
                    fontsize=6.5, color=colour)
            if reliable[r, col]:
                ax.add_patch(Rectangle((col - 0.47, r - 0.47), 0.94, 0.94, fill=False, edgecolor="#111111",
                                       linewidth=1.4))
    bar = fig.colorbar(image, cax=cax)
    bar.ax.tick_params(labelsize=7)
    bar.set_label("exact-match accuracy", fontsize=7.5)

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    png_b64 = base64.b64encode(buffer.getvalue()).decode("ascii")
    rows = tuple(tuple(None if np.isnan(v) else float(v) for v in row) for row in acc)
    return Heatmap(model, condition, domain, tuple(counts), tuple(freqs), rows, png_b64,
                   _alt_text(model, condition, domain, counts, freqs, acc))


def _colormap():
    from matplotlib import colormaps

    return colormaps["viridis"]


def _luminance(rgba: tuple[float, float, float, float]) -> float:
    r, g, b = rgba[:3]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _alt_text(model: str, condition: str, domain: str, counts: list[int], freqs: list[str], acc: np.ndarray) -> str:
    """Alt text that carries the numbers' gist for readers who cannot see the image."""
    finite = acc[np.isfinite(acc)]
    mean = f"{float(finite.mean()):.2f}" if finite.size else "n/a"
    return (f"Accuracy heatmap for {model}, condition {condition}, domain {domain}: "
            f"N {counts[0]}–{counts[-1]} (rows) by F {freqs[0]}–{freqs[-1]} Hz (columns), "
            f"{finite.size} cells, mean accuracy {mean}.")


def render_heatmaps(report: Mapping[str, Any]) -> list[Heatmap]:
    """Every surface in the report, sorted by model, condition, domain."""
    cells = report.get("cells")
    if not isinstance(cells, list):
        raise DataError("report.json has no 'cells' list; run scoring before building the report")
    boundaries = report.get("count_boundary") or {}
    out = []
    for (model, condition, domain), group in sorted(group_cells(cells).items()):
        boundary = dig(boundaries, model, condition, domain)
        boundary = boundary if isinstance(boundary, Mapping) else None
        out.append(render_heatmap(model, condition, domain, group, boundary))
    return out
