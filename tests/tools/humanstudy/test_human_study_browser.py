"""The human-study round trip in a real headless Chromium: export a camera_motion study from a run, open the page
from file:// with no network, answer as two annotators (some answers wrong on purpose), download the answers
files, import them, and the report shows exactly the accuracy and kappa those answers imply, also in the
camera-motion table's human-ceiling column. Then the two-phase (masked, then raw) page, and bad answers files.

Needs /usr/bin/chromium and Playwright for Python (see tests/report/test_report_browser.py, whose launch rules it
shares).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from browser import CHROMIUM, LAUNCH_ARGS, require_browser
from vidaudit.cli import app


def _cli(*args: str) -> str:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


def _cli_fails(*args: str) -> str:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 2, r.output
    return " ".join(r.output.split())


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("human_study")
    _cli("generate", "stress", "--probe", "camera_motion", "--out", root / "data")
    _cli(
        "run", "stress", "--data", root / "data", "--model", "oracle", "--condition", "frames@4", "--out", root / "run"
    )
    return root / "run"


def _cohen(a: list[str], b: list[str]) -> float:
    """Cohen's kappa written out here, independently of vidaudit.score.kappa."""
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb.get(k, 0) for k in ca) / n**2
    return (po - pe) / (1 - pe)


def _wrong(letter: str) -> str:
    return "A" if letter != "A" else "B"


class _Browser:
    def __init__(self, p) -> None:
        self.browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        self.blocked: list[str] = []
        self.errors: list[str] = []

    def open(self, url: str):
        ctx = self.browser.new_context(accept_downloads=True)
        page = ctx.new_page()
        page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r):
            if r.request.url.startswith(("file:", "data:", "blob:")):
                r.continue_()
            else:
                self.blocked.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.goto(url, wait_until="load")
        return page


def _videos_decoded(page) -> list:
    page.wait_for_function(
        "[...document.querySelectorAll('video')].every(v => v.readyState >= 2 || v.error)", timeout=15000
    )
    return page.eval_on_selector_all(
        "video", "vs => vs.map(v => [v.readyState, v.error && v.error.code, v.videoWidth])"
    )


def _answer_and_download(page, annotator: str, answers: dict[str, str], dest: Path) -> Path:
    for item, letter in answers.items():
        page.check(f'input[type="radio"][name="{item}"][value="{letter}"]')
    page.fill("#annotator", annotator)
    with page.expect_download() as d:
        page.click("#download")
    d.value.save_as(dest)
    return dest


def test_round_trip_in_chromium(run_dir: Path, tmp_path: Path) -> None:
    require_browser()
    from playwright.sync_api import sync_playwright

    page_path = tmp_path / "study" / "study.html"
    _cli("human-study", "export", run_dir, "--out", page_path, "--sample", "8", "--seed", "4")
    manifest = json.loads((tmp_path / "study" / "study.json").read_text())
    items = manifest["items"]
    assert len(items) == 8 and (run_dir / "human_studies" / f"{manifest['study']}.json").is_file()
    html = page_path.read_text()
    for it in items:  # neither the answer nor a sample id is in the page
        assert it["sample_id"] not in html and it["sample_id"].split("-")[2] not in html
    correct = {it["item_id"]: it["correct"] for it in items}
    ids = [it["item_id"] for it in items]
    alice = dict(correct, **{ids[0]: _wrong(correct[ids[0]])})
    bob = dict(correct, **{ids[1]: _wrong(correct[ids[1]]), ids[2]: _wrong(correct[ids[2]])})

    with sync_playwright() as p:
        b = _Browser(p)
        try:
            page = b.open(page_path.resolve().as_uri())
            assert page.locator("[data-item-id]").count() == 8
            assert all(page.locator(f'input[type="radio"][name="{i}"]').count() == 6 for i in ids)
            states = _videos_decoded(page)
            assert all(rs >= 2 and err is None and w == 160 for rs, err, w in states), states
            page.click("#download")  # no annotator yet: refused, nothing downloaded
            assert "annotator" in page.inner_text("#message")
            f_alice = _answer_and_download(page, "alice", alice, tmp_path / "alice.json")
            assert "8 of 8 answered" in page.inner_text("#progress")
            page = b.open(page_path.resolve().as_uri())
            f_bob = _answer_and_download(page, "bob", bob, tmp_path / "bob.json")
            # the folder layout: videos beside the page, still playable from file://
            _cli(
                "human-study",
                "export",
                run_dir,
                "--out",
                tmp_path / "f" / "s.html",
                "--sample",
                "2",
                "--media",
                "folder",
            )
            assert len(list((tmp_path / "f" / "s_media").iterdir())) == 2
            states = _videos_decoded(b.open((tmp_path / "f" / "s.html").resolve().as_uri()))
            assert all(rs >= 2 and err is None for rs, err, _ in states), states
        finally:
            b.browser.close()
    assert b.errors == [] and b.blocked == []

    sheet = json.loads(f_alice.read_text())
    assert sheet == {"annotator": "alice", "study": manifest["study"], "answers": alice}
    assert json.loads(f_bob.read_text())["answers"] == bob

    _cli("human-study", "import", f_alice, f_bob, "--into", run_dir)
    _cli("report", run_dir)
    report = json.loads((run_dir / "report" / "report.json").read_text())
    n_right = sum(alice[i] == correct[i] for i in ids) + sum(bob[i] == correct[i] for i in ids)
    assert n_right == 13
    kappa = _cohen([alice[i] for i in ids], [bob[i] for i in ids])
    hs = report["results"]["human_study"]
    assert hs["overall"]["n_correct"] == 13 and hs["overall"]["n_answers"] == 16
    assert hs["overall"]["agreement"]["kappa"] == pytest.approx(kappa)
    assert hs["overall"]["agreement"]["unanimity"] == pytest.approx(5 / 8)
    section = next(s for s in report["sections"] if s["id"] == "human-study")
    row = next(r for r in section["tables"][0]["rows"] if r[:2] == ["camera_motion", "video"])
    assert row[2] == "81.2 (13/16)" and row[4] == f"{kappa:.3f} (cohen)" and row[5] == "62.5"
    camera = next(t for s in report["sections"] for t in s["tables"] if t["id"] == "stress-camera-accuracy")
    assert [r[0] for r in camera["rows"]] == ["oracle"]  # the humans are not a model row
    assert camera["rows"][0][-1] == "81.2 (13/16)"
    md = (run_dir / "report" / "report.md").read_text()
    assert "## Human study" in md and f"{kappa:.3f} (cohen)" in md

    # bad answers files: a clear message naming the file or item, and nothing written
    before = {n: (run_dir / n).read_bytes() for n in ("human_records.jsonl", "human_study.json")}
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**sheet, "study": "hs-0000000000000000"}))
    msg = _cli_fails(
        "human-study", "import", f_bob, other, "--into", run_dir, "--study", tmp_path / "study" / "study.json"
    )
    assert str(other) in msg and "for study hs-0000000000000000" in msg
    broken = tmp_path / "broken.json"
    broken.write_text(f_alice.read_text()[:-5])
    msg = _cli_fails("human-study", "import", broken, "--into", run_dir, "--study", tmp_path / "study" / "study.json")
    assert str(broken) in msg and "not valid JSON" in msg
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({**sheet, "annotator": "carol", "answers": {"i000000000000": "A"}}))
    msg = _cli_fails("human-study", "import", f_alice, unknown, "--into", run_dir)
    assert str(unknown) in msg and "i000000000000" in msg
    msg = _cli_fails("human-study", "import", f_alice, f_alice, "--into", run_dir)
    assert "annotator 'alice'" in msg
    assert {n: (run_dir / n).read_bytes() for n in before} == before


