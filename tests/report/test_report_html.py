"""The report writer without a browser: files, JSON validation, self-containment, escaping, figures, tables.

Two reports are written: the counting report, built the way a run builds it (real ``score_trial``
records on hand-made samples -> ``aggregate`` -> ``counting_sections``) and shown with counting's
viewer; and a report that no suite made (a 2 x 3 grid and a line figure with arbitrary labels),
which proves that ``vidaudit.report`` is generic.
"""

from __future__ import annotations

import ast
import base64
import html as html_lib
import itertools
import json
import random
import re
from html.parser import HTMLParser
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vidaudit.report.html
from vidaudit.core.contract.records import ParseResult, ScoreRecord
from vidaudit.core.contract.report import (
    EventTimeline,
    GridFigure,
    LineFigure,
    Report,
    Section,
    Series,
    SuiteReport,
    Table,
    TimelineEvent,
    ViewerColumn,
    ViewerFrame,
    ViewerSpec,
    ViewerTrial,
)
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.report.embed import script_json
from vidaudit.report.heatmaps import render_grid, render_line
from vidaudit.report.markdown import markdown_grid, markdown_table, render_markdown
from vidaudit.report.viewer import (
    MAX_FRAMES_PER_TRIAL,
    MAX_RAW_TEXT_CHARS,
    MAX_THUMBNAIL_SIDE,
    attach_frames,
    select_trials_for_viewer,
    thumbnail_jpeg_b64,
    viewer_payload,
)
from vidaudit.report.write import make_report, write_report
from vidaudit.suites.counting.aggregate import aggregate, paired_difference
from vidaudit.suites.counting.scoring import score_trial
from vidaudit.suites.counting.sections import counting_sections, surface_figure
from vidaudit.suites.counting.viewer import COUNTING_VIEWER, viewer_trial

MODELS = ["gemini-3.6-flash", "qwen3-vl-8b"]
CONDITIONS = ["native@1fps", "frames@2fps"]
DOMAINS = ["bounce_ball", "state_machine"]
COUNTS = [0, 1, 2, 3, 4, 6]
FREQS = [0.5, 1.0, 2.0, 4.0]
SEEDS = 4
MALICIOUS = "<script>alert(1)</script><img src=x onerror=alert(2)>"
INJECTED = (
    "I counted 3.</pre><script>window.__pwned = 1</script>"
    '<img src=x onerror="window.__pwned2 = 1"><b>bold?</b> \\boxed{3}'
)
NOTES = [
    "cells where frames@1 cannot show the events: bounce_ball F>=2.0 Hz",
    "τ = 0.80; Wilson boundaries use the 95% lower bound",
]
#: labels that would crash matplotlib's mathtext (or be typeset) if it parsed them
DOLLAR_LABELS = ["a$b$c", "$\\notacommand{x}$", "cost $5 | $6", "50% $\\frac{1}{0}$"]


# --------------------------------------------------------------------------- counting fixtures


def sample(domain: str, n: int, f: float, seed: int) -> Sample:
    times = [2.0 + i / f for i in range(n)]
    after = {"bounce_ball": lambda i: ("left", "right")[i % 2], "state_machine": lambda i: "ABCD"[(i + 1) % 4]}
    events = tuple(
        Event(t=t, frame=int(t * 30), type="e", state_after=after[domain](i), count=i + 1) for i, t in enumerate(times)
    )
    return Sample(
        sample_id=f"{domain}-N{n}-F{f}-s{seed}",
        suite="counting",
        params={"domain": domain, "n_events": n, "frequency_hz": f, "seed": seed},
        question="?",
        answer=n,
        trace=Trace(events=events),
        video=VideoRef(
            path="v.mp4",
            sha256=f"vid-{domain}-{n}-{f}-{seed}",
            fps=30.0,
            width=8,
            height=8,
            n_frames=720,
            duration_s=max(12.0, 4.0 + n / f),
        ),
    )


def ledger(s: Sample, count: int | None = None, shift: float = 0.0) -> str:
    lines = [f"- {e.t + shift:.2f}s event, running count {e.count}" for e in s.trace.events]
    return "\n".join(lines + [f"Final answer: \\boxed{{{len(lines) if count is None else count}}}"])


def score_record(
    s: Sample, text: str | None, model: str, condition: str, status: str = "ok", trial_id: str | None = None
) -> ScoreRecord:
    """A ScoreRecord as the score stage writes it: counting's TrialScore.to_dict() in ``metrics``."""
    ts = score_trial(s, text if status == "ok" else None, status)
    parse = ParseResult(value=ts.predicted_count, method=ts.parse_method, span=ts.parse_span) if ts.scored else None
    return ScoreRecord(
        trial_id=trial_id or f"{model}|{condition}|{s.sample_id}",
        sample_id=s.sample_id,
        suite="counting",
        model=model,
        condition=condition,
        group_id=s.group_id,
        status=status,
        correct=ts.correct if ts.scored else None,
        parse=parse,
        params=dict(s.params),
        metrics=ts.to_dict(),
        usage={"input_tokens": 1200, "output_tokens": 80},
        cost_usd=0.002 if status == "ok" else None,
    )


