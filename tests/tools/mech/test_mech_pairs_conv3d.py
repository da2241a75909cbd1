"""The cka probe's Control/Adversarial pairing and the Conv3D temporal-slice statistics (no model needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import DataError
from vidaudit.tools.mech.data import Clip, arrangement_pairs, scene_key
from vidaudit.tools.mech.probe_partition import conv3d_stats

ARRS = ("control", "adversarial", "interleaved")


def clip(seed: int, arr: str, task: str = "connectivity") -> Clip:
    params = {"probe": "wireframe", "task": task, "arrangement": arr, "line_width": 3, "seed": seed}
    sid = f"stress-wireframe-{task}-{arr}-w3-s{seed}"
    return Clip(sid, Path(f"{sid}.mp4"), "0" * 64, 2.0, 4, 2.0, scene_key(sid, params), params)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(ARRS)), unique=True, max_size=18), st.randoms())
def test_pairs_are_exactly_the_scenes_with_both_arrangements(cells, rnd):
    rnd.shuffle(cells)
    clips = [clip(s, a) for s, a in cells]
    both = {s for s in range(6) if (s, "control") in cells and (s, "adversarial") in cells}
    if not both:
        with pytest.raises(DataError, match="control and an adversarial|params.arrangement"):
            arrangement_pairs(clips)
        return
    pairs, unpaired = arrangement_pairs(clips)
    assert {c.params["seed"] for c, _ in pairs} == both
    assert all(
        c.params["arrangement"] == "control" and a.params["arrangement"] == "adversarial" and c.group == a.group
        for c, a in pairs
    )
    lone = {f"s{s}" for s, a in cells if a != "interleaved" and s not in both}
    assert {u.rsplit("-", 1)[1] for u in unpaired} == lone


def test_a_scene_is_its_params_without_the_arrangement():
    assert clip(0, "control").group == clip(0, "adversarial").group != clip(1, "control").group
    assert clip(0, "control").group != clip(0, "control", task="window").group
    assert scene_key("x", {"scene": "kitchen", "arrangement": "control"}) == "kitchen"
    assert scene_key("x", {"motion": "pan_left"}) == "x"


def test_pairing_errors_name_what_is_missing():
    plain = Clip("cam-1", Path("a.mp4"), "0" * 64, 2.0, 8, 4.0, "cam-1", {"motion": "zoom_in"})
    with pytest.raises(DataError, match=r"params\.arrangement.*--probe wireframe"):
        arrangement_pairs([plain])
    with pytest.raises(DataError, match="both the control arrangement of one scene"):
        arrangement_pairs([clip(0, "control"), clip(0, "control"), clip(0, "adversarial")])
    with pytest.raises(DataError, match="arrangements present: interleaved"):
        arrangement_pairs([clip(0, "interleaved")])


def test_conv3d_statistics_match_a_hand_computation():
    w = np.zeros((2, 1, 2, 1, 2))  # (out, C, T, p, p): 2 channels, 2-element slices
    w[0, 0, 0, 0], w[0, 0, 1, 0] = [1, 0], [0, 1]
    w[1, 0, 0, 0], w[1, 0, 1, 0] = [1, 1], [1, 2]
    d = conv3d_stats(w)
    assert d["channel_slice_cosine"]["per_channel"] == pytest.approx([0.0, 3 / np.sqrt(10)])
    assert d["slice_cosine"] == pytest.approx([(1 + 2) / (np.sqrt(3) * np.sqrt(6))])  # [1,0,1,1]·[0,1,1,2]
    # channel 0: mean over time [.5, .5], deviations +-.5 -> 1 of 2; channel 1: 0.5 of 7
    assert d["channel_sensitivity"]["per_channel"] == pytest.approx([0.5, 1 / 14])
    assert d["temporal_energy"] == pytest.approx(1.5 / 9)
    assert d["temporal_rank"]["matrix_rank"] == 2 and d["temporal_rank"]["max_rank"] == 2


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.floats(0.1, 10), st.floats(0.0, 0.5))
def test_equal_slices_give_cosine_one_and_no_temporal_part(seed, n_out, scale, eps):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(n_out, 3, 2, 4, 4))
    w[:, :, 1] = w[:, :, 0]
    d = conv3d_stats(w)
    assert d["channel_slice_cosine"]["min"] == pytest.approx(1.0) and d["slice_cosine"] == pytest.approx([1.0])
    assert d["temporal_energy"] == pytest.approx(0.0, abs=1e-12) and d["temporal_rank"]["rank_99"] == 0
    w[:, :, 1] += eps * rng.normal(size=(n_out, 3, 4, 4))  # per-channel cosine ignores a channel's scale
    base = conv3d_stats(w)
    w *= scale * (1 + np.arange(n_out))[:, None, None, None, None]
    scaled = conv3d_stats(w)
    assert scaled["channel_slice_cosine"]["per_channel"] == pytest.approx(base["channel_slice_cosine"]["per_channel"])
    assert scaled["channel_sensitivity"]["per_channel"] == pytest.approx(base["channel_sensitivity"]["per_channel"])
    assert all(-1 - 1e-9 <= c <= 1 + 1e-9 for c in base["channel_slice_cosine"]["per_channel"])
