"""Report figures as inline SVG (report/svg.py): well-formed for any label, every number as text, the colours
matplotlib's viridis, round tick values; and fast enough that a figure costs nothing beside the page."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vidaudit.core.contract.report import GridFigure, LineFigure, Series
from vidaudit.core.errors import ConfigError
from vidaudit.report.heatmaps import _fmt_value, render_grid
from vidaudit.report.html import figure_drawer
from vidaudit.report.svg import nice_ticks, svg_figure, svg_grid, svg_line, viridis

LABEL = st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=50)
VALUE = st.none() | st.floats(0, 1)


@st.composite
def grids(draw) -> GridFigure:
    rows = draw(st.lists(LABEL, min_size=0, max_size=6))
    cols = draw(st.lists(LABEL, min_size=0, max_size=7))
    values = [[draw(VALUE) for _ in cols] for _ in rows]
    notes = draw(st.booleans())
    return GridFigure(
        id="g",
        title=draw(LABEL),
        group=draw(st.lists(LABEL, max_size=2)),
        row_label=draw(LABEL),
        col_label=draw(LABEL),
        rows=rows,
        cols=cols,
        values=values,
        annotations=[[draw(st.sampled_from(["", "3/4", "<b>&"])) for _ in cols] for _ in rows] if notes else None,
        outlined=[[draw(st.booleans()) for _ in cols] for _ in rows] if draw(st.booleans()) else None,
        value_label=draw(LABEL),
    )


def _cells(svg: str) -> list[ET.Element]:
    return [g for g in ET.fromstring(svg).iter("g") if g.get("class") == "cell"]


@given(grids())
def test_any_grid_is_well_formed_svg_with_every_value_as_text(fig: GridFigure) -> None:
    drawn = svg_grid(fig)
    root = ET.fromstring(drawn.svg)  # every label escaped, whatever it holds
    assert root.tag == "svg" and float(root.get("width")) > 0 and float(root.get("height")) > 0
    assert root.get("aria-label") == drawn.alt and fig.value_label in drawn.alt
    cells = _cells(drawn.svg)
    assert len(cells) == len(fig.rows) * len(fig.cols)
    for g in cells:
        r, c = int(g.get("data-row")), int(g.get("data-col"))
        v = fig.values[r][c]
        texts = {t.get("class"): "".join(t.itertext()) for t in g.iter("text")}
        if v is not None:
            assert texts["v"] == _fmt_value(v)
            assert g.find("rect") is not None and g.find("rect").get("fill", "").startswith("#")
        assert g.find("title").text.startswith(f"{fig.rows[r]} · {fig.cols[c]}: ")
        outlined = [x for x in g.iter("rect") if x.get("class") == "outlined"]
        assert len(outlined) == (1 if fig.outlined and fig.outlined[r][c] else 0)
    labels = ["".join(t.itertext()) for t in ET.fromstring(drawn.svg).iter("text") if t.get("class") == "row-label"]
    assert [x.rstrip("…") for x in labels] == [r[: len(x.rstrip("…"))] for r, x in zip(fig.rows, labels, strict=True)]


def test_rows_are_drawn_bottom_to_top_and_colours_follow_the_value() -> None:
    fig = GridFigure(
        id="g", title="t", row_label="N", col_label="F", rows=["0", "1"], cols=["a"], values=[[0.0], [1.0]]
    )
    cells = {int(g.get("data-row")): g for g in _cells(svg_grid(fig).svg)}
    y0, y1 = (float(cells[r].find("rect").get("y")) for r in (0, 1))
    assert y1 < y0  # row 1 above row 0, as in the PNG (origin lower)
    assert cells[0].find("rect").get("fill") == "#440154" and cells[1].find("rect").get("fill") == "#fde725"
    ink = {r: cells[r].find("text").get("fill") for r in (0, 1)}
    assert ink == {0: "#ffffff", 1: "#111111"}  # readable on dark and on light cells


def test_viridis_matches_matplotlib() -> None:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    for i in range(101):
        want = [round(255 * x) for x in cmap(i / 100)[:3]]
        assert max(abs(a - b) for a, b in zip(viridis(i / 100), want, strict=True)) <= 3, i


@given(st.floats(-1e6, 1e6), st.floats(1e-6, 1e6), st.integers(2, 8))
def test_nice_ticks_are_round_and_inside(lo: float, width: float, n: int) -> None:
    hi = lo + width
    ticks = nice_ticks(lo, hi, n)
    assert ticks == sorted(ticks) and 1 <= len(ticks) <= 3 * n + 2
    slack = width * 1e-6 + abs(lo) * 1e-12  # float rounding of k * step
    assert all(lo - slack <= t <= hi + slack for t in ticks)


@given(st.lists(st.none() | st.floats(-5, 5), min_size=1, max_size=9), st.data())
def test_any_line_figure_is_well_formed(ys: list[float | None], data) -> None:
    x = [float(i) for i in range(len(ys))]
    band = data.draw(st.booleans())
    series = [
        Series(
            name=data.draw(LABEL),
            y=ys,
            low=[None if v is None else v - 0.1 for v in ys] if band else None,
            high=[None if v is None else v + 0.1 for v in ys] if band else None,
        )
    ]
    fig = LineFigure(id="l", title="t", x_label=data.draw(LABEL), y_label="y", x=x, series=series)
    root = ET.fromstring(svg_line(fig).svg)
    runs = sum(1 for i, v in enumerate(ys) if v is not None and (i == 0 or ys[i - 1] is None))
    assert len([p for p in root.iter("polyline")]) == runs  # a missing value breaks the line, as in matplotlib
    assert len([c for c in root.iter("circle")]) == sum(v is not None for v in ys)
    assert len([p for p in root.iter("polygon")]) == (runs if band else 0)


def test_an_empty_line_figure_says_so() -> None:
    svg = svg_line(LineFigure(id="l", title="t", x_label="x", y_label="y", x=[], series=[])).svg
    assert "no series" in svg and ET.fromstring(svg) is not None


def test_svg_costs_nothing_beside_png() -> None:
    fig = GridFigure(
        id="g",
        title="t",
        row_label="N",
        col_label="F",
        rows=[str(i) for i in range(12)],
        cols=[str(j) for j in range(8)],
        values=[[(i * j % 10) / 10 for j in range(8)] for i in range(12)],
        annotations=[[f"{i}/{j + 1}" for j in range(8)] for i in range(12)],
    )
    render_grid(fig)  # matplotlib imported and warm
    t = time.process_time()
    render_grid(fig)
    png_s = time.process_time() - t
    t = time.process_time()
    for _ in range(10):
        svg_figure(fig)
    svg_s = (time.process_time() - t) / 10
    assert svg_s * 10 < png_s, (svg_s, png_s)


def test_an_unknown_figure_format_is_refused() -> None:
    with pytest.raises(ConfigError, match="--figures 'pdf': choose one of svg, png"):
        figure_drawer("pdf")
    with pytest.raises(TypeError):
        svg_figure("not a figure")  # type: ignore[arg-type]