def make_records(seed: int = 7, models: list[str] = MODELS) -> tuple[list[ScoreRecord], dict[str, Sample]]:
    """A small N x F design: accuracy falls with N x F, a few errors, some correct counts with no trace."""
    rng = np.random.default_rng(seed)
    records, samples = [], {}
    for (mi, model), condition, domain in itertools.product(enumerate(models), CONDITIONS, DOMAINS):
        for n, f in itertools.product(COUNTS, FREQS):
            if n == 0 and f != 1.0:
                continue  # N = 0 appears once, at the nominal frequency
            for sd in range(SEEDS):
                s = sample(domain, n, f, sd)
                samples[s.sample_id] = s
                p = 0.97 if n == 0 else max(0.0, 1.0 - (0.08 + 0.04 * mi) * n * f)
                u = rng.random()
                if u < 0.03:
                    records.append(score_record(s, None, model, condition, status="api_error"))
                elif u < 0.1:
                    records.append(score_record(s, f"\\boxed{{{n}}}", model, condition))  # right count, no trace
                elif rng.random() < p:
                    records.append(score_record(s, ledger(s, shift=float(rng.normal(0, 0.05))), model, condition))
                else:
                    records.append(score_record(s, ledger(s, count=n + 1), model, condition))
    return records, samples


def make_results(records: list[ScoreRecord]) -> dict:
    flat = [r.flat() for r in records]
    results = aggregate(flat)
    models = list(dict.fromkeys(r.model for r in records))
    pairs = [((m, CONDITIONS[0]), (m, CONDITIONS[1])) for m in models]
    pairs += [((models[0], c), (m, c)) for c in CONDITIONS for m in models[1:]]
    results["paired_differences"] = [paired_difference(flat, a, b, n_boot=200) for a, b in pairs]
    return results


def counting_report(records: list[ScoreRecord], results: dict) -> Report:
    models = sorted({r.model for r in records})
    return make_report(
        "counting",
        SuiteReport(results=results, sections=counting_sections(results), notes=NOTES),
        models=models,
        conditions=sorted({r.condition for r in records}),
        settings={m: {"temperature": 0.0, "max_tokens": 2048, "fps": None} for m in models},
        source={"run_dir": "runs/2026-08-06-lft"},
        n_records=len(records),
        created_at="2026-08-06T12:00:00Z",
    )


