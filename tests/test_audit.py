"""``vidaudit audit`` and ``vidaudit compare`` end to end through the CLI, on real generated data and real runs.

The smoke audit of oracle and chance runs once (a few minutes on 2 cores) and is shared by the tests that read
its profile; the resume test kills a real audit process mid-run against a local OpenAI-compatible server and
checks that the rerun repeats no stored call.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from httpfake import FakeServer, Recorded, Reply
from vidaudit.audit.budgets import min_detectable_difference
from vidaudit.audit.profile import Profile

SRC = Path(__file__).resolve().parents[1] / "src"


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", **(env or {})}
    return subprocess.run([sys.executable, "-m", "vidaudit.cli", *args], capture_output=True, text=True, check=False,
                          timeout=timeout, env=full)


@pytest.fixture(scope="module")
def smoke_audit(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, float]:
    out = tmp_path_factory.mktemp("audit") / "A"
    t0 = time.monotonic()
    r = _cli("audit", "--model", "oracle", "--model", "chance", "--budget", "smoke", "--out", str(out),
             "--workers", "2")
    seconds = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    print(f"smoke audit of oracle and chance: {seconds:.0f} s wall, load average {os.getloadavg()[0]:.1f}")
    return out, r.stdout + r.stderr, seconds


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the shared smoke audit runs inside the first of these (minutes on 2 busy cores)
def test_smoke_audit_profile(smoke_audit: tuple[Path, str, float]) -> None:
    out, log, _ = smoke_audit
    assert "audit plan: estimated cost per model and suite" in log
    profile = Profile.model_validate(json.loads((out / "profile.json").read_text()))
    suites = {p.suite for p in profile.parts}
    assert suites == {"counting", "faithful", "stress"}
    assert {p.name for p in profile.parts} >= {"counting", "faithful", "camera_motion", "cross_frame", "wireframe",
                                                "mosaic", "shortcuts", "sycophancy", "expectation"}
    rows = {r.model: r for r in profile.rows}
    assert set(rows) == {"oracle", "chance"}
    for part in profile.parts:
        assert (out / part.report_html).is_file(), part.report_html
        assert part.trials_per_model > 0
        assert part.min_detectable_difference == pytest.approx(min_detectable_difference(part.trials_per_model))
        oracle, chance = rows["oracle"].figures[part.name], rows["chance"].figures[part.name]
        assert oracle and chance, part.name
        for f in oracle:  # the oracle is at 100% wherever it is scored
            if f.kind == "accuracy":
                assert f.value == 1.0 and (f.n is None or f.k == f.n > 0), (part.name, f)
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
    r = _cli("compare", str(out), str(out / "profile.json"), "--out", str(tmp_path / "cmp.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads((tmp_path / "cmp.json").read_text())
    counting = next(b for b in res["parts"] if b["part"] == "counting")
    pair = next(p for p in counting["paired"] if p["a"].endswith(":oracle") and p["b"].endswith(":chance")
                and p["a"].split(":")[0] == p["b"].split(":")[0])
    assert pair["n_pairs"] == 18 and pair["estimate"] < -0.5 and pair["ci_high"] < 0
    same = next(p for p in counting["paired"] if p["a"].endswith(":oracle") and p["b"].endswith(":oracle"))
    assert same["estimate"] == 0.0 and same["n_pairs"] == 18  # the same trials in two audits: no difference


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the shared smoke audit runs inside the first of these (minutes on 2 busy cores)
def test_profile_html_in_headless_chromium(smoke_audit: tuple[Path, str, float]) -> None:
    from test_report_browser import CHROMIUM, LAUNCH_ARGS, _require_browser

    _require_browser()
    from playwright.sync_api import sync_playwright

    out, _, _ = smoke_audit
    html = (out / "profile.html").read_text()
    assert "<script" not in html and "http://" not in html and "https://" not in html
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        page = browser.new_page()
        requests: list[str] = []
        page.on("request", lambda req: requests.append(req.url))
        page.goto((out / "profile.html").resolve().as_uri())
        models = page.eval_on_selector_all("#profile tbody tr", "rs => rs.map(r => r.dataset.model)")
        assert models[:2] == ["oracle", "chance"] and "Gemini 2.5 Pro" in models
        kinds = page.eval_on_selector_all("#profile tbody tr.published", "rs => rs.length")
        assert kinds == len(models) - 2
        links = page.eval_on_selector_all("#profile thead a", "as => as.map(a => a.getAttribute('href'))")
        assert len(links) >= 9 and all((out / h).is_file() for h in links)
        browser.close()
    assert all(u.startswith("file://") for u in requests), requests


def test_profile_escapes_untrusted_text(tmp_path: Path) -> None:
    from vidaudit.audit.build import write_profile_files
    from vidaudit.audit.profile import ModelRow, PartInfo
    from vidaudit.report.profile_figures import accuracy

    evil = "<img src=x onerror=alert(1)>|**x**"
    part = PartInfo(suite="counting", name="counting", preset="smoke", dataset_key="k" * 64, data_dir="d",
                    run_dir="r", report_html="r/report/report.html", conditions=["frames@1"], trials_per_model=4,
                    notes=[evil])
    profile = Profile(vidaudit_version="0", created_at="now", budget="smoke", models=[evil], parts=[part],
                      rows=[ModelRow(model=evil, figures={"counting": [accuracy("exact match", 3, 4)]})])
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
    return {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}}


def test_dry_run_openai_spec_calls_nothing(tmp_path: Path) -> None:
    with FakeServer() as srv:
        spec = f"openai:Qwen/Qwen2.5-VL-7B@{srv.url}/v1"
        r = _cli("audit", "--model", spec, "--suite", "faithful", "--budget", "smoke", "--out", str(tmp_path / "A"),
                 "--dry-run", env={"OPENAI_API_KEY": "sk-test"})
        assert r.returncode == 0, r.stdout + r.stderr
        assert srv.requests == []
    text = r.stdout + r.stderr
    assert "estimated cost per model and suite" in text and "faithful" in text and "60" in text
    assert "dry run: nothing was called" in text
    assert not (tmp_path / "A" / "runs").exists() and not (tmp_path / "A" / "profile.json").exists()
    r = _cli("audit", "--model", "openai:gpt-4o", "--suite", "faithful", "--budget", "smoke", "--out",
             str(tmp_path / "A"), "--max-cost-usd", "0.0001", env={"OPENAI_API_KEY": "sk-test"})
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
        args = [sys.executable, "-m", "vidaudit.cli", "audit", "--model", spec, "--suite", "faithful", "--budget",
                "smoke", "--out", str(out)]
        env = {**os.environ, "PYTHONPATH": str(SRC), "OPENAI_API_KEY": "sk-test"}
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
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
        r = _cli("audit", "--model", spec, "--suite", "faithful", "--budget", "smoke", "--out", str(out),
                 env={"OPENAI_API_KEY": "sk-test"})
        assert r.returncode == 0, r.stdout + r.stderr
    second = answered[len(first):]
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
