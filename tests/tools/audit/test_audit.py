"""``vidaudit audit`` and ``vidaudit compare`` end to end through the CLI, on real generated data and real runs.

The smoke audit of oracle and chance runs once (a few minutes on 2 cores) and is shared by the tests that read
its profile; the resume test kills a real audit process mid-run against a local OpenAI-compatible server and
checks that the rerun repeats no stored call.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditseed import seed_counting_smoke
from clirun import invoke
from httpfake import FakeServer, Recorded, Reply
from vidaudit.tools.audit.budgets import min_detectable_difference
from vidaudit.tools.audit.profile import Profile

SRC = Path(__file__).resolve().parents[3] / "src"


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env=full,
    )


def _in_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The same command through the CLI's own entry point in this process (tests/clirun.py): the ~20 reads of an
    audit's figures need no fresh interpreter each (the audits themselves, their resume and the refusals run as
    real processes)."""
    return invoke(*args, env={"COLUMNS": "200", **(env or {})})


#: a judge that needs no weights, key or network: the constant model answering every verdict field a pass (the
#: expectation probe's judged tasks read ``score``, ``hallucinated_summary`` or ``describes_shown_order``)
OFFLINE_JUDGE = 'constant:{"score": 1, "hallucinated_summary": false, "describes_shown_order": true}'


@pytest.fixture(scope="module")
def smoke_audit(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, float]:
    """The smoke audit of oracle and chance, every suite; its counting folder is the session's smoke set, certified
    (tests/auditseed.py): reused, not rendered again (the audit renders the other parts' data)."""
    out = tmp_path_factory.mktemp("audit") / "A"
    seed_counting_smoke(out / "data", smoke_dir)
    t0 = time.monotonic()
    r = _cli(
        "audit", "--model", "oracle", "--model", "chance", "--budget", "smoke", "--out", str(out), "--workers", "2"
    )
    seconds = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    print(f"smoke audit of oracle and chance: {seconds:.0f} s wall, load average {os.getloadavg()[0]:.1f}")
    (out.parent / "stdout.txt").write_text(r.stdout)
    return out, r.stdout + r.stderr, seconds