def _frame(t: float, width: int = 320, height: int = 180) -> np.ndarray:
    img = np.full((height, width, 3), 235, np.uint8)
    x = int(20 + (width - 40) * (t % 4) / 4)
    cv2.circle(img, (x, height // 2), 14, (200, 40, 40), -1, lineType=cv2.LINE_AA)
    cv2.putText(img, f"{t:.1f}s", (8, 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (30, 30, 30), 1, cv2.LINE_AA)
    return img


def _frames(n: int) -> list[tuple[int, float, np.ndarray]]:
    return [(15 * i, 0.5 + i, _frame(0.5 + i)) for i in range(n)]


def make_trials() -> list[ViewerTrial]:
    """Four trials through counting's viewer_trial: injected text, a faithful trace, no events, an API error."""
    s_inject = sample("bounce_ball", 4, 1.0, 90)
    inject_text = INJECTED + "\n" + MALICIOUS + "\nEvents at 2.10s, 3.10s, 4.10s and 9.40s."
    s_faith = sample("bounce_ball", 3, 0.5, 91)
    s_qwen = sample("state_machine", 2, 2.0, 92)
    s_err = sample("bounce_ball", 4, 1.0, 93)
    specs = [
        ("t-inject", s_inject, inject_text, MODELS[0], CONDITIONS[0], "ok", 6),
        ("t-faithful", s_faith, "Events: 2.05s, 4.1s, 5.9s. \\boxed{3}", MODELS[0], CONDITIONS[0], "ok", 6),
        ("t-qwen", s_qwen, "No events. \\boxed{0}", MODELS[1], CONDITIONS[1], "ok", 0),
        ("t-error", s_err, None, MODELS[0], CONDITIONS[0], "api_error", 0),
    ]
    out = []
    for tid, s, text, model, cond, status, n_frames in specs:
        rec = score_record(s, text, model, cond, status=status, trial_id=tid)
        trial = viewer_trial(rec, s, text)
        out.append(attach_frames(trial, _frames(n_frames), width=120) if n_frames else trial)
    return out


@pytest.fixture(scope="module")
def counting_data() -> tuple[list[ScoreRecord], dict[str, Sample], dict]:
    records, samples = make_records()
    return records, samples, make_results(records)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, counting_data) -> tuple[Report, dict[str, Path], str]:
    records, _, results = counting_data
    report = counting_report(records, results)
    paths = write_report(
        report, make_trials(), COUNTING_VIEWER, tmp_path_factory.mktemp("report"), n_trials_total=1460, figures="png"
    )  # the papers' export; the default page: written_svg
    return report, paths, paths["html"].read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def written_svg(tmp_path_factory: pytest.TempPathFactory, counting_data) -> tuple[Report, dict[str, Path], str]:
    """The same report with the default figures: inline SVG drawn from the numbers."""
    records, _, results = counting_data
    report = counting_report(records, results)
    paths = write_report(
        report, make_trials(), COUNTING_VIEWER, tmp_path_factory.mktemp("report-svg"), n_trials_total=1460
    )
    return report, paths, paths["html"].read_text(encoding="utf-8")


# --------------------------------------------------------------------------- a report no suite made


def generic_report() -> tuple[Report, list[ViewerTrial], ViewerSpec]:
    grid = GridFigure(
        id="g1",
        title="probe $x$ accuracy",
        group=["model a$b$c", "cond $\\alpha$"],
        row_label="depth $d$",
        col_label="width | w",
        rows=["shallow", "deep"],
        cols=["narrow", "$wide$", "a|b"],
        values=[[0.9, None, 0.1], [0.5, 0.25, 1.0]],
        annotations=[["9/10", "", "1/10"], ["5/10", "1/4", "$4/4$"]],
        outlined=[[True, False, False], [False, False, True]],
        value_label="rate $r$",
    )
    line = LineFigure(
        id="l1",
        title="drift over time",
        group=["model a$b$c"],
        x_label="step $t$",
        y_label="score",
        x=[1, 2, 4],
        y_min=0.0,
        y_max=1.0,
        series=[
            Series(name="arm $A$", y=[0.2, 0.4, None], low=[0.1, 0.3, None], high=[0.3, 0.5, None]),
            Series(name="arm B", y=[0.8, 0.7, 0.6]),
        ],
    )
    table = Table(
        id="t1",
        title="Probe table",
        columns=["probe", "score"],
        rows=[["x|y", "0.5"], ["$z$", "—"]],
        key_columns=1,
        caption="A table with awkward cells.",
    )
    report = Report(
        suite="stress",
        vidaudit_version="0.1.0",
        created_at="2026-08-07T00:00:00Z",
        models=["model a$b$c"],
        conditions=["cond $\\alpha$"],
        settings={"model a$b$c": {"temperature": 0.7, "extra": {"k": [1, 2]}}},
        notes=["a headline note <b>not bold</b>"],
        sections=[
            Section(
                id="probes",
                title="Probe results",
                lede="What the probes found.",
                figures=[grid, line],
                tables=[table],
                notes=["section note"],
            ),
            Section(id="empty", title="Nothing here", tables=[Table(id="t2", title="Empty", columns=["a"])]),
        ],
        results={"score": 0.5, "by_probe": {"x": 1}},
    )
    spec = ViewerSpec(
        group_label="probe",
        columns=[ViewerColumn(key="score", label="score", numeric=True), ViewerColumn(key="verdict", label="verdict")],
    )
    trials = [
        ViewerTrial(
            trial_id=f"g-{i}",
            sample_id=f"s{i}",
            model="model a$b$c",
            condition="cond $\\alpha$",
            group=("x", "y")[i % 2],
            status="ok" if i < 5 else "timeout",
            correct=(i % 3 == 0) if i < 5 else None,
            columns={"score": i / 7, "verdict": f"v{i}"},
            facts=[("question", f"q{i} <i>?</i>")],
            raw_text=f"answer {i} {MALICIOUS}",
            grid_point=[i % 2],
        )
        for i in range(6)
    ]
    return report, trials, spec


# --------------------------------------------------------------------------- files and safety


class _Resources(HTMLParser):
    """Collect every attribute that can make a browser fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in {"src", "href", "srcset", "poster", "data", "action", "xlink:href", "background"} and value:
                self.refs.append((tag, name, value))


def test_three_files_written_and_json_validates(written):
    report, paths, _ = written
    assert set(paths) == {"json", "md", "html"}
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths.values())
    text = paths["json"].read_text(encoding="utf-8")
    assert Report.model_validate_json(text) == report
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["results"]["cells"] == report.results["cells"]
    assert report.suite == "counting" and report.git_revision  # provenance filled in by make_report
    assert not list(paths["json"].parent.glob(".*tmp*")), "atomic writes must not leave temporary files"


def test_html_loads_nothing_from_the_network(written):
    _, _, html = written
    assert "http://" not in html and "https://" not in html
    parser = _Resources()
    parser.feed(html)
    assert parser.refs, "the page has images; the parser should have seen their src"
    for tag, name, value in parser.refs:
        assert value.startswith(("data:image/png;base64,", "data:image/jpeg;base64,", "#")), (tag, name, value[:60])
    assert not re.search(r"url\(\s*['\"]?(?!data:)", html), "CSS must not reference external url()"
    assert "@import" not in html
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    policy = html_lib.unescape(csp.group(1)) if csp else ""
    assert "default-src 'none'" in policy and "script-src 'sha256-" in policy


def test_default_page_draws_svg_and_loads_nothing(written_svg):
    _, _, html = written_svg
    assert "http://" not in html and "https://" not in html and "data:image/png" not in html
    parser = _Resources()
    parser.feed(html)
    for tag, name, value in parser.refs:
        assert value.startswith(("data:image/jpeg;base64,", "#")), (tag, name, value[:60])
    assert "<style" not in html.split("</style>", 1)[1] and "<foreignObject" not in html
    assert html.count("<script") == 2  # the JSON block and our viewer: an SVG brings no script


def _svg_cells(svg: str) -> dict[tuple[int, int], tuple[str, str | None, str]]:
    """(row, col) -> (value text, annotation text or None, tooltip) of an inline SVG heatmap, read as XML."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)  # well-formed: every label escaped
    out = {}
    for g in root.iter("g"):
        if g.get("class") == "cell":
            texts = {t.get("class"): "".join(t.itertext()) for t in g.iter("text")}
            out[(int(g.get("data-row")), int(g.get("data-col")))] = (
                texts.get("v", ""),
                texts.get("note"),
                g.find("title").text,
            )
    return out


def test_each_heatmap_is_an_svg_carrying_its_numbers(written_svg):
    """One inline SVG per model x condition x domain; every cell's value, k/n and tooltip are text in the page,
    equal to the figure's numbers in report.json."""
    from vidaudit.report.heatmaps import _fmt_value

    report, _, html = written_svg
    figures = re.findall(
        r'<figure class="figure figure-grid" id="([^"]+)" data-figure-id="([^"]+)" '
        r'data-group="[^"]+">\s*(<svg class="figure-svg figure-svg-grid".*?</svg>)',
        html,
        re.S,
    )
    combos = {(c["model"], c["condition"], c["domain"]) for c in report.results["cells"]}
    assert len(figures) == len(combos) == len(MODELS) * len(CONDITIONS) * len(DOMAINS)
    by_id = {f.id: f for sec in report.sections for f in sec.figures}
    for _, fid, svg in figures:
        fig = by_id[html_lib.unescape(fid)]
        cells = _svg_cells(svg)
        assert len(cells) == len(fig.rows) * len(fig.cols)
        assert "Heatmap of exact-match accuracy for" in html_lib.unescape(re.search(r'aria-label="([^"]+)"', svg)[1])
        for (r, c), (value, note, tip) in cells.items():
            v = fig.values[r][c]
            assert value == (
                ""
                if v is None and not (fig.annotations and fig.annotations[r][c])
                else "—"
                if v is None
                else _fmt_value(v)
            )
            if fig.annotations and fig.annotations[r][c]:
                assert note == fig.annotations[r][c][:12] or note.endswith("…")
            assert tip.startswith(f"{fig.rows[r]} · {fig.cols[c]}: ")


def test_the_figure_format_changes_no_number(written, written_svg):
    def timeless(path: Path) -> str:
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", path.read_text(encoding="utf-8"))

    assert timeless(written[1]["json"]) == timeless(written_svg[1]["json"])
    assert timeless(written[1]["md"]) == timeless(written_svg[1]["md"])
    with pytest.raises(ConfigError, match="--figures 'jpeg'.*svg, png"):
        write_report(written[0], [], COUNTING_VIEWER, Path("/nonexistent"), figures="jpeg")


def _data_block(html: str) -> dict:
    data = re.search(r'<script type="application/json" id="trials-data">(.*?)</script>', html, re.S).group(1)
    assert not set("<>&") & set(data)
    return json.loads(data)


def test_untrusted_model_text_is_never_markup(written):
    _, _, html = written
    assert MALICIOUS not in html
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold?" not in html
    assert "window.__pwned" in html  # the text is there, escaped, not dropped
    assert html.count("<script") == 2 and html.count("</script") == 2  # the JSON block and our viewer
    payload = _data_block(html)
    assert payload["spec"] == COUNTING_VIEWER.model_dump(mode="json")
    trials = {t["trial_id"]: t for t in payload["trials"]}
    assert trials["t-inject"]["raw_text"].startswith(INJECTED + "\n" + MALICIOUS)


def test_one_surface_per_model_condition_domain(written):
    report, _, html = written
    figures = re.findall(
        r'<figure class="figure figure-grid" id="([^"]+)" data-figure-id="([^"]+)" '
        r'data-group="([^"]+)">\s*<img class="figure-img" src="data:image/png;base64,([^"]+)" '
        r'alt="([^"]+)"',
        html,
    )
    combos = {(c["model"], c["condition"], c["domain"]) for c in report.results["cells"]}
    assert len(figures) == len(combos) == len(MODELS) * len(CONDITIONS) * len(DOMAINS)
    assert {html_lib.unescape(f[1]) for f in figures} == {f"surface:{m}:{c}:{d}" for m, c, d in combos}
    assert len({f[0] for f in figures}) == len(figures)
    for *_, b64, alt in figures:
        png = cv2.imdecode(np.frombuffer(base64.b64decode(b64), np.uint8), cv2.IMREAD_COLOR)
        assert png is not None and png.shape[0] > 150 and png.shape[1] > 250
        assert "Heatmap of exact-match accuracy for" in alt
    # grouped under a heading per model, then per condition
    surfaces = html[html.index('<section id="sec-surfaces"') : html.index('<section id="sec-boundaries"')]
    for model in MODELS:
        assert surfaces.count(f'<h3 class="group level-0">{model}</h3>') == 1
    assert surfaces.count(f'<h4 class="group level-1">{CONDITIONS[0]}</h4>') == len(MODELS)
    nav = re.search(r"<nav>(.*?)</nav>", html, re.S).group(1)
    assert [html_lib.unescape(t) for t in re.findall(r">([^<]+)</a>", nav)] == [
        "Notes",
        "Capability surfaces",
        "Operating boundaries",
        "Accuracy per event count",
        "Maximum count boundary",
        "Operating regions",
        "Trace metrics",
        "Paired differences",
        "Errors, parse failures and usage",
        "Trace viewer",
    ]


def test_markdown_has_header_sections_and_both_boundaries(written):
    report, paths, _ = written
    md = paths["md"].read_text(encoding="utf-8")
    assert md == render_markdown(report)
    for line in (
        "- **suite**: counting",
        "- **created at**: 2026-08-06T12:00:00Z",
        "- **vidaudit version**: 0.1.0",
        f"- **git revision**: {report.git_revision}",
        "- **run dir**: runs/2026-08-06-lft",
        f"- **models**: {', '.join(MODELS)}",
        "- **settings sent**:",
        f"  - {MODELS[0]}: fps=null, max_tokens=2048, temperature=0.0",
    ):
        assert line in md, line
    assert md.index("## Notes") < md.index(NOTES[0]) < md.index("## Capability surfaces")
    order = [
        md.index(f"## {t}\n")
        for t in (
            "Capability surfaces",
            "Operating boundaries",
            "Trace metrics",
            "Paired differences",
            "Errors, parse failures and usage",
        )
    ]
    assert order == sorted(order)
    assert "### Count boundary N*(F)" in md and "### Frequency boundary F*(N)" in md
    count_section = md.split("### Count boundary")[1].split("### Frequency boundary")[0]
    for model, condition, domain in itertools.product(MODELS, CONDITIONS, DOMAINS):
        for rule in ("point", "Wilson"):
            assert f"| {model} | {condition} | {domain} | {rule} |" in count_section
    row = next(
        line
        for line in count_section.splitlines()
        if line.startswith(f"| {MODELS[0]} | {CONDITIONS[0]} | {DOMAINS[0]} | point |")
    )
    expected = report.results["count_boundary"][MODELS[0]][CONDITIONS[0]][DOMAINS[0]]
    values = [v.strip() for v in row.strip("|").split("|")][4:]
    assert values == [
        f"{v:g}" if isinstance(v, float) else str(v) for v in (expected[k] for k in ["0.5", "1.0", "2.0", "4.0"])
    ]
    assert "| F=0.5 | F=1 | F=2 | F=4 |" in count_section
    for heading in (
        "## Trace metrics",
        "## Errors, parse failures and usage",
        "## Notes",
        "### Usage and cost",
        "### Paired differences",
        "### Error taxonomy",
        "### Trace evaluation across N x F regions",
    ):
        assert heading in md, heading
    assert f"| {MODELS[0]} | {CONDITIONS[0]} | macro |" in md
    assert f"| {MODELS[0]} / {CONDITIONS[0]} | {MODELS[0]} / {CONDITIONS[1]} |" in md  # a paired difference
    # each surface as a table of its grid: N rows, F columns with the n/a controls first
    assert f"### {MODELS[0]} · {CONDITIONS[0]}" in md and "#### bounce_ball" in md
    assert "| event count N ↓ / event frequency F (Hz) → | n/a | 0.5 | 1 | 2 | 4 |" in md


def test_surface_places_every_cell_and_outlines_the_count_boundary(counting_data):
    _, _, results = counting_data
    key = (MODELS[0], CONDITIONS[0], DOMAINS[1])
    cells = [c for c in results["cells"] if (c["model"], c["condition"], c["domain"]) == key]
    fig = surface_figure(*key, cells, results["count_boundary"][key[0]][key[1]][key[2]])
    assert fig.rows == [str(n) for n in COUNTS] and fig.cols == ["n/a", "0.5", "1", "2", "4"]
    assert fig.group == [key[0], key[1]] and fig.title == key[2]
    for c in cells:
        col = "n/a" if c["n_events"] == 0 else f"{c['frequency_hz']:g}"
        r, k = fig.rows.index(str(c["n_events"])), fig.cols.index(col)
        assert fig.values[r][k] == c["accuracy"]
        assert fig.annotations[r][k] == f"{c['correct']}/{c['n']}"
    assert fig.values[0][1:] == [None] * 4 and fig.annotations[0][1:] == [""] * 4  # N = 0 only in n/a
    boundary = results["count_boundary"][key[0]][key[1]][key[2]]
    for r, n in enumerate(COUNTS):
        for k, col in enumerate(fig.cols):
            b = boundary.get(f"{float(col):.1f}") if col != "n/a" else None
            assert fig.outlined[r][k] == (isinstance(b, int) and 0 < n <= b), (n, col, b)
    assert any(any(row) for row in fig.outlined), "the fixture should have a reliable region"
    with pytest.raises(DataError, match="two cells"):
        surface_figure(*key, cells + [dict(next(c for c in cells if c["n_events"] == 3))])


def test_counting_sections_tolerate_keys_they_do_not_know(counting_data):
    _, _, results = counting_data
    extra = json.loads(json.dumps(results))
    m, c = MODELS[0], CONDITIONS[0]
    extra["regions"][m][c]["mid_count_new"] = {"bounce_ball": {"em": 0.5, "n": 4, "brand_new": [1, 2]}, "macro": None}
    extra["brand_new_view"] = {m: {c: {"3": {"em": 0.25, "n": 8}}}}
    extra["trace_metrics"][m][c]["macro"]["new_metric"] = 1.0
    sections = counting_sections(extra)
    by_id = {s.id: s for s in sections}
    regions = next(t for t in by_id["regions"].tables if t.id == "regions")
    assert [m, c, "mid_count_new", "bounce_ball"] in [row[:4] for row in regions.rows]
    other = by_id["other"].tables
    assert [t.id for t in other] == ["other_brand_new_view"] and other[0].rows == [[m, c, "3", "0.250", "8"]]
    minimal = counting_sections({"cells": []})
    assert [s.id for s in minimal] == [
        "surfaces",
        "boundaries",
        "per-n",
        "max-count-boundary",
        "regions",
        "trace",
        "paired",
        "errors",
    ]
    with pytest.raises(DataError, match="cells"):
        counting_sections({})


def test_counting_viewer_trial_reads_the_score_record():
    s = sample("bounce_ball", 3, 1.0, 5)
    accidental = score_record(s, "\\boxed{3}", "m", "c")
    t = viewer_trial(accidental, s, "\\boxed{3}")
    assert t.group == "bounce_ball" and t.grid_point == [3, 1.0] and t.correct is True
    assert t.columns == {"n_events": 3, "frequency_hz": 1.0, "predicted": 3, "f1": 0.0}
    assert t.preferred, "a correct count with F1 < 0.8 is accidental correctness"
    assert len(t.timeline.true_events) == 3 and t.timeline.reported_events == [] and t.timeline.window_s == 0.5
    assert t.timeline.true_events[0].label == "frame 60, state after: left"
    faithful = viewer_trial(score_record(s, ledger(s), "m", "c"), s, ledger(s))
    assert not faithful.preferred and faithful.columns["f1"] == 1.0 and len(faithful.timeline.matches) == 3
    assert dict(faithful.facts)["matched K / reported M / true N"] == "3 / 3 / 3"
    errored = viewer_trial(score_record(s, None, "m", "c", status="api_error"), s, "HTTP 500")
    assert errored.correct is None and errored.columns["predicted"] is None and errored.raw_text == "HTTP 500"
    bad = accidental.model_copy(update={"metrics": {**accidental.metrics, "matches": [[0, 9]]}})
    with pytest.raises(DataError, match="does not index"):
        viewer_trial(bad, s, "")


def test_bad_inputs_raise_clear_errors(tmp_path, counting_data):
    records, _, results = counting_data
    bad = json.loads(json.dumps(results))
    bad["trace_metrics"][MODELS[0]][CONDITIONS[0]]["macro"]["f1"] = float("nan")
    with pytest.raises(DataError, match="use None"):
        write_report(counting_report(records, bad), [], COUNTING_VIEWER, tmp_path)
    assert not list(tmp_path.iterdir()), "nothing is written when the input is bad"
    report, trials, spec = generic_report()
    nan_fig = report.sections[0].figures[0].model_copy(update={"values": [[float("nan"), 0, 0], [0, 0, 0]]})
    nan_report = report.model_copy(update={"sections": [Section(id="s", title="s", figures=[nan_fig])]})
    with pytest.raises(DataError, match="use None"):
        write_report(nan_report, [], spec, tmp_path)
    with pytest.raises(DataError, match="Report"):
        write_report({"cells": []}, [], spec, tmp_path)  # the old dict API
    with pytest.raises(DataError, match="ViewerSpec"):
        write_report(report, [], None, tmp_path)
    assert not list(tmp_path.iterdir())
    mismatched = trials[0].model_copy(
        update={
            "timeline": EventTimeline(
                duration_s=3.0, true_events=[TimelineEvent(t=1.0)], reported_events=[], matches=[(0, 9)]
            )
        }
    )
    with pytest.raises(DataError, match="does not index"):
        viewer_payload(mismatched)
    png = base64.b64encode(b"\x89PNG not a jpeg").decode()
    with pytest.raises(DataError, match="not a JPEG"):
        viewer_payload(trials[0].model_copy(update={"frames": [ViewerFrame(index=0, t=0.0, jpeg_b64=png)]}))
    with pytest.raises(DataError, match="not base64"):
        viewer_payload(trials[0].model_copy(update={"frames": [ViewerFrame(index=0, t=0.0, jpeg_b64="<b>")]}))
    with pytest.raises(DataError, match="uint8 RGB"):
        thumbnail_jpeg_b64(np.zeros((10, 10), np.uint8))


def test_viewer_payload_caps_frames_and_text_and_keeps_order():
    trial = attach_frames(
        ViewerTrial(
            trial_id="many",
            sample_id="s",
            model="m",
            condition="c",
            status="ok",
            raw_text="x" * (MAX_RAW_TEXT_CHARS + 50),
        ),
        _frames(60),
        max_frames=60,
        width=32,
    )
    assert len(trial.frames) == 60
    rec = viewer_payload(trial)
    assert len(rec["frames"]) == MAX_FRAMES_PER_TRIAL
    ts = [f["t"] for f in rec["frames"]]
    assert ts == sorted(ts) and ts[0] == trial.frames[0].t and ts[-1] == trial.frames[-1].t
    assert rec["raw_text"].startswith("x" * MAX_RAW_TEXT_CHARS) and rec["raw_text"].endswith("[truncated]")
    assert len(attach_frames(trial, _frames(60), width=32).frames) == MAX_FRAMES_PER_TRIAL
    with_nan = trial.model_copy(update={"columns": {"v": float("nan"), "w": float("inf"), "ok": True}})
    assert viewer_payload(with_nan)["columns"] == {"v": None, "w": None, "ok": True}


@given(st.integers(1, 400), st.integers(1, 400), st.integers(16, 320))
@settings(max_examples=25, deadline=None)
def test_thumbnail_keeps_aspect_ratio(h, w, width):
    rgb = np.random.default_rng(h * 1000 + w).integers(0, 255, (h, w, 3), dtype=np.uint8)
    jpeg = base64.b64decode(thumbnail_jpeg_b64(rgb, width=width))
    assert jpeg[:2] == b"\xff\xd8"
    img = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    height = max(1, round(h * width / w))
    if height <= MAX_THUMBNAIL_SIDE:
        assert img.shape[1] == width and img.shape[0] == height
    else:  # a very tall frame is scaled to the height cap, aspect ratio kept
        assert img.shape[0] == MAX_THUMBNAIL_SIDE and img.shape[1] == max(1, round(w * MAX_THUMBNAIL_SIDE / h))


def test_thumbnail_is_rgb_not_bgr():
    red = np.zeros((40, 80, 3), np.uint8)
    red[..., 0] = 255
    img = cv2.imdecode(np.frombuffer(base64.b64decode(thumbnail_jpeg_b64(red, 40)), np.uint8), cv2.IMREAD_COLOR)
    b, g, r = img[10, 20].tolist()
    assert r > 200 and b < 60 and g < 60


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
        max_leaves=20,
    )
)
@settings(max_examples=200, deadline=None)
def test_script_json_round_trips_and_cannot_close_the_script(obj):
    text = str(script_json(obj))
    assert not set("<>&") & set(text) and "</" not in text
    assert json.loads(text) == obj


