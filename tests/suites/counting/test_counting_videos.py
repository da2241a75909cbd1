"""Rendered videos: pixel verification, determinism, static N = 0, CLI errors, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import load_samples
from vidaudit.suites.counting.generate import generate
from vidaudit.suites.counting.grid import DOMAINS, GridPoint
from vidaudit.suites.counting.running_count import replay
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.suites.counting.verify import check_video
from vidaudit.video.decode import iter_frames, read_frames
from vidaudit.video.probe import probe

runner = CliRunner()


def test_smoke_manifest_fields(smoke_dir: Path) -> None:
    samples = load_samples(smoke_dir)
    assert {s.params["domain"] for s in samples} == set(DOMAINS)
    for s in samples:
        info = probe(smoke_dir / s.video.path)
        assert (s.video.n_frames, s.video.duration_s, s.video.fps) == (info.n_frames, info.duration_s, info.fps)
        assert s.video.n_frames == 720 and s.video.duration_s == 24.0
        assert (s.video.width, s.video.height) == (854, 480)
        assert s.video.sha256 == sha256_file(smoke_dir / s.video.path)
        assert s.answer == s.params["n_events"] == replay(s.trace)
    info = json.loads((smoke_dir / "dataset.json").read_text())
    assert info["generator_version"] and info["libraries"]["av"] and info["render"]["fps"] == 30.0


def test_verify_cli_passes_on_smoke(smoke_dir: Path) -> None:
    r = runner.invoke(app, ["verify", str(smoke_dir), "--workers", "2"])
    assert r.exit_code == 0, r.output
    assert "all 18 samples verified" in r.output


def test_verify_fails_loudly_on_a_wrong_trace(smoke_dir: Path, tmp_path: Path) -> None:
    """Move one event by 3 frames in a copy of the manifest: verify must name the sample and exit 1."""
    s = next(s for s in load_samples(smoke_dir) if s.answer == 3)
    ev = list(s.trace.events)
    ev[1] = ev[1].model_copy(update={"frame": ev[1].frame + 3})
    assert check_video(s.params["domain"], smoke_dir / s.video.path, s.trace, 30.0) == []
    assert check_video(
        s.params["domain"], smoke_dir / s.video.path, s.trace.model_copy(update={"events": tuple(ev)}), 30.0
    )


def test_verify_detects_a_swapped_video(smoke_dir: Path, tmp_path: Path) -> None:
    samples = load_samples(smoke_dir)
    a = next(s for s in samples if s.params["domain"] == "blinking" and s.answer == 12)
    b = next(s for s in samples if s.params["domain"] == "blinking" and s.answer == 3)
    assert check_video("blinking", smoke_dir / b.video.path, a.trace, 30.0)


def test_n0_is_fully_static(smoke_dir: Path) -> None:
    """N = 0: the renderer emits one frame for the whole clip, and the decoded video shows no change
    beyond H.264 requantisation at keyframes (at most a few levels), which the detector ignores."""
    for s in load_samples(smoke_dir):
        if s.answer == 0:
            point = GridPoint(s.params["domain"], 0, s.params["frequency_hz"], s.params["seed"])
            runs = list(make_scene(point).frame_runs())
            assert [r for _, r in runs] == [720], s.sample_id
            frames = iter_frames(smoke_dir / s.video.path)
            first = next(frames).astype(np.int16)
            worst = max(int(np.abs(f.astype(np.int16) - first).max()) for f in frames)
            assert worst <= 6, (s.sample_id, worst)
            assert check_video(s.params["domain"], smoke_dir / s.video.path, s.trace, 30.0) == []


def test_static_outside_the_active_span(smoke_dir: Path) -> None:
    """Before the lead-in the ball rests: one source frame covers the static lead, and the decoded
    frames of that span differ by requantisation noise only."""
    for s in load_samples(smoke_dir):
        if s.answer and s.params["domain"] == "bounce_ball":
            scene = make_scene(GridPoint("bounce_ball", s.answer, s.params["frequency_hz"], s.params["seed"]))
            static = next(scene.frame_runs())[1]
            assert static / 30.0 == pytest.approx(scene.schedule.active_start, abs=1 / 30.0 + 1e-9), s.sample_id
            fr = read_frames(smoke_dir / s.video.path, [0, static - 1, static + 1]).astype(np.int16)
            assert np.abs(fr[0] - fr[1]).max() <= 6, s.sample_id
            assert np.abs(fr[0] - fr[2]).max() > 50, "the ball must have moved after the lead-in started"


def test_determinism_across_two_runs(tmp_path: Path) -> None:
    pts = [GridPoint("bounce_ball", 4, 3.0, 7), GridPoint("state_machine", 5, 1.5, 2), GridPoint("blinking", 2, 2.5, 1)]
    small = RenderSettings(duration_s=6.0)
    a = generate(pts, tmp_path / "a", small, workers=1)
    b = generate(pts, tmp_path / "b", small, workers=2)
    for sa, sb in zip(a.samples, b.samples, strict=True):
        assert sa == sb
        fa = list(iter_frames(tmp_path / "a" / sa.video.path))
        fb = list(iter_frames(tmp_path / "b" / sb.video.path))
        assert len(fa) == len(fb) == 180
        assert all(np.array_equal(x, y) for x, y in zip(fa, fb))


def test_skip_existing_reuses_only_matching_videos(tmp_path: Path) -> None:
    pts = [GridPoint("blinking", 1, 1.0, 0), GridPoint("blinking", 2, 1.0, 0)]
    small = RenderSettings(duration_s=4.0)
    first = generate(pts, tmp_path, small, workers=1)
    victim = tmp_path / first.samples[0].video.path
    victim.write_bytes(victim.read_bytes()[:1000])  # corrupt one
    again = generate(pts, tmp_path, small, workers=1, skip_existing=True)
    assert (again.reused, again.rendered) == (1, 1)
    assert again.samples == first.samples


def test_dry_run_paper_lists_2190(tmp_path: Path) -> None:
    r = runner.invoke(app, ["generate", "counting", "--preset", "paper", "--dry-run", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    rows = (tmp_path / "manifest.jsonl").read_text().splitlines()
    assert len(rows) == 2190
    row = json.loads(rows[-1])
    assert row["video"]["sha256"] is None and row["trace"]["events"]
    assert not (tmp_path / "videos").exists()


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--counts", "-1"], "non-negative"),
        (["--frequencies", "0"], "positive"),
        (["--frequencies", "-1.5"], "positive"),
        (["--counts", "12", "--frequencies", "0.5", "--duration", "12"], "clip lasts"),
        (["--domains", "pendulum"], "unknown domain"),
        (["--preset", "huge"], "unknown preset"),
        (["--counts", "three"], "comma-separated"),
    ],
)
def test_bad_parameters_exit_nonzero_with_message(tmp_path: Path, args: list[str], msg: str) -> None:
    r = runner.invoke(app, ["generate", "counting", "--out", str(tmp_path / "o"), "--dry-run", *args])
    assert r.exit_code != 0
    assert msg in " ".join(r.output.split()), r.output
    assert not (tmp_path / "o" / "manifest.jsonl").exists()


def test_killed_run_leaves_no_partial_file(tmp_path: Path) -> None:
    """SIGKILL a generation mid-way: every file under a final name is a complete video."""
    out = tmp_path / "killed"
    cmd = [
        sys.executable,
        "-m",
        "vidaudit.cli",
        "generate",
        "counting",
        "--out",
        str(out),
        "--domains",
        "bounce_ball",
        "--counts",
        "1,2,3,4,5,6",
        "--frequencies",
        "1.0",
        "--seeds",
        "2",
        "--workers",
        "1",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60

    def finished() -> list[Path]:
        return [p for p in (out / "videos").rglob("*.mp4") if not p.name.startswith(".")]

    while time.time() < deadline and not finished():
        time.sleep(0.05)
    time.sleep(0.3)  # now well inside the next video
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finals = finished()
    assert finals, "the run was killed before any video finished; the test proves nothing"
    for p in finals:
        assert probe(p).n_frames == 720, p
    assert not (out / "manifest.jsonl").exists()
    # and the partial log lets a rerun reuse what finished
    partial = [json.loads(x) for x in (out / "manifest.partial.jsonl").read_text().splitlines() if x.strip()]
    assert len(partial) >= len(finals) - 1


@pytest.mark.parametrize("width,height", [(160, 90), (160, 96), (98, 54)])
def test_written_frames_read_back_at_any_even_size(tmp_path: Path, width: int, height: int) -> None:
    """A height of 2 mod 4 (160x90) once came out 88 rows high and garbled; every even size must round-trip."""
    import cv2

    from vidaudit.video.decode import read_frames
    from vidaudit.video.encode import write_video
    from vidaudit.video.probe import probe

    rng = np.random.default_rng(3)
    frames = [cv2.GaussianBlur(rng.integers(0, 255, (height, width, 3)).astype(np.uint8), (9, 9), 3) for _ in range(6)]
    write_video(tmp_path / "v.mp4", frames, 10.0, width, height)
    info = probe(tmp_path / "v.mp4")
    assert (info.width, info.height, info.n_frames) == (width, height, 6)
    back = read_frames(tmp_path / "v.mp4", list(range(6)))
    for a, b in zip(frames, back, strict=True):
        assert float(((a.astype(int) - b.astype(int)) ** 2).mean()) < 40
