"""Edges of issue 36 (items 8 and 9): a video edited in place after the run, ``--sample K`` above the pool, and
tests for three deliberate one-line breakages no test noticed before (each seen failing against its mutant):

- ``run/snapshot.py::sample_digest`` ignoring the video's sha256 (a resume onto a regenerated video went on);
- ``score/stats.py::paired_bootstrap`` returning a 90% interval labelled 95% (checked against the exact
  bootstrap distribution: resampling n groups of 0/1 outcomes makes the mean a Binomial(n, p)/n, whose
  percentiles scipy gives exactly);
- ``report/tables.py::md_escape`` no longer escaping ``]:`` (a link reference definition injected into
  report.md, parsed with markdown-it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from scipy.stats import binom
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.manifest import load_samples
from vidaudit.report.tables import md_escape
from vidaudit.run.snapshot import sample_digest
from vidaudit.score.scored_run import read_checked
from vidaudit.score.stats import paired_bootstrap

runner = CliRunner()


def _cli(*args: object) -> tuple[int, str]:
    r = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "300"})
    return r.exit_code, " ".join(r.output.split())


@pytest.fixture
def data(smoke_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "data"
    shutil.copytree(smoke_dir, out, ignore=shutil.ignore_patterns("*.partial.jsonl"))
    return out


def _run(data: Path, run: Path) -> None:
    code, out = _cli("run", "counting", "--data", data, "--model", "oracle", "--condition", "frames@1", "--out", run)
    assert code == 0, out


# --------------------------------------------------------------------------- a video edited in place


def test_score_refuses_a_video_edited_in_place_after_the_run(data: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    _run(data, run)
    samples = load_samples(data)
    a, b = samples[0], samples[1]  # the same size, rate and length: b's bytes pass for a's file
    (data / a.video.path).write_bytes((data / b.video.path).read_bytes())  # the manifest is left as it was
    code, out = _cli("score", run)
    assert code == 2, out
    assert "changed since the run" in out and a.sample_id in out and "--allow-changed" in out
    assert not (run / "scores.jsonl").exists()
    code, out = _cli("score", run, "--allow-changed")  # scored on request, the sample named as changed
    assert code == 0, out
    assert read_checked(run)[0].changed == [a.sample_id]
    code, out = _cli("report", run)  # its thumbnails would not be the frames the model saw
    assert code == 2 and "changed since the run" in out, out


# --------------------------------------------------------------------------- --sample K above the pool


def test_human_study_sample_above_the_pool_says_so(data: Path, tmp_path: Path) -> None:
    n = len(load_samples(data))
    code, out = _cli("human-study", "export", data, "--out", tmp_path / "s.html", "--sample", n + 5)
    assert code == 2 and f"--sample {n + 5} asks for more units than the {n} there are" in out, out
    assert not (tmp_path / "s.html").exists()
    code, out = _cli(
        "human-study", "export", data, "--out", tmp_path / "s.html", "--sample", n + 5, "--allow-shortfall"
    )
    assert code == 0 and f"shortfall: --sample {n + 5}: {n} of {n + 5} units" in out, out
    assert f"{n} item(s)" in out
    code, out = _cli("human-study", "export", data, "--out", tmp_path / "t.html", "--sample", n)
    assert code == 0 and "shortfall" not in out and f"{n} item(s)" in out, out


# --------------------------------------------------------------------------- sample_digest and the video's sha256


def test_the_sample_digest_covers_the_video_sha256_and_not_its_path(smoke_dir: Path) -> None:
    s = load_samples(smoke_dir)[0]
    other = s.model_copy(update={"video": s.video.model_copy(update={"sha256": "0" * 64})})
    moved = s.model_copy(update={"video": s.video.model_copy(update={"path": "elsewhere/x.mp4"})})
    assert sample_digest(other) != sample_digest(s)
    assert sample_digest(moved) == sample_digest(s)


def test_a_resume_onto_a_regenerated_video_is_refused(data: Path, tmp_path: Path) -> None:
    """A video regenerated (new bytes, its new sha256 in the manifest, nothing else changed): the trial ids change,
    so only the snapshot notices that the run's sample is no longer the one it was planned on."""
    run = tmp_path / "run"
    _run(data, run)
    samples = load_samples(data)
    a, b = samples[0], samples[1]
    (data / a.video.path).write_bytes((data / b.video.path).read_bytes())
    lines = (data / "manifest.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    i = next(k for k, r in enumerate(rows) if r["sample_id"] == a.sample_id)
    rows[i]["video"]["sha256"] = b.video.sha256
    (data / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = (run / "samples.jsonl").read_bytes()
    code, out = _cli("run", "counting", "--data", data, "--model", "oracle", "--condition", "frames@1", "--out", run)
    assert code == 2 and "changed since this run dir was started" in out and a.sample_id in out, out
    assert (run / "samples.jsonl").read_bytes() == before


# --------------------------------------------------------------------------- the paired bootstrap's interval


def _binomial_interval(n: int, p: float, confidence: float) -> tuple[float, float]:
    alpha = (1 - confidence) / 2
    return float(binom.ppf(alpha, n, p) / n), float(binom.ppf(1 - alpha, n, p) / n)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_bootstrap_interval_is_the_percentile_interval_it_says(seed: int) -> None:
    # 100 samples, each its own source video; b is right on 50, a on none: the resampled difference is
    # Binomial(100, 0.5) / 100, whose 2.5% and 97.5% points are 0.40 and 0.60 (5% and 95%: 0.42 and 0.58)
    a, b = [0.0] * 100, [1.0] * 50 + [0.0] * 50
    for confidence in (0.95, 0.90):
        res = paired_bootstrap(a, b, list(range(100)), n_boot=200_000, seed=seed, confidence=confidence)
        assert res.confidence == confidence and res.estimate == 0.5
        assert (res.ci_low, res.ci_high) == pytest.approx(_binomial_interval(100, 0.5, confidence), abs=1e-12)
    assert _binomial_interval(100, 0.5, 0.95) == (0.40, 0.60) and _binomial_interval(100, 0.5, 0.90) == (0.42, 0.58)


def test_the_bootstrap_resamples_whole_source_videos() -> None:
    # the same outcomes in 50 videos of two samples each: Binomial(50, 0.5) / 50, wider than 100 independent ones
    a, b = [0.0] * 100, [1.0] * 50 + [0.0] * 50
    res = paired_bootstrap(a, b, [i // 2 for i in range(100)], n_boot=200_000, seed=3)
    assert (res.ci_low, res.ci_high) == pytest.approx(_binomial_interval(50, 0.5, 0.95), abs=1e-12)
    assert (res.n_pairs, res.n_groups) == (100, 50)


# --------------------------------------------------------------------------- a link reference definition


MD = MarkdownIt("commonmark", {"html": True}).enable("table")
DEFINITIONS = [
    "[ref]: http://127.0.0.1:9/ref",
    "[ref]:http://127.0.0.1:9/ref",
    '[ref]: <http://127.0.0.1:9/x> "t"',
    "[x] [ref]: http://127.0.0.1:9/ref",
]


def _tokens(tokens) -> list:
    out = []
    for t in tokens:
        out.append(t)
        out += _tokens(t.children or [])
    return out


@pytest.mark.parametrize("hostile", DEFINITIONS)
def test_user_text_cannot_define_a_link_in_report_md(hostile: str) -> None:
    """Where report.md puts user text at the start of a block (a paragraph, a list item, the settings list's
    ``- LABEL: (defaults)``), a ``[ref]: URL`` must stay text: else a later ``[ref]`` anywhere in the file becomes
    a link to the URL."""
    for doc in (
        f"{md_escape(hostile)}\n\n[ref]",
        f"- {md_escape(hostile)}\n\n[ref]",
        f"- **settings sent**:\n  - {md_escape(hostile, label=True)}: (defaults)\n\n[ref]",
    ):
        env: dict = {}
        tokens = MD.parse(doc, env)
        assert not env.get("references"), (hostile, doc)
        assert not [t for t in _tokens(tokens) if t.type == "link_open"], (hostile, doc)
        assert "127.0.0.1" in MD.render(doc) and 'href="http' not in MD.render(doc), doc