_cell_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12)


def _md_cells(line: str) -> list[str]:
    return re.split(r"(?<!\\)\|", line.replace("\\\\", "\0"))


@given(
    st.integers(1, 5).flatmap(
        lambda k: st.tuples(
            st.lists(_cell_text, min_size=k, max_size=k),
            st.lists(st.lists(_cell_text, min_size=k, max_size=k), max_size=4),
        )
    )
)
@settings(max_examples=150, deadline=None)
def test_markdown_table_keeps_its_columns(table_data):
    columns, rows = table_data
    md = markdown_table(Table(id="t", title="t", columns=columns, rows=rows, key_columns=1))
    lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert len(lines) == (2 + len(rows) if rows else 0)
    for line in lines:
        assert len(_md_cells(line)) == len(columns) + 2


@given(st.integers(1, 3), st.integers(1, 4), st.data())
@settings(max_examples=60, deadline=None)
def test_markdown_grid_keeps_its_columns(n_rows, n_cols, data):
    labels = st.lists(_cell_text, min_size=n_cols, max_size=n_cols)
    fig = GridFigure(
        id="g",
        title=data.draw(_cell_text),
        row_label=data.draw(_cell_text),
        col_label=data.draw(_cell_text),
        rows=data.draw(st.lists(_cell_text, min_size=n_rows, max_size=n_rows)),
        cols=data.draw(labels),
        values=[[data.draw(st.none() | st.floats(0, 1)) for _ in range(n_cols)] for _ in range(n_rows)],
        annotations=[data.draw(labels) for _ in range(n_rows)],
        outlined=[[data.draw(st.booleans()) for _ in range(n_cols)] for _ in range(n_rows)],
    )
    lines = [ln for ln in markdown_grid(fig).splitlines() if ln.startswith("| ")]
    assert len(lines) == 2 + n_rows
    for line in lines:
        assert len(_md_cells(line)) == n_cols + 3


