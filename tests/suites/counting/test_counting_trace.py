"""Trace and schedule invariants over random grid points (hypothesis), without rendering."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.errors import ConfigError
from vidaudit.suites.counting import grid as g
from vidaudit.suites.counting.running_count import replay
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.suites.counting.schedule import MARGIN_S, first_frame_at

points = st.builds(
    g.GridPoint,
    domain=st.sampled_from(g.DOMAINS),
    n_events=st.sampled_from(g.COUNTS),
    frequency_hz=st.sampled_from(g.FREQUENCIES),
    seed=st.integers(0, 10_000),
)


@settings(max_examples=150, deadline=None)
@given(points)
def test_trace_invariants(p: g.GridPoint) -> None:
    s = RenderSettings()
    scene = make_scene(p, s)
    trace = scene.trace()
    assert replay(trace) == p.n_events
    ev = trace.events
    assert [e.count for e in ev] == list(range(1, p.n_events + 1))
    for a, b in zip(ev, ev[1:]):
        assert b.t - a.t == pytest.approx(1 / p.frequency_hz, abs=1e-6)
        assert b.frame > a.frame
        if p.domain != "blinking":
            assert b.state_before == a.state_after
    fps = Fraction(str(s.fps))
    for e, t in zip(ev, scene.schedule.exact, strict=True):
        assert e.t == round(float(t), 9)
        assert e.frame == first_frame_at(t, fps) and Fraction(e.frame) / fps >= t > Fraction(e.frame - 1) / fps
        assert t - scene.lead_in_s() >= MARGIN_S
        assert t + scene.lead_out_s() <= Fraction(str(s.duration_s)) - MARGIN_S
        assert 0 <= e.frame < s.n_frames
        assert e.state_before != e.state_after
    if p.domain == "bounce_ball" and ev:
        walls = [e.state_after for e in ev]
        assert all(a != b for a, b in zip(walls, walls[1:])), "contacts must alternate walls"


@settings(max_examples=60, deadline=None)
@given(points, st.integers(0, 10_000))
def test_seed_moves_start_not_schedule(p: g.GridPoint, other_seed: int) -> None:
    """Two seeds of one cell share the event spacing; the same identity gives the same trace."""
    a = make_scene(p).trace()
    assert make_scene(p).trace() == a
    b = make_scene(g.GridPoint(p.domain, p.n_events, p.frequency_hz, other_seed)).trace()
    da = [y.t - x.t for x, y in zip(a.events, a.events[1:])]
    db = [y.t - x.t for x, y in zip(b.events, b.events[1:])]
    assert da == pytest.approx(db)


def test_paper_grid_size() -> None:
    pts = g.preset("paper")
    assert len(pts) == 2190
    for d in g.DOMAINS:
        assert sum(p.domain == d for p in pts) == 730
    assert {p.frequency_hz for p in pts if p.n_events == 0} == {1.0}


def test_smoke_has_the_corners() -> None:
    pts = g.preset("smoke")
    for d in g.DOMAINS:
        cells = {(p.n_events, p.frequency_hz) for p in pts if p.domain == d}
        assert {(0, 1.0), (12, 0.5), (1, 4.0)} <= cells


def test_sample_id_is_readable_and_stable() -> None:
    assert g.GridPoint("bounce_ball", 5, 2.0, 3).sample_id == "counting-bounce_ball-N05-F2.0-s03"
    assert g.GridPoint("bounce_ball", 5, 0.75, 3).sample_id == "counting-bounce_ball-N05-F0.75-s03"


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 100.0), st.floats(0.0, 0.1))
def test_distinct_frequencies_have_distinct_sample_ids(f1: float, step: float) -> None:
    """The id is the dataset's key (manifest row, video file name): two grid points must never share one."""
    f2 = f1 + step
    a, b = g.GridPoint("blinking", 2, f1, 0), g.GridPoint("blinking", 2, f2, 0)
    assert (a.sample_id == b.sample_id) == (f1 == f2)


