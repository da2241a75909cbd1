"""The report writer without a browser: files, JSON round trip, self-containment, escaping, tables."""

from __future__ import annotations

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

from vidaudit.core.errors import DataError
from vidaudit.report import render_markdown, select_trials_for_viewer, thumbnail_jpeg_b64, write_report
from vidaudit.report.heatmaps import render_heatmap, surface_grid
from vidaudit.report.html import script_json
from vidaudit.report.markdown import markdown_table
from vidaudit.report.tables import Table
from vidaudit.report.viewer import MAX_FRAMES_PER_TRIAL, viewer_record

MODELS = ["gemini-3.6-flash", "qwen3-vl-8b"]
CONDITIONS = ["native@1fps", "frames@2fps"]
DOMAINS = ["bounce_ball", "state_machine"]
COUNTS = [0, 1, 2, 3, 4, 6]
FREQS = [0.5, 1.0, 2.0, 4.0]
TAU = 0.8
MALICIOUS = "<script>alert(1)</script><img src=x onerror=alert(2)>"
INJECTED = ("I counted 3.</pre><script>window.__pwned = 1</script>"
            "<img src=x onerror=\"window.__pwned2 = 1\"><b>bold?</b> \\boxed{3}")


def _boundary(acc: dict[tuple[int, float], float], axis: str, fixed: float) -> object:
    """The contiguous-prefix rule of the paper (eq. 5/6), written out for hand-made fixtures."""
    if axis == "count":
        best: object = "<1"
        for n in [c for c in COUNTS if c > 0]:
            if acc[(n, fixed)] < TAU:
                break
            best = n
        return best
    best = "<0.5"
    for f in FREQS:
        if acc[(int(fixed), f)] < TAU:
            break
        best = f
    return best


def make_report(n_per_cell: int = 10, seed: int = 7) -> dict:
    """A realistic report.json: surfaces, both boundaries under both rules, trace metrics, errors, usage."""
    rng = np.random.default_rng(seed)
    cells, cb, fb, cbw, fbw, tm = [], {}, {}, {}, {}, {}
    for model, condition, domain in itertools.product(MODELS, CONDITIONS, DOMAINS):
        acc: dict[tuple[int, float], float] = {}
        for n in COUNTS:
            for f in FREQS:
                if n == 0 and f != 1.0:
                    continue
                p = 0.97 if n == 0 else max(0.0, 1.0 - 0.11 * n * f)
                k = int(rng.binomial(n_per_cell, p))
                acc[(n, f)] = k / n_per_cell
                # The no-event control of one surface has no frequency at all.
                freq = None if (n == 0 and domain == "state_machine") else f
                cells.append({"model": model, "condition": condition, "domain": domain, "n_events": n,
                              "frequency_hz": freq, "n": n_per_cell, "correct": k, "accuracy": k / n_per_cell,
                              "ci_low": max(0.0, k / n_per_cell - 0.2), "ci_high": min(1.0, k / n_per_cell + 0.2)})
        point_c = {str(f) if f % 1 else str(int(f)): _boundary(acc, "count", f) for f in FREQS}
        point_f = {str(n): _boundary(acc, "freq", n) for n in COUNTS if n > 0}
        cb.setdefault(model, {}).setdefault(condition, {})[domain] = point_c
        fb.setdefault(model, {}).setdefault(condition, {})[domain] = point_f
        cbw.setdefault(model, {}).setdefault(condition, {})[domain] = {
            k: ("<1" if v == "<1" or v <= 1 else v - 1) for k, v in point_c.items()}
        fbw.setdefault(model, {}).setdefault(condition, {})[domain] = {k: "<0.5" for k in point_f}
        metrics = {"em": 0.41, "vor": 0.83, "precision": 0.74, "recall": 0.61, "f1": 0.66, "acr": 0.05,
                   "rfr": 0.02, "parse_failure_rate": 0.01}
        tm.setdefault(model, {}).setdefault(condition, {})[domain] = metrics
        tm[model][condition]["macro"] = {**metrics, "acr": None}
    return {
        "cells": cells,
        "count_boundary": cb,
        "frequency_boundary": fb,
        "count_boundary_wilson": cbw,
        "frequency_boundary_wilson": fbw,
        "trace_metrics": tm,
        "regions": {"gemini-3.6-flash": {"native@1fps": {"high_count_high_freq": {"em": 0.002, "recall": 0.181}}}},
        "taxonomy": {"gemini-3.6-flash": {"native@1fps": {"bounce_ball": {
            "faithful": 40, "missed": 120, "hallucinated": 22, "wrong_accumulation": 3, "accidental": 9}}}},
        "tolerance": {"rule": "rate-relative", "window": "1/(2F)"},
        "errors": {"gemini-3.6-flash": {"native@1fps": {"api_error": 2, "timeout": 1, "refused": 0,
                                                        "unparseable": 4, "parse_failure_rate": 0.0125}}},
        "usage": {"gemini-3.6-flash": {"native@1fps": {"calls": 320, "input_tokens": 1_204_332,
                                                       "output_tokens": 88_001, "cost_usd": 19.02}}},
        "notes": ["cells where frames@1 cannot show the events: bounce_ball F>=2.0 Hz",
                  "τ = 0.80; Wilson boundaries use the 95% lower bound"],
        "meta": {"run_dir": "runs/2026-08-06-lft", "created_at": "2026-08-06T12:00:00Z",
                 "vidaudit_version": "0.1.0", "models": MODELS, "conditions": CONDITIONS},
    }


