"""The report a researcher opens: progress while it is made, a headline row per model (references last),
collapsible sections, no column hidden behind a horizontal scroll, each distinct thumbnail stored once.

A real run (a simulated model under test beside the oracle and chance) on the smoke data, reported with
``vidaudit report``; the page is looked at in headless Chromium at a laptop's width.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.manifest import load_samples
from vidaudit.report.tables import md_escape

CELL = re.compile(r"^\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] \(\d+/\d+\)$")


@pytest.fixture(scope="module")
def reported(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("reading")
    cells = {
        (s.params["domain"], int(s.params["n_events"]), float(s.params["frequency_hz"] or 1.0))
        for s in load_samples(smoke_dir)
    }
    surface = root / "surface.csv"
    surface.write_text("domain,N,F,accuracy\n" + "".join(f"{d},{n},{f},0.5\n" for d, n, f in sorted(cells)))
    runner = CliRunner()
    r = runner.invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            "oracle",
            "--model",
            "chance",
            "--model",
            f"simulated:{surface}",
            "--condition",
            "frames@1",
            "--out",
            str(root / "run"),
        ],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", str(root / "run"), "--figures", "png"])  # the papers' export; SVG below
    assert r.exit_code == 0, r.output
    return root / "run" / "report", r.output


def test_the_default_report_draws_svg_from_the_scored_file(reported: tuple[Path, str], tmp_path: Path) -> None:
    """``vidaudit report`` again: it reads what the first one scored, draws each figure as SVG in the page, and
    changes no number (report.json and report.md as the PNG report wrote them, the creation time aside)."""
    folder, _ = reported
    run = tmp_path / "run"
    shutil.copytree(folder.parent, run, ignore=shutil.ignore_patterns(".lock"))
    r = CliRunner().invoke(app, ["report", str(run)])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("report: "))
    assert "reading scores" in line and "scoring" not in line
    html = (run / "report" / "report.html").read_text(encoding="utf-8")
    n_figures = sum(len(s["figures"]) for s in json.loads((folder / "report.json").read_text())["sections"])
    assert "data:image/png" not in html and html.count('<svg class="figure-svg') == n_figures > 0

    def timeless(p: Path) -> str:
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "", p.read_text(encoding="utf-8"))

    for name in ("report.json", "report.md"):
        assert timeless(run / "report" / name) == timeless(folder / name).replace(str(folder.parent), str(run)), name


def test_report_says_where_its_time_goes(reported: tuple[Path, str]) -> None:
    """`vidaudit report` shows a progress bar per step and ends with one line naming each step's time (what a
    log without a terminal keeps)."""
    _, output = reported
    line = next(x for x in output.splitlines() if x.startswith("report: "))
    for step in ("scoring", "aggregating", "thumbnails", "figures", "writing"):
        assert re.search(rf"\b{step} \d+\.\d s\b", line), line


def test_headline_row_per_model_references_last(reported: tuple[Path, str]) -> None:
    folder, _ = reported
    report = json.loads((folder / "report.json").read_text())
    head = report["headline"]
    assert head["columns"] == ["model", "role", "frames@1/structured_trace"]
    simulated = next(m for m in report["models"] if m.startswith("simulated:"))
    assert [(r[0], r[1]) for r in head["rows"]] == [(simulated, "model"), ("oracle", "oracle"), ("chance", "chance")]
    assert all(CELL.match(r[2]) for r in head["rows"]), head["rows"]
    n = sum(1 for _ in load_samples(Path(json.loads((folder.parent / "run.json").read_text())["data_dir"])))
    assert head["rows"][1][2] == f"1.000 [{_wilson_low(n, n):.3f}, 1.000] ({n}/{n})"  # the oracle: all right
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert md.index("## Headline") < md.index("## Notes") < md.index("## Capability surfaces")
    table = md.split("## Headline")[1].split("## Notes")[0]
    assert table.index(f"| {md_escape(simulated)} | model |") < table.index("| oracle |") < table.index("| chance |")
    # in every section, the figures of the model under test come before the references'
    for s in report["sections"]:
        groups = [f["group"][0] for f in s["figures"] if f["group"]]
        if groups:
            assert groups[0] == simulated
            assert max(i for i, g in enumerate(groups) if g == simulated) < min(
                i for i, g in enumerate(groups) if g in ("oracle", "chance")
            ), s["id"]


def _wilson_low(k: int, n: int) -> float:
    from vidaudit.score.stats import wilson_interval

    return wilson_interval(k, n)[0]


def test_page_is_short_collapsible_and_hides_no_column(reported: tuple[Path, str], tmp_path: Path) -> None:
    from browser import CHROMIUM, LAUNCH_ARGS, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    folder, _ = reported
    html = (folder / "report.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="trials-data">(.*?)</script>', html, re.DOTALL).group(1))
    n_frames = sum(len(t["frames"]) for t in data["trials"])
    assert n_frames and len(data["thumbs"]) < n_frames  # each distinct thumbnail once
    assert "data:image/png;base64," in html
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto((folder / "report.html").resolve().as_uri(), wait_until="load")
            ids = page.eval_on_selector_all("main > section", "s => s.map(x => x.id)")
            assert ids[:2] == ["headline", "notes"]
            # every scroll box fits its content: no column is hidden behind a horizontal scroll
            wide = page.eval_on_selector_all(
                ".scroll",
                "es => es.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => (e.closest('[id]') || {}).id)",
            )
            assert wide == []
            sections = page.eval_on_selector_all("details.section", "d => d.map(x => x.open)")
            assert sections and all(sections)
            groups = dict(
                page.eval_on_selector_all(
                    "details.model-group", "d => d.map(x => [x.querySelector('summary h3').textContent, x.open])"
                )
            )
            simulated = next(k for k in groups if k.startswith("simulated:"))
            assert groups[simulated] is True and groups["oracle"] is False and groups["chance"] is False
            height = page.evaluate("document.documentElement.scrollHeight")
            page.click("details.section > summary")  # a section folds away
            assert page.evaluate("document.documentElement.scrollHeight") < height
            page.click("#trial-rows tr")  # the viewer's thumbnails come back from the shared pool
            page.wait_for_timeout(200)
            widths = page.eval_on_selector_all("#frame-strip img", "i => i.map(x => x.naturalWidth)")
            assert widths and all(w > 0 for w in widths)
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
