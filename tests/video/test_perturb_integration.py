"""Strip masking (Algorithm 3), its coverage check on the frames sent, and the Sequential Mosaic."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_perturb_fixtures import frame_pixels, info, make_video
from vidaudit.core.errors import ConfigError
from vidaudit.core.timeline import Timeline
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.decode import iter_frames
from vidaudit.video.perturb.engine import apply, plan_for, preview
from vidaudit.video.perturb.integration import check_strip_coverage, delta_bound, separation_problems
from vidaudit.video.sampling import at_fps, every_frame, uniform_count

FAST = settings(max_examples=30, deadline=None)
#: Mean |decoded - drawn| per pixel for one qp-18 yuv420p encode of a still with coloured text (chroma is
#: subsampled 2x2, so saturated edges cost most): about 2.8 measured; four masked frames summed: about 3.3.
CODEC_TOL = 4.0


def strip(**params: object) -> PerturbationSpec:
    return PerturbationSpec(name="strip_mask", params=params)


def as_meta(plan) -> dict:  # noqa: ANN001 - the plan-level metadata the planner sees (preview's shape)
    return {"op": "strip_mask", "n_frames": plan.n_frames, "map": plan.map, "info": plan.info}


# --------------------------------------------------------------------------- the paper's defaults


def test_defaults_follow_the_paper_and_our_documented_choices() -> None:
    p = plan_for(strip(), info(n=60, fps=30.0), seed=0)
    i = p.info
    assert (i["S"], i["v"], i["k"], i["orientation"]) == (128, 24, 4, "vertical")
    assert i["n_sets"] == math.ceil(128 / 24) == 6 and i["set_sizes"] == [24, 24, 24, 24, 24, 8]
    assert i["delta"] == 5 == delta_bound(128, 24)  # the largest feasible separation
    assert p.fps == 120.0 and p.n_frames == 240  # k x fps, T * k frames: the duration is kept
    assert sorted(j for s in i["sets"] for j in s) == list(range(128))
    assert separation_problems(i["sets"], 5) == []
    assert p.map["source_frame"][:8] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert p.map["set_index"][:8] == [0, 1, 2, 3, 4, 5, 0, 1]  # the set index keeps cycling across source frames
    assert all(p.map["visible_strips"][o] == i["sets"][o % 6] for o in range(240))
    assert abs(i["visible_fraction"][0] - 24 / 128) < 0.01  # ~19% of the frame, as in the paper


@FAST
@given(
    S=st.integers(4, 300),
    v=st.integers(1, 60),
    k=st.integers(1, 9),
    seed=st.integers(0, 2**32),
    orientation=st.sampled_from(["vertical", "horizontal"]),
)
def test_every_strip_is_visible_in_any_n_sets_consecutive_frames_and_sets_are_separated(
    S: int, v: int, k: int, seed: int, orientation: str
) -> None:
    v = min(v, S - 1)
    sp, src = strip(S=S, v=v, k=k, orientation=orientation), info(n=7, fps=10.0, w=600, h=320)
    if 7 * k < math.ceil(S / v):  # shorter than one cycle: refused, never half-shown
        with pytest.raises(ConfigError, match="fewer than the"):
            plan_for(sp, src, seed=seed)
        return
    p = plan_for(sp, src, seed=seed)
    i = p.info
    n = i["n_sets"]
    assert n == math.ceil(S / v) and sorted(j for s in i["sets"] for j in s) == list(range(S))
    assert all(len(s) == v for s in i["sets"][:-1]) and 1 <= len(i["sets"][-1]) <= v
    assert separation_problems(i["sets"], i["delta"]) == [] and 1 <= i["delta"] <= delta_bound(S, v)
    vis = p.map["visible_strips"]
    for o in range(p.n_frames - n + 1):
        assert {j for f in vis[o : o + n] for j in f} == set(range(S))
    assert check_strip_coverage(as_meta(p), range(p.n_frames)) == []


def test_explicit_delta_is_checked_against_what_is_feasible() -> None:
    assert plan_for(strip(delta=3), info(n=2)).info["delta"] == 3
    with pytest.raises(ConfigError, match=r"delta must be in \[1, 5\]"):
        plan_for(strip(delta=6), info(n=2))
    with pytest.raises(ConfigError, match=r"S must be in \[2, 64\]"):
        plan_for(strip(), info(n=2, w=64, h=48))
    with pytest.raises(ConfigError, match="v=128 must be smaller than S=128"):
        plan_for(strip(v=128), info(n=2))


# --------------------------------------------------------------------------- coverage on the frames sent


@FAST
@given(stride=st.integers(1, 40), offset=st.integers(0, 30))
def test_coverage_check_refuses_strides_that_share_a_factor_with_the_sets(stride: int, offset: int) -> None:
    p = plan_for(strip(), info(n=300, fps=30.0), seed=1)  # 6 sets, 1200 output frames
    sent = list(range(offset, p.n_frames, stride))
    problems = check_strip_coverage(as_meta(p), sent)
    if math.gcd(stride, 6) == 1:
        assert problems == []
    else:
        assert problems and "never visible" in problems[0] and f"shares the factor {math.gcd(stride, 6)}" in problems[0]


def test_coverage_check_on_the_samplers_a_planner_uses() -> None:
    p = plan_for(strip(), info(n=720, fps=30.0), seed=0)  # 24 s at 120 fps, 2880 frames
    meta = as_meta(p)
    assert check_strip_coverage(meta, every_frame(Timeline.constant(p.n_frames, p.fps)).indices) == []
    for rule in (
        at_fps(Timeline.constant(p.n_frames, p.fps), 1.0),
        at_fps(Timeline.constant(p.n_frames, p.fps), 2.0),  # strides 120, 60
        uniform_count(Timeline.constant(p.n_frames, p.fps), 64),
    ):  # stride 45: gcd 3
        problems = check_strip_coverage(meta, rule.indices)
        assert problems and "never visible" in problems[0], rule.rule
    assert check_strip_coverage(meta, range(3, p.n_frames, 5)) == []  # a regular stride coprime with 6
    irregular = check_strip_coverage(meta, [0, 1, 2, 3, 4, 5, 6, 12, 13, 14, 15, 16, 18])
    assert irregular and "windows of 6 consecutive frames" in irregular[0]
    assert "outside" in check_strip_coverage(meta, [5000])[0]
    assert check_strip_coverage(meta, []) == ["no frames are sent"]
    assert check_strip_coverage({"op": "reverse"}, [0]) == ["not a strip_mask video (op=reverse)"]
    tampered = {**meta, "info": {**p.info, "sets": [list(range(24))] + p.info["sets"][1:]}}
    assert any("closer than delta" in m for m in check_strip_coverage(tampered, range(12)))


# --------------------------------------------------------------------------- pixels


def test_masked_frames_show_only_their_strips_and_tile_each_source_frame(tmp_path: Path) -> None:
    src = make_video(tmp_path / "src.mp4", n=6, fps=8.0)
    r = apply(src, strip(S=16, v=3, k=4), tmp_path / "m.mp4", seed=2)  # 4 px strips on a 64 px width
    m, inf = r.meta.map, r.meta.info
    assert r.meta.fps == 32.0 and r.meta.n_frames == 24 == len(m["visible_strips"])
    assert check_strip_coverage(r.meta, range(24)) == []
    out = list(iter_frames(r.video))
    bounds = inf["strip_px"]
    for o, f in enumerate(out):
        visible = set(m["visible_strips"][o])
        src_f = frame_pixels(m["source_frame"][o]).astype(int)
        for j, (a, b) in enumerate(bounds):
            inner = slice(a + 1, b - 1)  # chroma bleeds one pixel across a strip edge
            if j in visible:
                assert np.abs(f[:, inner].astype(int) - src_f[:, inner]).mean() < 6, (o, j)
            else:
                assert f[:, inner].max() < 40, (o, j)
    on = [c for c in range(24) if 0 < len(m["visible_strips"][c])]
    assert len(on) == 24


def test_preview_matches_the_rendered_metadata(tmp_path: Path) -> None:
    src = make_video(tmp_path / "src.mp4", n=4, fps=8.0)
    pv = preview(src, strip(S=16, v=3), seed=5)
    r = apply(src, strip(S=16, v=3), tmp_path / "m.mp4", seed=5)
    assert pv["map"] == r.meta.map and pv["info"] == r.meta.info and pv["n_frames"] == r.meta.n_frames


# --------------------------------------------------------------------------- mosaic


def test_mosaic_quadrants_tile_the_source(tmp_path: Path) -> None:
    still = np.zeros((48, 64, 3), np.uint8)
    still[:] = frame_pixels(9)
    cv2.putText(still, "AB", (10, 34), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (250, 250, 40), 2)  # text through the centre
    png = tmp_path / "still.png"
    cv2.imwrite(str(png), cv2.cvtColor(still, cv2.COLOR_RGB2BGR))
    r = apply(png, PerturbationSpec(name="mosaic"), tmp_path / "mo.mp4")
    assert r.meta.n_frames == 4 and r.meta.map["quadrant"] == [0, 1, 2, 3] and r.meta.fps == 1.0
    boxes = [q["box_px"] for q in r.meta.info["quadrants"]]
    cover = np.zeros((48, 64), int)
    for x0, y0, x1, y1 in boxes:
        cover[y0:y1, x0:x1] += 1
    assert (cover == 1).all()  # disjoint and covering
    frames = [f.astype(int) for f in iter_frames(r.video)]
    total = sum(frames)
    assert np.abs(total - still.astype(int)).mean() < CODEC_TOL  # the four frames add up to the still
    for t, f in enumerate(frames):
        x0, y0, x1, y1 = boxes[r.meta.map["quadrant"][t]]
        outside = f.copy()
        outside[y0:y1, x0:x1] = 0
        assert (
            outside[2:-2, 2:-2].max() < 40
            and np.abs(f[y0 + 2 : y1 - 2, x0 + 2 : x1 - 2] - still[y0 + 2 : y1 - 2, x0 + 2 : x1 - 2]).mean() < 4
        )
    rnd = apply(png, PerturbationSpec(name="mosaic", params={"order": "random", "hold": 2}), tmp_path / "r.mp4", seed=1)
    q = rnd.meta.map["quadrant"]
    assert len(q) == 8 and sorted(set(q)) == [0, 1, 2, 3] and q[0::2] == q[1::2]
    sp = apply(png, PerturbationSpec(name="mosaic_spatial"), tmp_path / "sp.mp4")
    assert sp.meta.n_frames == 1 and sp.meta.map["quadrants"] == [[0, 1, 2, 3]]
    assert np.abs(next(iter_frames(sp.video)).astype(int) - still).mean() < CODEC_TOL  # the 2x2 image is the still
    tiled = apply(png, PerturbationSpec(name="mosaic_spatial", params={"layout": "tiled"}), tmp_path / "t.mp4")
    f = next(iter_frames(tiled.video)).astype(int)
    x0, y0, x1, y1 = boxes[3]  # cell 3 holds mosaic frame 3 shrunk: lit bottom-right
    cell = f[y0:y1, x0:x1]
    ch, cw = cell.shape[0] // 2, cell.shape[1] // 2
    assert cell[: ch - 1].max() < 40 and cell[ch + 1 :, cw + 1 :].mean() > 20


def test_mosaic_of_a_video_takes_its_middle_frame(tmp_path: Path) -> None:
    src = make_video(tmp_path / "src.mp4", n=10, fps=10.0)
    r = apply(src, PerturbationSpec(name="mosaic"), tmp_path / "mo.mp4")
    assert r.meta.map["source_frame"] == [5] * 4 and r.meta.info["still_frame"] == 5
    with pytest.raises(ConfigError, match="still_s must be in"):
        apply(src, PerturbationSpec(name="mosaic", params={"still_s": 5.0}), tmp_path / "bad.mp4")