# --------------------------------------------------------------------------- viewer selection


def _pool(spec: list[tuple[int, int, int, bool, bool]]) -> list[ViewerTrial]:
    return [
        ViewerTrial(
            trial_id=f"{i:05d}",
            sample_id=f"s{i}",
            model=MODELS[m],
            condition=CONDITIONS[c],
            group="blinking",
            status="ok",
            correct=correct,
            grid_point=[n, 1.0],
            preferred=correct and preferred,
        )
        for i, (m, c, n, correct, preferred) in enumerate(spec)
    ]


@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 5), st.booleans(), st.booleans()), max_size=80
    ),
    st.integers(0, 5),
    st.integers(0, 12),
    st.randoms(use_true_random=False),
)
@settings(max_examples=120, deadline=None)
def test_select_trials_caps_per_cell_and_is_deterministic(spec, per_cell, cap, rnd: random.Random):
    pool = _pool(spec)
    kept = select_trials_for_viewer(pool, per_cell=per_cell, max_incorrect_per_cell=cap)
    ids = [t.trial_id for t in kept]
    assert len(ids) == len(set(ids)) and set(ids) <= {t.trial_id for t in pool}
    for key in {(t.model, t.condition, t.group) for t in pool}:
        group = [t for t in pool if (t.model, t.condition, t.group) == key]
        kept_g = [t for t in kept if (t.model, t.condition, t.group) == key]
        wrong = [t for t in group if not t.correct]
        right = [t for t in group if t.correct]
        assert sum(not t.correct for t in kept_g) == min(cap, len(wrong))
        assert sum(bool(t.correct) for t in kept_g) == min(per_cell, len(right))
        # preferred ones (counting: accidental correctness) come first among the correct ones
        preferred = [t for t in right if t.preferred]
        assert sum(t.preferred for t in kept_g if t.correct) == min(per_cell, len(preferred))
    shuffled = list(pool)
    rnd.shuffle(shuffled)
    assert [
        t.trial_id for t in select_trials_for_viewer(shuffled, per_cell=per_cell, max_incorrect_per_cell=cap)
    ] == ids