def _frame(t: float, width: int = 320, height: int = 180) -> np.ndarray:
    img = np.full((height, width, 3), 235, np.uint8)
    x = int(20 + (width - 40) * (t % 4) / 4)
    cv2.circle(img, (x, height // 2), 14, (200, 40, 40), -1, lineType=cv2.LINE_AA)
    cv2.putText(img, f"{t:.1f}s", (8, 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (30, 30, 30), 1, cv2.LINE_AA)
    return img


def make_trial(trial_id: str, *, model: str = MODELS[0], condition: str = CONDITIONS[0],
               domain: str = DOMAINS[0], n: int = 4, f: float = 1.0, reported: list[float] | None = None,
               matches: list[list[int]] | None = None, raw_text: str = "", n_frames: int = 6,
               correct: bool | None = None, status: str = "ok") -> dict:
    true_t = [2.0 + i / f for i in range(n)]
    reported = [2.1 + i / f for i in range(n - 1)] + [9.4] if reported is None else reported
    if matches is None:
        matches = [[i, i] for i in range(min(n - 1, len(reported)))]
    predicted = len(reported)
    frames = [{"index": 15 * i, "t": 0.5 + 1.0 * i, "jpeg_b64": thumbnail_jpeg_b64(_frame(0.5 + i), 120)}
              for i in range(n_frames)]
    k = len(matches)
    p = k / len(reported) if reported else 0.0
    r = k / n if n else 0.0
    return {"trial_id": trial_id, "sample_id": f"s-{trial_id}", "model": model, "condition": condition,
            "domain": domain, "n_events": n, "frequency_hz": f, "duration_s": 12.0, "status": status,
            "answer": n, "predicted_count": predicted if status == "ok" else None, "parse_method": "boxed",
            "correct": (predicted == n) if correct is None else correct,
            "f1": 2 * p * r / (p + r) if p + r else 0.0,
            "true_events": [{"t": t, "frame": int(round(t * 30)), "state_after": i + 1} for i, t in enumerate(true_t)],
            "reported_events": [{"t": t, "label": f"contact {i + 1}"} for i, t in enumerate(reported)],
            "matches": matches, "window_s": 1 / (2 * f), "raw_text": raw_text, "frames": frames}


def make_trials() -> list[dict]:
    return [
        make_trial("t-inject", raw_text=INJECTED + "\n" + MALICIOUS),
        make_trial("t-faithful", n=3, f=0.5, reported=[2.05, 4.1, 5.9], matches=[[0, 0], [1, 1], [2, 2]],
                   raw_text="Events: 2.05s, 4.1s, 5.9s. \\boxed{3}"),
        make_trial("t-qwen", model=MODELS[1], condition=CONDITIONS[1], domain=DOMAINS[1], n=2, f=2.0,
                   reported=[], matches=[], raw_text="No events. \\boxed{0}", n_frames=0),
        make_trial("t-error", status="api_error", reported=[], matches=[], raw_text="", n_frames=0, correct=False),
    ]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, Path], str]:
    out = tmp_path_factory.mktemp("report")
    report = make_report()
    paths = write_report(report, make_trials(), out, n_trials_total=1460)
    return report, paths, paths["html"].read_text(encoding="utf-8")


class _Resources(HTMLParser):
    """Collect every attribute that can make a browser fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in {"src", "href", "srcset", "poster", "data", "action", "xlink:href", "background"} and value:
                self.refs.append((tag, name, value))


def test_three_files_written_and_json_round_trips(written):
    report, paths, _ = written
    assert set(paths) == {"json", "md", "html"}
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths.values())
    assert json.loads(paths["json"].read_text(encoding="utf-8")) == report
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


def test_untrusted_model_text_is_never_markup(written):
    _, _, html = written
    assert MALICIOUS not in html
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold?" not in html
    assert "window.__pwned" in html  # the text is there, escaped, not dropped
    assert html.count("<script") == 2 and html.count("</script") == 2  # the JSON block and our viewer
    data = re.search(r'<script type="application/json" id="trials-data">(.*?)</script>', html, re.S).group(1)
    assert not set("<>&") & set(data)
    trials = {t["trial_id"]: t for t in json.loads(data)}
    assert trials["t-inject"]["raw_text"] == INJECTED + "\n" + MALICIOUS


def test_one_heatmap_per_model_condition_domain(written):
    report, _, html = written
    figures = re.findall(r'<figure class="heatmap" id="([^"]+)" data-model="([^"]+)" data-condition="([^"]+)" '
                         r'data-domain="([^"]+)">\s*<img class="heatmap-img" src="data:image/png;base64,([^"]+)" '
                         r'alt="([^"]+)"', html)
    combos = {(c["model"], c["condition"], c["domain"]) for c in report["cells"]}
    assert len(figures) == len(combos) == len(MODELS) * len(CONDITIONS) * len(DOMAINS)
    assert {f[1:4] for f in figures} == combos
    assert len({f[0] for f in figures}) == len(figures)
    for *_, b64, alt in figures:
        png = cv2.imdecode(np.frombuffer(base64.b64decode(b64), np.uint8), cv2.IMREAD_COLOR)
        assert png is not None and png.shape[0] > 150 and png.shape[1] > 250
        assert "Accuracy heatmap for" in alt


def test_markdown_has_both_boundaries_with_both_rules(written):
    report, paths, _ = written
    md = paths["md"].read_text(encoding="utf-8")
    assert md == render_markdown(report)
    assert "### Count boundary N*(F)" in md and "### Frequency boundary F*(N)" in md
    count_section = md.split("### Count boundary")[1].split("### Frequency boundary")[0]
    for model, condition, domain in itertools.product(MODELS, CONDITIONS, DOMAINS):
        for rule in ("point", "Wilson"):
            assert f"| {model} | {condition} | {domain} | {rule} |" in count_section
    row = next(line for line in count_section.splitlines()
               if line.startswith(f"| {MODELS[0]} | {CONDITIONS[0]} | {DOMAINS[0]} | point |"))
    expected = report["count_boundary"][MODELS[0]][CONDITIONS[0]][DOMAINS[0]]
    values = [v.strip() for v in row.strip("|").split("|")][4:]
    assert values == [str(expected[k]) for k in ["0.5", "1", "2", "4"]]
    assert "| F=0.5 | F=1 | F=2 | F=4 |" in count_section
    for heading in ("## Trace metrics", "## Errors, parse failures and usage", "## Notes", "### Usage and cost"):
        assert heading in md
    assert "frames@1 cannot show the events" in md
    assert "| gemini-3.6-flash | native@1fps | macro |" in md and "| — |" in md  # None shown as a dash


def test_heatmap_grid_places_every_cell_and_rejects_duplicates():
    report = make_report(n_per_cell=5)
    cells = [c for c in report["cells"] if (c["model"], c["condition"], c["domain"]) ==
             (MODELS[0], CONDITIONS[0], DOMAINS[1])]
    counts, freqs, grid = surface_grid(cells)
    assert counts == COUNTS and freqs == ["n/a", "0.5", "1", "2", "4"]
    assert sum(c is not None for row in grid for c in row) == len(cells)
    h = render_heatmap(MODELS[0], CONDITIONS[0], DOMAINS[1], cells)
    for cell in cells:
        col = "n/a" if cell["frequency_hz"] is None else {0.5: "0.5", 1.0: "1", 2.0: "2", 4.0: "4"}[cell["frequency_hz"]]
        assert h.accuracy[counts.index(cell["n_events"])][freqs.index(col)] == cell["accuracy"]
    with pytest.raises(DataError, match="two cells"):
        surface_grid(cells + [dict(cells[3])])


def test_bad_inputs_raise_clear_errors(tmp_path):
    report = make_report(n_per_cell=2)
    report["trace_metrics"][MODELS[0]][CONDITIONS[0]]["macro"]["f1"] = float("nan")
    with pytest.raises(DataError, match="use None"):
        write_report(report, [], tmp_path)
    assert not list(tmp_path.iterdir()), "nothing is written when the input is bad"
    with pytest.raises(DataError, match="cells"):
        write_report({"meta": {}}, [], tmp_path)
    bad = make_trial("x", matches=[[0, 9]])
    with pytest.raises(DataError, match="does not index"):
        viewer_record(bad)
    bad = make_trial("y")
    bad["frames"][0]["jpeg_b64"] = base64.b64encode(b"\x89PNG not a jpeg").decode()
    with pytest.raises(DataError, match="not a JPEG"):
        viewer_record(bad)
    with pytest.raises(DataError, match="uint8 RGB"):
        thumbnail_jpeg_b64(np.zeros((10, 10), np.uint8))


def test_viewer_record_caps_frames_and_keeps_order():
    trial = make_trial("many", n_frames=60)
    rec = viewer_record(trial)
    assert len(rec["frames"]) == MAX_FRAMES_PER_TRIAL
    ts = [f["t"] for f in rec["frames"]]
    assert ts == sorted(ts) and ts[0] == trial["frames"][0]["t"] and ts[-1] == trial["frames"][-1]["t"]


@given(st.integers(1, 400), st.integers(1, 400), st.integers(16, 320))
@settings(max_examples=25, deadline=None)
def test_thumbnail_keeps_aspect_ratio(h, w, width):
    rgb = np.random.default_rng(h * 1000 + w).integers(0, 255, (h, w, 3), dtype=np.uint8)
    jpeg = base64.b64decode(thumbnail_jpeg_b64(rgb, width=width))
    assert jpeg[:2] == b"\xff\xd8"
    img = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert img.shape[1] == width and img.shape[0] == max(1, round(h * width / w))


def test_thumbnail_is_rgb_not_bgr():
    red = np.zeros((40, 80, 3), np.uint8)
    red[..., 0] = 255
    img = cv2.imdecode(np.frombuffer(base64.b64decode(thumbnail_jpeg_b64(red, 40)), np.uint8), cv2.IMREAD_COLOR)
    b, g, r = img[10, 20].tolist()
    assert r > 200 and b < 60 and g < 60


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                    max_leaves=20))
@settings(max_examples=200, deadline=None)
def test_script_json_round_trips_and_cannot_close_the_script(obj):
    text = str(script_json(obj))
    assert not set("<>&") & set(text) and "</" not in text
    assert json.loads(text) == obj


_cell_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12)


@given(st.integers(1, 5).flatmap(lambda k: st.tuples(
    st.lists(_cell_text, min_size=k, max_size=k),
    st.lists(st.lists(_cell_text, min_size=k, max_size=k), max_size=4))))
@settings(max_examples=150, deadline=None)
def test_markdown_table_keeps_its_columns(table_data):
    columns, rows = table_data
    md = markdown_table(Table("t", columns, rows, key_columns=1))
    lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert len(lines) == (2 + len(rows) if rows else 0)
    for line in lines:
        cells = re.split(r"(?<!\\)\|", line.replace("\\\\", "\0"))
        assert len(cells) == len(columns) + 2


def _trial_pool(draw_spec: list[tuple[int, int, int, bool, float]]) -> list[dict]:
    out = []
    for i, (m, c, n, correct, f1) in enumerate(draw_spec):
        out.append({"trial_id": f"{i:05d}", "model": MODELS[m], "condition": CONDITIONS[c], "domain": "blinking",
                    "n_events": n, "frequency_hz": 1.0, "correct": correct, "f1": f1})
    return out


@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 5), st.booleans(),
                          st.floats(0, 1)), max_size=80),
       st.integers(0, 5), st.integers(0, 12), st.randoms(use_true_random=False))
@settings(max_examples=120, deadline=None)
def test_select_trials_caps_per_cell_and_is_deterministic(spec, per_cell, cap, rnd: random.Random):
    pool = _trial_pool(spec)
    kept = select_trials_for_viewer(pool, per_cell=per_cell, max_incorrect_per_cell=cap)
    ids = [t["trial_id"] for t in kept]
    assert len(ids) == len(set(ids)) and set(ids) <= {t["trial_id"] for t in pool}
    for key in {(t["model"], t["condition"], t["domain"]) for t in pool}:
        group = [t for t in pool if (t["model"], t["condition"], t["domain"]) == key]
        kept_g = [t for t in kept if (t["model"], t["condition"], t["domain"]) == key]
        wrong = [t for t in group if not t["correct"]]
        right = [t for t in group if t["correct"]]
        assert sum(not t["correct"] for t in kept_g) == min(cap, len(wrong))
        assert sum(bool(t["correct"]) for t in kept_g) == min(per_cell, len(right))
        # accidental correctness (correct, F1 < 0.8) is preferred among the correct ones
        accidental = [t for t in right if t["f1"] < 0.8]
        kept_right = [t for t in kept_g if t["correct"]]
        assert sum(t["f1"] < 0.8 for t in kept_right) == min(per_cell, len(accidental))
    shuffled = list(pool)
    rnd.shuffle(shuffled)
    assert sorted(ids) == sorted(t["trial_id"] for t in select_trials_for_viewer(
        shuffled, per_cell=per_cell, max_incorrect_per_cell=cap))


def test_select_trials_spreads_over_the_grid():
    pool = [{"trial_id": f"{n}-{i}", "model": "m", "condition": "c", "domain": "d", "n_events": n,
             "frequency_hz": 1.0, "correct": False, "f1": 0.0} for n in range(1, 6) for i in range(10)]
    kept = select_trials_for_viewer(pool, per_cell=0, max_incorrect_per_cell=5)
    assert sorted(t["n_events"] for t in kept) == [1, 2, 3, 4, 5]