def test_two_phase_page(run_dir: Path, tmp_path: Path) -> None:
    """Samples sharing params.study_pair: the masked (phase 1) item first; phase 2 opens only after phase 1 is
    answered and locked."""
    require_browser()
    from playwright.sync_api import sync_playwright

    from vidaudit.core.manifest import load_samples, write_manifest

    src = json.loads((run_dir / "run.json").read_text())["data_dir"]
    data = tmp_path / "paired"
    data.mkdir()
    (data / "videos").symlink_to(Path(src) / "videos")
    (data / "dataset.json").write_text(
        json.dumps({**json.loads((Path(src) / "dataset.json").read_text()), "external_videos": True})
    )  # videos shared by a symlink
    samples = load_samples(src)[:4]
    paired = [
        s.model_copy(update={"params": {**s.params, "study_pair": f"q{i // 2}", "study_phase": 1 + i % 2}})
        for i, s in enumerate(samples)
    ]
    write_manifest(data, paired)
    _cli("human-study", "export", data, "--out", tmp_path / "p.html", "--seed", "2")
    items = json.loads((tmp_path / "p.json").read_text())["items"]
    assert [(it["pair"], it["phase"]) for it in items[:2]] in ([("q0", 1), ("q0", 2)], [("q1", 1), ("q1", 2)])
    assert sorted(it["pair"] for it in items) == ["q0", "q0", "q1", "q1"]
    first = [it["item_id"] for it in items if it["phase"] == 1]
    second = [it["item_id"] for it in items if it["phase"] == 2]
    with sync_playwright() as p:
        b = _Browser(p)
        try:
            page = b.open((tmp_path / "p.html").resolve().as_uri())
            assert page.is_hidden("#phase2") and page.is_disabled("#unlock-phase2")
            order = page.eval_on_selector_all("[data-item-id]", "es => es.map(e => e.dataset.itemId)")
            assert order[:2] == first and order[2:] == second
            page.check(f'input[name="{first[0]}"][value="A"]')
            assert page.is_disabled("#unlock-phase2")
            page.check(f'input[name="{first[1]}"][value="C"]')
            page.click("#unlock-phase2")
            assert page.is_visible("#phase2")
            assert page.is_disabled(f'input[name="{first[0]}"][value="B"]')  # phase-1 answers are locked
            page.check(f'input[name="{second[0]}"][value="D"]')
            page.fill("#annotator", "dana")
            with page.expect_download() as d:
                page.click("#download")
            d.value.save_as(tmp_path / "dana.json")
        finally:
            b.browser.close()
    assert b.errors == []
    got = json.loads((tmp_path / "dana.json").read_text())["answers"]
    assert got == {first[0]: "A", first[1]: "C", second[0]: "D"}