def test_select_trials_spreads_over_the_grid_and_counts_errors_as_incorrect():
    pool = [
        ViewerTrial(
            trial_id=f"{n}-{i}",
            sample_id="s",
            model="m",
            condition="c",
            group="d",
            status="ok" if i % 2 else "api_error",
            correct=False if i % 2 else None,
            grid_point=[n, 1.0],
        )
        for n in range(1, 6)
        for i in range(10)
    ]
    kept = select_trials_for_viewer(pool, per_cell=0, max_incorrect_per_cell=5)
    assert sorted(t.grid_point[0] for t in kept) == [1, 2, 3, 4, 5]
    kept = select_trials_for_viewer(pool, per_cell=0, max_incorrect_per_cell=100)
    assert len(kept) == 50, "errored trials (correct None) are kept as incorrect"
    with pytest.raises(DataError, match="appears twice"):
        select_trials_for_viewer(pool + [pool[0]])
    with pytest.raises(DataError, match="ViewerTrial"):
        select_trials_for_viewer([{"trial_id": "x"}])


# --------------------------------------------------------------------------- generic, and literal text


def test_a_report_no_suite_made(tmp_path):
    report, trials, spec = generic_report()
    paths = write_report(report, trials, spec, tmp_path, figures="png")
    assert Report.model_validate_json(paths["json"].read_text(encoding="utf-8")) == report
    html = paths["html"].read_text(encoding="utf-8")
    imgs = re.findall(
        r'<figure class="figure figure-(grid|line)"[^>]*>\s*<img class="figure-img" '
        r'src="data:image/png;base64,([^"]+)"',
        html,
    )
    assert [k for k, _ in imgs] == ["grid", "line"]
    for _, b64 in imgs:
        assert cv2.imdecode(np.frombuffer(base64.b64decode(b64), np.uint8), cv2.IMREAD_COLOR) is not None
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html and "<b>not bold" not in html
    assert '<h3 class="group level-0">model a$b$c</h3>' in html
    assert html.count('class="group level-0"') == 1, "the line figure shares the grid's first group level"
    assert "<th>probe</th>" in html and '<th class="num" data-key="score">score</th>' in html
    assert 'id="sec-probes"' in html and 'id="sec-empty"' in html and "Empty: nothing recorded." in html
    payload = _data_block(html)
    assert payload["spec"]["group_label"] == "probe"
    assert {t["trial_id"] for t in payload["trials"]} == {t.trial_id for t in trials}
    assert all(t["timeline"] is None for t in payload["trials"])
    md = paths["md"].read_text(encoding="utf-8")
    assert "# vidaudit report — stress" in md and "- **suite**: stress" in md
    assert '  - model a$b$c: extra={"k": [1, 2]}, temperature=0.7' in md
    assert "### model a$b$c · cond $\\\\alpha$" in md
    assert "| depth $d$ ↓ / width \\| w → | narrow | $wide$ | a\\|b |" in md
    assert "| shallow | **0.90 (9/10)** |  | 0.10 (1/10) |" in md
    assert "| deep | 0.50 (5/10) | 0.25 (1/4) | **1.00 ($4/4$)** |" in md
    assert "| step $t$ | arm $A$ | arm B |" in md
    assert "| 4 | — | 0.600 |" in md and "| 1 | 0.200 [0.100, 0.300] | 0.800 |" in md
    assert "| x\\|y | 0.5 |" in md and "- section note" in md and "_Nothing recorded._" in md