def test_two_frequencies_one_decimal_apart_are_two_samples_in_the_manifest(tmp_path: Path) -> None:
    """F = 2.2 and 2.25 were both written as 'F2.2': the manifest held the 2.25 Hz sample twice, the 2.2 Hz
    cell was silently dropped, and both renders wrote the one video file."""
    out = tmp_path / "d"
    args = ["generate", "counting", "--out", str(out), "--dry-run", "--domains", "blinking", "--counts", "2"]
    r = CliRunner().invoke(app, [*args, "--frequencies", "2.2,2.25", "--seeds", "1"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    assert len({row["sample_id"] for row in rows}) == len({row["video"]["path"] for row in rows}) == 2
    assert sorted(row["params"]["frequency_hz"] for row in rows) == [2.2, 2.25]
    for row in rows:  # each row's trace is its own frequency's: events 1/F apart
        t1, t2 = (e["t"] for e in row["trace"]["events"])
        assert t2 - t1 == pytest.approx(1 / row["params"]["frequency_hz"], abs=2e-9)


def test_appearance_varies_with_seed() -> None:
    a = make_scene(g.GridPoint("bounce_ball", 3, 1.0, 0))
    b = make_scene(g.GridPoint("bounce_ball", 3, 1.0, 1))
    assert (a.radius, a.gap, tuple(a.u)) != (b.radius, b.gap, tuple(b.u))


@pytest.mark.parametrize(
    "domain,n,f,msg",
    [
        ("bounce_ball", -1, 1.0, "non-negative"),
        ("bounce_ball", 3, 0.0, "positive"),
        ("bounce_ball", 3, -2.0, "positive"),
        ("bounce_ball", 3, math.nan, "positive"),
        ("spinning_top", 3, 1.0, "unknown domain"),
        ("blinking", 40, 0.5, "clip lasts"),
    ],
)
def test_bad_parameters(domain: str, n: int, f: float, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        make_scene(g.GridPoint(domain, n, f, 0))


def test_n12_at_half_hertz_fits_but_a_shorter_clip_does_not() -> None:
    make_scene(g.GridPoint("bounce_ball", 12, 0.5, 0))
    with pytest.raises(ConfigError, match="lengthen the clip"):
        make_scene(g.GridPoint("bounce_ball", 12, 0.5, 0), RenderSettings(duration_s=20.0))


@settings(max_examples=120, deadline=None)
@given(points, st.sampled_from([1.0, 2.0, 3.0, 5.0, 7.5, 29.97]), st.floats(6.0, 40.0))
def test_every_event_and_its_lead_out_is_on_a_frame_of_the_clip(p: g.GridPoint, fps: float, duration: float) -> None:
    """The clip has round(duration * fps) frames, the last at (n - 1) / fps: at a low or fractional rate that is
    more than the 0.25 s margin before ``duration``, and events were placed after it (no frame shows them)."""
    s = RenderSettings(duration_s=duration, fps=fps, width=320, height=240)
    try:
        scene = make_scene(p, s)
    except ConfigError:
        return
    last = Fraction(s.n_frames - 1) / Fraction(str(fps))
    for e, t in zip(scene.trace().events, scene.schedule.exact, strict=True):
        assert e.frame < s.n_frames
        assert t + scene.lead_out_s() <= last


def test_a_dry_run_at_one_frame_a_second_puts_every_event_on_a_frame(tmp_path: Path) -> None:
    """Seed 22 drew its one state change at 10.0 s in a 10.4 s clip at 1 fps: frame 10 of a 10-frame video."""
    out = tmp_path / "d"
    args = ["generate", "counting", "--out", str(out), "--dry-run", "--domains", "state_machine", "--counts", "1"]
    r = CliRunner().invoke(app, [*args, "--frequencies", "1", "--seeds", "23", "--fps", "1", "--duration", "10.4"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == 23
    for row in rows:
        assert all(e["frame"] < row["video"]["n_frames"] for e in row["trace"]["events"]), row["sample_id"]


def test_a_clip_whose_last_frame_comes_too_soon_is_refused_naming_it() -> None:
    """2.9 s at 1 fps is 3 frames, the last at 2 s: three state changes 1 s apart after 0.25 s cannot all show."""
    with pytest.raises(ConfigError, match="its last frame at 2 s"):
        make_scene(g.GridPoint("state_machine", 3, 1.0, 0), RenderSettings(duration_s=2.9, fps=1.0))


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 40), st.floats(0.5, 8.0), st.sampled_from([5.0, 10.0, 12.0, 24.0, 30.0]), st.integers(0, 10_000))
def test_blinks_never_merge_on_screen_or_are_refused_up_front(n: int, f: float, fps: float, seed: int) -> None:
    """Onsets closer than a pulse leave no OFF frame between two blinks: the clip showed fewer blinks than its
    trace and was refused only after rendering, by the detector (or written as is by --dry-run). Now each drawn
    clip shows every blink as its own ON run, and a point that cannot is a ConfigError before anything is drawn."""
    s = RenderSettings(duration_s=40.0, fps=fps, width=320, height=240)
    try:
        scene = make_scene(g.GridPoint("blinking", n, round(f, 2), seed), s)
    except ConfigError as e:
        assert "clip lasts" in str(e) or "would merge into one on screen" in str(e), str(e)
        return
    on = [bool(scene.visual_key(k / fps)) for k in range(s.n_frames)]
    onsets = [k for k in range(s.n_frames) if on[k] and (k == 0 or not on[k - 1])]
    assert onsets == [e.frame for e in scene.trace().events]


def test_blinks_too_close_for_the_rate_are_refused_before_a_manifest(tmp_path: Path) -> None:
    out = tmp_path / "d"
    args = ["generate", "counting", "--out", str(out), "--domains", "blinking", "--fps", "10"]
    r = CliRunner().invoke(app, [*args, "--frequencies", "4.9", "--counts", "3", "--seeds", "1", "--dry-run"])
    assert r.exit_code == 2, r.output
    assert "blinking at F=4.9 Hz and 10 fps: two blinks start 2 frames apart" in " ".join(r.output.split())
    assert "keep F at most 3.33 Hz" in " ".join(r.output.split())
    assert not (out / "manifest.jsonl").exists()