@pytest.fixture(scope="module")
def judged_audit(smoke_audit: tuple[Path, str, float]) -> tuple[Path, str]:
    """The stress suite audited again with an offline judge, on the smoke audit's datasets (reused by content)."""
    data = smoke_audit[0] / "data"
    out = smoke_audit[0].parent / "J"
    r = _cli(
        "audit",
        "--model",
        "oracle",
        "--suite",
        "stress",
        "--budget",
        "smoke",
        "--out",
        str(out),
        "--data-root",
        str(data),
        "--judge",
        OFFLINE_JUDGE,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return out, r.stdout


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the shared smoke audit runs inside the first of these (minutes on 2 busy cores)
def test_smoke_audit_profile(smoke_audit: tuple[Path, str, float]) -> None:
    out, log, _ = smoke_audit
    assert "audit plan: estimated cost per model and suite" in log
    profile = Profile.model_validate(json.loads((out / "profile.json").read_text()))
    suites = {p.suite for p in profile.parts}
    assert suites == {"counting", "faithful", "stress"}
    assert {p.name for p in profile.parts} >= {
        "counting",
        "faithful",
        "camera_motion",
        "cross_frame",
        "wireframe",
        "mosaic",
        "shortcuts",
        "sycophancy",
        "expectation",
    }
    rows = {r.model: r for r in profile.rows}
    assert set(rows) == {"oracle", "chance"}
    for part in profile.parts:
        assert (out / part.report_html).is_file(), part.report_html
        assert part.trials_per_model > 0
        # the resolution stated is the widest interval's: the smallest n of an accuracy figure the part shows
        shown = [f.n for r in profile.rows for f in r.figures[part.name] if f.kind == "accuracy" and f.n]
        shown += [f.n for f in part.observer_figures if f.kind == "accuracy" and f.n]
        assert part.resolution_n == min(shown) <= part.trials_per_model - part.unjudged.get("oracle", 0)
        # ... or, where an interval counted over sources is wider than min(shown) independent trials give, scaled
        # to the widest interval shown (two scenes moved six ways are two observations)
        figs = [f for r in profile.rows for f in r.figures[part.name]] + list(part.observer_figures)
        half = max((f.ci_high - f.ci_low) / 2 for f in figs if f.kind == "accuracy" and f.ci_low is not None)
        base = 1.959964 * math.sqrt(0.25 / min(shown))
        scale = max(1.0, half / base)
        assert part.ci_half_width == pytest.approx(base * scale)
        assert part.min_detectable_difference == pytest.approx(min_detectable_difference(min(shown)) * scale)
        oracle, chance = rows["oracle"].figures[part.name], rows["chance"].figures[part.name]
        assert oracle and chance, part.name
        for f in oracle:  # the oracle is at 100% wherever it is scored (a judged figure with no judge: no value)
            if f.kind == "accuracy" and f.note != "needs --judge":
                assert f.value == 1.0 and (f.n is None or f.k == f.n > 0), (part.name, f)
            elif f.kind == "accuracy":
                assert f.value is None and f.n == 0 and part.unjudged["oracle"] > 0, (part.name, f)
        for f in chance:  # chance is within its Wilson interval of the chance level, never the oracle's 100%
            if f.kind == "accuracy" and f.name in part.chance and f.n and f.n >= 8:
                assert f.ci_low <= part.chance[f.name] + 1e-9 or f.value < 1.0, (part.name, f)
        # the papers' published rows are separate and marked, never measured
        assert any(part.name in r.figures for r in profile.published), part.name
    assert all(r.kind == "published" and r.source for r in profile.published)
    assert not set(rows) & {r.model for r in profile.published}
    counting = {f.name: f for f in rows["oracle"].figures["counting"]}
    assert counting["max count boundary"].value == 12
    assert {f.name: f for f in rows["chance"].figures["counting"]}["max count boundary"].value == "<1"
    faithful = {f.name: f for f in rows["chance"].figures["faithful"]}
    assert set(faithful) == {"A_faith", "A_target", "A_sub", "A_cons"}
    published = {r.model: r for r in profile.published}
    assert published["Gemini 3.6 Flash"].figures["counting"][1].value == 12
    assert published["Gemini 2.5 Pro"].figures["camera_motion"][0].value == pytest.approx(0.243)
    md = (out / "profile.md").read_text()
    assert "published (paper)" in md and "| oracle | measured |" in md


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the shared smoke audit runs inside the first of these (minutes on 2 busy cores)
def test_smoke_audit_resumes_and_reuses(smoke_audit: tuple[Path, str, float]) -> None:
    out, _, _ = smoke_audit
    before = {p.name: p.stat().st_mtime_ns for p in (out / "data").iterdir() if p.name != ".locks"}
    r = _cli("audit", "--model", "oracle", "--model", "chance", "--budget", "smoke", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    text = r.stdout + r.stderr
    assert text.count("reused") == len(before)  # every dataset reused by its content key
    assert " 0 called" in text and "called (" not in text.replace("0 called (0 ok", "")
    assert {p.name: p.stat().st_mtime_ns for p in (out / "data").iterdir() if p.name != ".locks"} == before


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the shared smoke audit runs inside the first of these (minutes on 2 busy cores)
def test_compare_two_models_paired(smoke_audit: tuple[Path, str, float], tmp_path: Path) -> None:
    out, _, _ = smoke_audit
    r = _in_process("compare", str(out), str(out / "profile.json"), "--out", str(tmp_path / "cmp.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads((tmp_path / "cmp.json").read_text())
    counting = next(b for b in res["parts"] if b["part"] == "counting")
    pair = next(
        p
        for p in counting["paired"]
        if p["a"].endswith(":oracle") and p["b"].endswith(":chance") and p["a"].split(":")[0] == p["b"].split(":")[0]
    )
    assert pair["n_pairs"] == 18 and pair["estimate"] < -0.5 and pair["ci_high"] < 0
    same = next(p for p in counting["paired"] if p["a"].endswith(":oracle") and p["b"].endswith(":oracle"))
    assert same["estimate"] == 0.0 and same["n_pairs"] == 18  # the same trials in two audits: no difference


def _manifest(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _printed(stdout: str, part: str, entry: str) -> str:
    """The line ``compare`` printed for ``entry`` under ``== part (suite)``."""
    block = stdout.split(f"== {part} (")[1].split("\n== ")[0]
    return next(x for x in block.splitlines() if x.strip().startswith(f"{entry} "))


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the shared smoke audit runs inside the first of these (minutes on 2 busy cores)
def test_compare_counts_the_sources_the_report_counts(smoke_audit: tuple[Path, str, float], tmp_path: Path) -> None:
    """camera_motion moves each scene six ways: six videos, one scene. ``compare``'s interval and its paired
    bootstrap count the scenes (the stress suite's ``source_of``), as the part's report does, not the items nor
    the videos; faithful counts its source videos; read from compare's JSON and printed lines, against the
    datasets' manifests and the report.json the run wrote."""
    out, _, _ = smoke_audit
    r = _in_process("compare", str(out), "--out", str(tmp_path / "cmp.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads((tmp_path / "cmp.json").read_text())
    profile = Profile.model_validate(json.loads((out / "profile.json").read_text()))
    part = next(p for p in profile.parts if p.name == "camera_motion")
    samples = _manifest(out / part.data_dir / "manifest.jsonl")
    scenes = {s["params"]["scene"] for s in samples}
    assert len({s["video"]["sha256"] for s in samples}) > len(scenes) >= 2  # several videos of every scene
    block = next(b for b in res["parts"] if b["part"] == "camera_motion")
    report = json.loads((out / part.run_dir / "report" / "report.json").read_text())["results"]["camera_motion"]
    for e in block["entries"]:
        assert e["n"] == len(samples) and e["ci_unit"] == "scene" and e["n_sources"] == len(scenes), e
        # the part's one condition: the same trials
        (cell,) = [c for key, c in report["cells"].items() if key.startswith(f"{e['model']}|")]
        assert (cell["n_correct"], cell["n_planned"], cell["ci_unit"]) == (e["k"], e["n"], "scene")
        assert (e["ci_low"], e["ci_high"]) == pytest.approx((cell["ci_low"], cell["ci_high"]), abs=1e-12)
        line = _printed(r.stdout, "camera_motion", e["entry"])
        assert f"({e['k']}/{e['n']} trials, interval over {len(scenes)} scenes," in line, line
    pair = next(p for p in block["paired"] if p["a"].endswith(":oracle") and p["b"].endswith(":chance"))
    assert pair["n_pairs"] == len(samples) and pair["n_groups"] == len(scenes) and pair["group_unit"] == "scene"
    assert f"over {len(samples)} paired trials in {len(scenes)} scenes; too few scenes for a verdict" in r.stdout
    # faithful: a target and its sub-questions ask about one source video
    part = next(p for p in profile.parts if p.name == "faithful")
    videos = {s["params"]["source_video_id"] for s in _manifest(out / part.data_dir / "manifest.jsonl")}
    block = next(b for b in res["parts"] if b["part"] == "faithful")
    for e in block["entries"]:
        assert e["ci_unit"] == "video" and e["n_sources"] == len(videos) < e["n"], e
    # counting: one question per video, the interval over items as before
    block = next(b for b in res["parts"] if b["part"] == "counting")
    assert all(p["n_groups"] == 18 and "note" not in p for p in block["paired"])  # enough videos for a verdict
    for e in block["entries"]:
        assert e["ci_unit"] == "item" and e["n_sources"] == e["n"] == 18, e
        assert f"({e['k']}/18 trials, interval over 18 items," in _printed(r.stdout, "counting", e["entry"])


#: every element's width and right edge against the window, with every folded block opened first
_WIDER_THAN_THE_WINDOW = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const W = document.documentElement.clientWidth, bad = [];
  for (const el of document.querySelectorAll('body, body *')) {
    const r = el.getBoundingClientRect();
    if (r.width > W + 0.5 || r.right > W + 0.5) bad.push(`${el.tagName}.${el.className} ${Math.round(r.width)}px`);
  }
  return {W, scroll: document.documentElement.scrollWidth, bad};
}"""


def _profile_page(page, path: Path) -> dict:
    """What the test reads from a profile page at 1400 x 900: widths, the blocks and their rows."""
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(path.resolve().as_uri())
    blocks = page.eval_on_selector_all(
        "section.part",
        """ss => ss.map(s => ({
      part: s.dataset.part,
      measured: [...s.querySelectorAll('table.measured tbody tr')].map(r => [r.className, r.dataset.model,
                  ...[...r.querySelectorAll('td')].slice(1).map(td => td.innerText.replace(/\\s+/g, ' ').trim())]),
      heads: [...s.querySelectorAll('table.measured thead th')].map(th => th.innerText.trim()),
      published: [...s.querySelectorAll('details.published tbody tr')].map(r => r.dataset.model),
      summary: (s.querySelector('details.published summary') || {}).innerText || '',
      sticky: getComputedStyle(s.querySelector('td.model')).position}))""",
    )
    return {"blocks": blocks, "width": page.evaluate(_WIDER_THAN_THE_WINDOW)}


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the shared smoke audit runs inside the first of these (minutes on 2 busy cores)
def test_profile_html_in_headless_chromium(smoke_audit: tuple[Path, str, float], tmp_path: Path) -> None:
    """One block per part, measured models first, published rows folded and named by paper and table, the model
    column sticky, and no element wider than a 1400 px window (the old page was one table 5,968 px wide)."""
    from browser import CHROMIUM, LAUNCH_ARGS, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    out, _, _ = smoke_audit
    html = (out / "profile.html").read_text()
    assert "<script" not in html and "http://" not in html and "https://" not in html
    # the same profile with many models and long labels: still nothing wider than the window
    profile = Profile.model_validate(json.loads((out / "profile.json").read_text()))
    long = "openai:Qwen/Qwen2.5-VL-72B-Instruct-AWQ@http://gpu-node-17.cluster.example:8000/v1-" + "x" * 40
    rows = [r.model_copy(update={"model": f"{long}-{i}"}) for i in range(6) for r in profile.rows[:1]]
    wide = profile.model_copy(update={"models": [r.model for r in rows], "rows": rows})
    from vidaudit.tools.audit.build import write_profile_files

    write_profile_files(wide, tmp_path)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        page = browser.new_page()
        requests: list[str] = []
        page.on("request", lambda req: requests.append(req.url))
        seen = _profile_page(page, out / "profile.html")
        links = page.eval_on_selector_all("section.part h2 a", "as => as.map(a => a.getAttribute('href'))")
        crowded = _profile_page(page, tmp_path / "profile.html")
        browser.close()
    assert all(u.startswith("file://") for u in requests), requests
    for what in (seen, crowded):
        assert what["width"]["bad"] == [] and what["width"]["scroll"] <= what["width"]["W"], what["width"]
    blocks = {b["part"]: b for b in seen["blocks"]}
    assert list(blocks) == [p.name for p in profile.parts] and len(links) == len(blocks)
    assert all((out / h).is_file() for h in links)
    for b in blocks.values():
        kinds = [r[0] for r in b["measured"]]
        assert [r[1] for r in b["measured"]][:2] == ["oracle", "chance"] and kinds[:2] == ["measured", "measured"]
        assert set(kinds[2:]) <= {"reference"}  # chance level, observer, human ceiling: after the models
        assert b["sticky"] == "sticky" and b["heads"][0] == "model"
        assert b["published"], b["part"]  # folded beneath, named by the paper's title and table
        assert "paper 00" not in b["summary"] and ("Table" in b["summary"] or "Appendix" in b["summary"]), b["summary"]
    assert "Gemini 2.5 Pro" in blocks["camera_motion"]["published"]
    assert blocks["camera_motion"]["summary"].startswith("Published: 8 models — Reveal: Stress Tests Reveal Fragile")
    assert "The Low-Frequency Trap: Video-Language Models Fail" in blocks["counting"]["summary"]
    # the oracle's figures read 100% in every block (a boundary is a tested value, not a share)
    for name, b in blocks.items():
        oracle = next(r for r in b["measured"] if r[1] == "oracle")
        for head, cell in zip(b["heads"][1:], oracle[2:]):
            if head == "unjudged":
                assert cell.endswith("unjudged, need --judge"), (name, cell)
            elif "boundary" not in head and "F*" not in head and cell != "— (needs --judge)":
                assert cell.startswith("100.0%"), (name, head, cell)


def _table(text: str, first: str) -> list[list[str]]:
    """The rows of the plain-text table whose header starts with ``first`` (columns split on 2+ spaces)."""
    import re

    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first + " "))
    header = re.split(r"\s{2,}", lines[start].strip())
    rows = []
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        rows.append(dict(zip(header, re.split(r"\s{2,}", line.strip()))))
    return rows


def _oracle_everywhere(out: Path, stdout: str, *, judged: bool) -> None:
    """The oracle reads 100% wherever a figure is printed: the audit's closing table, each part's report headline
    and ``score`` table, profile.json and ``compare``; answers a judge must score and none did are counted beside
    the figure, never scored wrong."""
    profile = Profile.model_validate(json.loads((out / "profile.json").read_text()))
    rows = _table(stdout, "part")
    assert rows and {r["part"].split("/")[-1] for r in rows} == {p.name for p in profile.parts}
    for r in rows:
        cell = r["oracle"]
        if r["figure"] == "unjudged":
            assert not judged and cell.endswith(", need --judge") and int(cell.split(",")[0]) > 0, r
        elif r["figure"] == "anomaly (judged)" and not judged:
            assert cell == "— (needs --judge)", r
        elif "boundary" not in r["figure"] and "F*" not in r["figure"]:
            assert cell.startswith("100.0%"), r
    assert any(r["figure"] == "unjudged" for r in rows) is not judged
    oracle = next(r for r in profile.rows if r.model == "oracle")
    for part in profile.parts:
        for f in oracle.figures[part.name]:
            if f.kind == "accuracy" and f.value is not None:
                assert f.value == 1.0 and f.k == f.n, (part.name, f)
        assert bool(part.unjudged.get("oracle")) is (part.name == "expectation" and not judged), part
        # the part's report opens with the oracle at 1.000, unjudged answers beside it and in no n
        head = json.loads((out / part.run_dir / "report" / "report.json").read_text())["headline"]
        for row in head["rows"]:
            if row[0] == "oracle":
                for cell in row[2:]:
                    assert cell.startswith("1.000 ["), (part.name, cell)
                    assert ("unjudged, need --judge" in cell) is (part.name == "expectation" and not judged)
        r = _in_process("score", str(out / part.run_dir))
        assert r.returncode == 0, r.stdout + r.stderr
        scored = {x["model"]: x for x in _table(r.stdout, "model")}
        assert scored["oracle"]["accuracy [95% CI] (k/n)"].startswith("100.0% ["), (part.name, r.stdout)
        assert ("unjudged" in scored["oracle"]) is (part.name == "expectation" and not judged), r.stdout
    r = _in_process("compare", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    entries = [line for line in r.stdout.splitlines() if line.strip().startswith(f"{out.name}:oracle ")]
    assert len(entries) == len(profile.parts) and all(" 100.0% [" in e for e in entries), r.stdout
    assert sum("unjudged, need --judge" in e for e in entries) == (0 if judged else 1)


def _widest_claimed_and_shown(md: str) -> list[tuple[str, float, float, str]]:
    """Per part of profile.md: (part, the half-width its resolution line promises, the widest half-width of an
    interval in its measured rows, that cell), read from the file as written."""
    out = []
    for block in md.split("\n## ")[1:]:
        claim = re.search(r"95% intervals at most ±([0-9.]+) points", block)
        measured = block.split("\nPublished (")[0]
        cells = [c for line in measured.splitlines() if "| measured |" in line for c in line.split("|")]
        widest = max(
            ((float(m[2]) - float(m[1])) / 2, c.strip())
            for c in cells
            for m in re.finditer(r"\[([0-9.]+), ([0-9.]+)\]", c)
        )
        if claim:
            out.append((block.splitlines()[0], float(claim[1]), *widest))
    return out


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the shared smoke audit runs inside the first of these (minutes on 2 busy cores)
def test_a_parts_stated_interval_width_bounds_the_intervals_it_shows(smoke_audit: tuple[Path, str, float]) -> None:
    """A part's "95% intervals at most ±X points" holds for every interval printed under it, read from profile.md
    as written: X was once stated for all of a model's trials in the part while its figures are over subsets
    (faithful ±12.7 above chance's A_target [25.4, 74.6] (6/12), mosaic ±28.3 above [9.5, 90.5] (1/2))."""
    wider = [
        (part, claimed, shown, cell)
        for part, claimed, shown, cell in _widest_claimed_and_shown((smoke_audit[0] / "profile.md").read_text())
        if shown > claimed + 0.05
    ]
    assert not wider, wider


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the shared smoke audit runs inside the first of these (minutes on 2 busy cores)
def test_the_oracle_reads_100_percent_wherever_a_figure_is_printed(smoke_audit: tuple[Path, str, float]) -> None:
    out = smoke_audit[0]
    _oracle_everywhere(out, (out.parent / "stdout.txt").read_text(), judged=False)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_with_an_offline_judge_the_oracle_reads_100_percent_too(judged_audit: tuple[Path, str]) -> None:
    out, stdout = judged_audit
    _oracle_everywhere(out, stdout, judged=True)
    figs = {
        f.name: f
        for f in Profile.model_validate(json.loads((out / "profile.json").read_text())).rows[0].figures["expectation"]
    }
    assert figs["anomaly (judged)"].value == 1.0 and figs["anomaly (judged)"].n == 14


@pytest.mark.timeout(600)
def test_the_probe_outside_the_audit_reads_100_percent_for_the_oracle(tmp_path: Path) -> None:
    """lane_change (a user's annotated clips) is the one probe with an oracle that no audit runs (sycophancy_pairs
    is a generation step with no ground truth): generate, run, score and report it; 100% on stdout each time."""
    from laneclips import road_clip

    clips = tmp_path / "clips"
    clips.mkdir()
    for i in range(2):
        road_clip(clips / f"change{i}.mp4", True)
        road_clip(clips / f"straight{i}.mp4", False)
    (clips / "annotations.csv").write_text(
        "clip,label,start_s,end_s\n"
        + "".join(f"change{i}.mp4,lane_change,,\nstraight{i}.mp4,no_change,,\n" for i in range(2))
    )
    r = _in_process(
        "generate", "stress", "--probe", "lane_change", "--source", str(clips), "--out", str(tmp_path / "d")
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 samples" in r.stderr  # what was made, said by generate
    r = _in_process(
        "run",
        "--data",
        str(tmp_path / "d"),
        "--model",
        "oracle",
        "--condition",
        "frames@4",
        "--out",
        str(tmp_path / "run"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"next: vidaudit score {tmp_path / 'run'}" in r.stderr
    r = _in_process("score", str(tmp_path / "run"))
    assert r.returncode == 0 and _table(r.stdout, "model")[0]["accuracy [95% CI] (k/n)"].startswith("100.0% [")
    r = _in_process("report", str(tmp_path / "run"))
    assert r.returncode == 0, r.stdout + r.stderr
    oracle = next(row for row in _table(r.stdout, "model") if row["model"] == "oracle")
    assert list(oracle.values())[2].startswith("1.000 [") and list(oracle.values())[2].endswith("(4/4)")


def test_profile_escapes_untrusted_text(tmp_path: Path) -> None:
    from vidaudit.report.profile_figures import accuracy
    from vidaudit.tools.audit.build import write_profile_files
    from vidaudit.tools.audit.profile import ModelRow, PartInfo

    evil = "<img src=x onerror=alert(1)>|**x**"
    part = PartInfo(
        suite="counting",
        name="counting",
        preset="smoke",
        dataset_key="k" * 64,
        data_dir="d",
        run_dir="r",
        report_html="r/report/report.html",
        conditions=["frames@1"],
        trials_per_model=4,
        notes=[evil],
    )
    profile = Profile(
        vidaudit_version="0",
        created_at="now",
        budget="smoke",
        models=[evil],
        parts=[part],
        rows=[ModelRow(model=evil, figures={"counting": [accuracy("exact match", 3, 4)]})],
    )
    paths = write_profile_files(profile, tmp_path)
    html, md = paths["html"].read_text(), paths["md"].read_text()
    assert "<img" not in html and "&lt;img" in html
    import re

    row = next(line for line in md.splitlines() if line.startswith("| ") and "onerror" in line)
    assert len(re.split(r"(?<!\\)\|", row)) == 5  # model | kind | exact match: the "|" in the label is escaped
    assert "75.0% [" in row and "(3/4)" in row


def test_min_detectable_difference_formula() -> None:
    n = 730  # a counting paper domain
    assert min_detectable_difference(n) == pytest.approx((1.959964 + 0.841621) * math.sqrt(0.5 / n))
    assert min_detectable_difference(100) > min_detectable_difference(400) > 0
    assert min_detectable_difference(0) is None


def test_audit_refuses_bad_input(tmp_path: Path) -> None:
    r = _cli("audit", "--model", "oracle", "--budget", "huge", "--out", str(tmp_path / "A"))
    assert r.returncode == 2 and "unknown budget 'huge'" in r.stdout + r.stderr and "Traceback" not in r.stderr
    r = _cli("audit", "--budget", "smoke", "--out", str(tmp_path / "A"))
    assert r.returncode == 2 and "no model given" in r.stdout + r.stderr
    r = _cli("audit", "--model", "oracle", "--suite", "nope", "--out", str(tmp_path / "A"))
    assert r.returncode == 2 and "unknown suite 'nope'" in r.stdout + r.stderr
    r = _cli("compare", str(tmp_path / "missing"))
    assert r.returncode == 2 and "no profile.json" in r.stdout + r.stderr
    r = _cli("schema", "profile")
    assert r.returncode == 0 and json.loads(r.stdout)["title"] == "Profile"


def _completion(text: str) -> dict:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
    }


def test_dry_run_openai_spec_calls_nothing(tmp_path: Path) -> None:
    with FakeServer() as srv:
        spec = f"openai:Qwen/Qwen2.5-VL-7B@{srv.url}/v1"
        r = _in_process(
            "audit",
            "--model",
            spec,
            "--suite",
            "faithful",
            "--budget",
            "smoke",
            "--out",
            str(tmp_path / "A"),
            "--dry-run",
            env={"OPENAI_API_KEY": "sk-test"},
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert srv.requests == []
    text = r.stdout + r.stderr
    assert "estimated cost per model and suite" in text and "faithful" in text and "60" in text
    assert "dry run: nothing was called" in text
    assert not (tmp_path / "A" / "runs").exists() and not (tmp_path / "A" / "profile.json").exists()
    r = _in_process(
        "audit",
        "--model",
        "openai:gpt-4o",
        "--suite",
        "faithful",
        "--budget",
        "smoke",
        "--out",
        str(tmp_path / "A"),
        "--max-cost-usd",
        "0.0001",
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert r.returncode == 2 and "over --max-cost-usd" in r.stdout + r.stderr


@pytest.mark.timeout(900)
def test_killed_audit_resumes_without_repeating_a_stored_call(tmp_path: Path) -> None:
    """Kill a real audit process after some answered calls, rerun it: no answered call is asked again."""
    answered: list[bytes] = []
    slow = {"on": True}

    def reply(rec: Recorded) -> Reply:
        if slow["on"] and len(answered) >= 15:
            return Reply(json=_completion("Yes"), delay_s=60)  # hangs until the kill
        answered.append(rec.body)
        return Reply(json=_completion("Yes"))

    out = tmp_path / "A"
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=reply)
        spec = f"openai:Qwen/Qwen2.5-VL-7B@{srv.url}/v1"
        args = [
            sys.executable,
            "-m",
            "vidaudit.cli",
            "audit",
            "--model",
            spec,
            "--suite",
            "faithful",
            "--budget",
            "smoke",
            "--out",
            str(out),
        ]
        env = {**os.environ, "PYTHONPATH": str(SRC), "OPENAI_API_KEY": "sk-test"}
        proc = subprocess.Popen(
            args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 300
            while len(answered) < 15 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
            assert len(answered) >= 15, "the audit never reached the fake server"
            time.sleep(1.0)  # let the answered calls be stored
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        first = list(answered)
        slow["on"] = False
        r = _cli(
            "audit",
            "--model",
            spec,
            "--suite",
            "faithful",
            "--budget",
            "smoke",
            "--out",
            str(out),
            env={"OPENAI_API_KEY": "sk-test"},
        )
        assert r.returncode == 0, r.stdout + r.stderr
    second = answered[len(first) :]
    # 60 planned trials (12 targets, 48 sub-questions), each answered exactly once over the two sessions: the
    # rerun asked only for the trials the killed session had not stored (bodies are not unique: a sub-question
    # shared by two targets is the same request)
    assert len(first) >= 15 and len(second) == 60 - len(first)
    from collections import Counter

    assert Counter(first) + Counter(second) == Counter(first + second)
    scores = [json.loads(x) for x in (out / "runs" / "faithful" / "scores.jsonl").read_text().splitlines()]
    assert len(scores) == 60 and {r["status"] for r in scores} == {"ok"}
    profile = Profile.model_validate(json.loads((out / "profile.json").read_text()))
    assert [p.name for p in profile.parts] == ["faithful"]


def test_the_cost_estimate_counts_the_parts_observer_as_the_run_does(tmp_path: Path) -> None:
    """A part with a pixel observer runs it beside the audited models; the plan printed before any call counts its
    trials too (it once left them out, so "N trials in all" was short of what the audit ran)."""
    from vidaudit.core.contract.profile import AuditPart
    from vidaudit.core.registry import get_suite
    from vidaudit.core.types import ModelSpec
    from vidaudit.suites.stress.probe import GenerateOptions
    from vidaudit.suites.stress.wireframe.generate import generate
    from vidaudit.tools.audit.session import PlannedPart, estimate

    data = tmp_path / "data"
    generate(data, GenerateOptions(seeds=1))
    part = AuditPart(
        name="wireframe", preset="smoke", conditions=("frames#4",), probe="wireframe", observer="ideal-observer"
    )
    planned = PlannedPart(get_suite("stress"), part, "k", data, tmp_path / "run", ("frames#4",))
    rows = {r.model: r for r in estimate([planned], [ModelSpec.parse("oracle")])}
    assert set(rows) == {"oracle", "ideal-observer"}
    assert rows["ideal-observer"].trials == rows["oracle"].trials > 0
    assert rows["ideal-observer"].est_cost_usd == 0.0  # a local observer costs nothing: the total stays priced