def test_dollar_labels_render_literally():
    from matplotlib.mathtext import MathTextParser

    with pytest.raises(ValueError):  # what would happen if a label reached mathtext
        MathTextParser("agg").parse(DOLLAR_LABELS[1], dpi=72)
    grid = GridFigure(
        id="d",
        title=DOLLAR_LABELS[1],
        group=DOLLAR_LABELS[:2],
        row_label=DOLLAR_LABELS[3],
        col_label=DOLLAR_LABELS[1],
        rows=DOLLAR_LABELS[:2],
        cols=DOLLAR_LABELS,
        values=[[0.1, 0.2, None, 0.4], [1.0, 0.0, 0.5, None]],
        annotations=[DOLLAR_LABELS, DOLLAR_LABELS],
        value_label=DOLLAR_LABELS[1],
    )
    png, alt = render_grid(grid)
    assert base64.b64decode(png)[:4] == b"\x89PNG" and DOLLAR_LABELS[1] in alt
    line = LineFigure(
        id="l",
        title=DOLLAR_LABELS[1],
        x_label=DOLLAR_LABELS[1],
        y_label=DOLLAR_LABELS[3],
        x=[0, 1],
        series=[Series(name=lab, y=[0.1, 0.2]) for lab in DOLLAR_LABELS],
    )
    png, alt = render_line(line)
    assert base64.b64decode(png)[:4] == b"\x89PNG" and DOLLAR_LABELS[0] in alt


