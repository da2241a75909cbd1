"""The HTML report in a real headless Chromium: offline, images load, the trace viewer draws, no script injection.

Needs Debian's chromium at /usr/bin/chromium (``apt-get install -y chromium``) and Playwright for
Python (``pip install playwright``; never ``playwright install``: we drive the system browser).
Outside CI a missing browser skips with a printed reason; on CI (CI set) it fails. Set
VIDAUDIT_SKIP_BROWSER=1 to skip on request.
Screenshots go to $VIDAUDIT_SCREENSHOTS when set (CI keeps that folder), else to tmp_path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browser import CHROMIUM, LAUNCH_ARGS, require_browser
from test_report_html import MALICIOUS, counting_report, generic_report, make_records, make_results, make_trials
from vidaudit.report.heatmaps import _fmt_value
from vidaudit.report.write import write_report
from vidaudit.suites.counting.viewer import COUNTING_VIEWER


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = os.environ.get("VIDAUDIT_SCREENSHOTS")
    path = Path(target) if target else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_report_in_headless_chromium(tmp_path: Path, shots: Path) -> None:
    require_browser()
    from playwright.sync_api import sync_playwright

    records, _ = make_records()
    report = counting_report(records, make_results(records))
    trials = make_trials()
    # the PNG pages (``figures="png"``, the papers' export) here; the default SVG pages after them
    paths = write_report(report, trials, COUNTING_VIEWER, tmp_path / "out", n_trials_total=1460, figures="png")
    url = paths["html"].resolve().as_uri()
    n_heatmaps = len({(c["model"], c["condition"], c["domain"]) for c in report.results["cells"]})
    g_report, g_trials, g_spec = generic_report()
    g_url = write_report(g_report, g_trials, g_spec, tmp_path / "generic", figures="png")["html"].resolve().as_uri()
    svg_url = write_report(report, trials, COUNTING_VIEWER, tmp_path / "svg", n_trials_total=1460)["html"]
    g_svg_url = write_report(g_report, g_trials, g_spec, tmp_path / "generic-svg")["html"].resolve().as_uri()

    blocked: list[str] = []
    requested: list[str] = []
    dialogs: list[str] = []
    errors: list[str] = []

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.on("request", lambda r: requested.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("pageerror", lambda e: errors.append(str(e)))

            def route(r):
                if r.request.url.startswith(("file:", "data:")):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.goto(url, wait_until="load")
            assert errors == [], f"the page's script failed: {errors}"

            # Heatmaps: one per model x condition x domain, every image decoded by the browser.
            sizes = page.eval_on_selector_all(
                "figure.figure-grid img", "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.naturalHeight])"
            )
            assert len(sizes) == n_heatmaps
            assert all(done and w > 0 and h > 0 for done, w, h in sizes), sizes
            page.screenshot(path=str(shots / "report_top.png"))
            page.locator("#sec-surfaces").screenshot(path=str(shots / "report_surfaces.png"))
            page.locator("#sec-boundaries").screenshot(path=str(shots / "report_boundaries.png"))

            # Trace viewer: all kept trials listed; filter down, then open the injected trial by clicking it.
            assert page.locator("#trial-rows tr").count() == len(trials)
            page.select_option("#f-model", "qwen3-vl-8b")
            assert page.locator("#trial-rows tr").count() == 1
            page.select_option("#f-model", "")
            page.select_option("#f-outcome", "error")
            assert page.locator("#trial-rows tr").count() == 1
            page.select_option("#f-outcome", "")
            page.select_option("#f-group", "state_machine")
            assert page.locator("#trial-rows tr").count() == 1
            page.select_option("#f-group", "")
            assert page.locator("#trial-table thead th").all_inner_texts() == [
                "model",
                "condition",
                "domain",
                "N",
                "F (Hz)",
                "predicted",
                "F1",
                "ok",
            ]
            page.click('#trial-rows tr[data-trial-id="t-faithful"]')
            assert page.get_attribute("#detail-body", "data-trial-id") == "t-faithful"
            assert page.locator("#timeline .match-line").count() == 3
            assert page.locator("#timeline .ev-true.missed").count() == 0

            page.click('#trial-rows tr[data-trial-id="t-inject"]')
            inject = next(t for t in trials if t.trial_id == "t-inject")
            tl = inject.timeline
            assert page.get_attribute("#detail-body", "data-trial-id") == "t-inject"
            assert page.is_visible("#timeline")
            assert page.locator("#timeline .ev-true").count() == len(tl.true_events)
            assert page.locator("#timeline .ev-rep").count() == len(tl.reported_events)
            assert page.locator("#timeline .match-line").count() == len(tl.matches) > 0
            assert page.locator("#timeline .ev-true.missed").count() == len(tl.true_events) - len(tl.matches)
            assert (
                page.locator("#timeline .ev-rep.unmatched").count() == (len(tl.reported_events) - len(tl.matches)) > 0
            )
            assert page.locator("#timeline .window").count() == len(tl.true_events)
            assert page.locator("#timeline .frame-tick").count() == len(inject.frames)
            facts = page.locator("#detail-facts dt").all_inner_texts()
            assert facts[:3] == ["answer", "predicted", "matched K / reported M / true N"]
            assert "outcome" in facts and "trial" in facts
            assert page.inner_text("#detail-columns") == "N = 4 · F (Hz) = 1 · predicted = 3 · F1 = 0.75"

            # Frame strip: every thumbnail decoded, captioned with its time.
            thumbs = page.eval_on_selector_all("#frame-strip img", "imgs => imgs.map(i => i.naturalWidth)")
            assert len(thumbs) == len(inject.frames) and all(w > 0 for w in thumbs)
            assert page.locator("#frame-strip figcaption").first.inner_text().startswith("t=0.50s")

            # The model's text is shown verbatim, as text: no element made from it, no script ran.
            raw = page.locator("#raw-text")
            assert MALICIOUS in raw.inner_text()
            assert raw.evaluate("e => e.children.length") == 0
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.evaluate("typeof window.__pwned2") == "undefined"
            assert page.locator("b").count() == 0
            assert dialogs == []
            page.locator("#viewer").screenshot(path=str(shots / "report_viewer.png"))

            page.click('#trial-rows tr[data-trial-id="t-qwen"]')
            assert page.locator("#timeline .ev-true.missed").count() == 2
            assert page.locator("#timeline .ev-rep").count() == 0
            assert "No thumbnails" in page.locator("#frame-strip").inner_text()
            page.screenshot(path=str(shots / "report_full.png"), full_page=True)
            assert errors == [], f"the page's script failed: {errors}"

            # A report no suite made: its figures load, its viewer lists its own columns, no timeline.
            page.goto(g_url, wait_until="load")
            sizes = page.eval_on_selector_all(
                "figure.figure img", "imgs => imgs.map(i => [i.complete, i.naturalWidth])"
            )
            assert len(sizes) == 2 and all(done and w > 0 for done, w in sizes), sizes
            assert page.locator("#trial-table thead th").all_inner_texts() == [
                "model",
                "condition",
                "probe",
                "score",
                "verdict",
                "ok",
            ]
            assert page.locator("#trial-rows tr").count() == len(g_trials)
            page.select_option("#f-group", "y")
            assert page.locator("#trial-rows tr").count() == 3
            page.select_option("#f-group", "")
            page.click('#trial-rows tr[data-trial-id="g-3"]')
            assert page.get_attribute("#detail-body", "data-trial-id") == "g-3"
            assert not page.is_visible("#timeline")
            assert page.locator("#detail-facts dd").first.inner_text() == "q3 <i>?</i>"
            assert MALICIOUS in page.inner_text("#raw-text")
            assert page.locator("i").count() == 0
            page.screenshot(path=str(shots / "report_generic.png"), full_page=True)
            assert errors == [] and dialogs == [], (errors, dialogs)

            # The default page: each heatmap an inline SVG, laid out, its cells' numbers readable as text.
            page.goto(svg_url.resolve().as_uri(), wait_until="load")
            assert page.locator("figure.figure img").count() == 0
            grids = page.eval_on_selector_all(
                "figure.figure-grid svg",
                "ss => ss.map(s => { const b = s.getBoundingClientRect(); return "
                "[b.width, b.height, [...s.querySelectorAll('g.cell text.v')].map(t => t.textContent), "
                "s.closest('figure').dataset.figureId]; })",
            )
            assert len(grids) == n_heatmaps
            figs = {f.id: f for sec in report.sections for f in sec.figures}
            for w, h, texts, fid in grids:
                assert w > 150 and h > 80, (fid, w, h)
                want = [_fmt_value(v) for row in figs[fid].values for v in row if v is not None]
                assert sorted(texts) == sorted(want), fid
            first = page.locator("figure.figure-grid svg g.cell").first
            assert first.locator("title").text_content().count(" · ") >= 1  # the cell's tooltip names it
            page.locator("#sec-surfaces").screenshot(path=str(shots / "report_surfaces_svg.png"))
            lines = page.eval_on_selector_all(
                "figure.figure-line svg",
                "ss => ss.map(s => [s.getBoundingClientRect().width, s.querySelectorAll('polyline').length])",
            )
            assert lines and all(w > 150 and n > 0 for w, n in lines), lines
            page.goto(g_svg_url, wait_until="load")
            assert page.locator("figure.figure svg").count() == 2
            assert "<b>" not in page.inner_html("figure.figure-grid svg")  # labels escaped in the SVG too
            assert errors == [] and dialogs == [], (errors, dialogs)
        finally:
            browser.close()

    assert blocked == [], f"the report tried to reach the network: {blocked}"
    assert all(u.startswith(("file:", "data:")) for u in requested), requested
    assert (shots / "report_viewer.png").stat().st_size > 10_000