def test_counting_report_with_dollar_model_names(tmp_path):
    records, _ = make_records(seed=3, models=["a$b$c", "$\\notacommand{x}$"])
    report = counting_report(records, make_results(records))
    paths = write_report(report, [], COUNTING_VIEWER, tmp_path)
    html = paths["html"].read_text(encoding="utf-8")
    assert html.count('class="figure figure-grid"') == 2 * len(CONDITIONS) * len(DOMAINS)
    assert "| a$b$c | native@1fps | bounce_ball | point |" in paths["md"].read_text(encoding="utf-8")


def test_report_package_imports_no_suite():
    """No module under src/vidaudit/report imports vidaudit.suites, at the top or inside a function."""
    root = Path(vidaudit.report.html.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert {p.name for p in modules} >= {
        "__init__.py",
        "write.py",
        "html.py",
        "markdown.py",
        "heatmaps.py",
        "viewer.py",
        "tables.py",
    }
    offenders = []
    for path in modules:
        package = ".".join(("vidaudit", "report", *path.relative_to(root).with_suffix("").parts[:-1]))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolve against this module's package
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value]  # importlib.import_module("vidaudit.suites...") and the like
            offenders += [
                f"{path.name}:{node.lineno}: {n}"
                for n in names
                if n == "vidaudit.suites" or n.startswith("vidaudit.suites.")
            ]
    assert offenders == []
