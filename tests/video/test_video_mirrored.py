"""A clip whose display matrix mirrors the picture is shown mirrored, as ffmpeg shows it, not turned.

Front cameras and editors write such matrices (``tkhd`` in MP4: a left-right flip, an upside-down flip, a quarter
turn with a flip). ffmpeg's autorotate applies ``hflip``/``vflip``/``transpose`` as the matrix's signs say; a reader
that takes only the matrix's angle shows a left-right flip turned upside down and a vertical flip not at all. The
fixtures (``realvideos.make_mirrored``) store each frame so that ffmpeg shows ``frame_image(k)`` upright; every
reading path (the one reader and its three conversions, probe's shape, perturb's planned reader) must show the same.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from realvideos import MIRRORS, Made, Player, frame_code, is_upright, make_mirrored
from vidaudit.core.types import PerturbationSpec
from vidaudit.video.decode import iter_frames, iter_selected, read_frames
from vidaudit.video.perturb.engine import apply
from vidaudit.video.probe import probe

NAMES = sorted(MIRRORS)


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Made]:
    Player.required()
    return make_mirrored(tmp_path_factory.mktemp("mirrored"))


@pytest.mark.parametrize("name", NAMES)
def test_ffmpeg_shows_each_fixture_upright_through_its_mirroring_matrix(mirrored: dict[str, Made], name: str) -> None:
    m = mirrored[name]
    probed = json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(m.path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    [matrix] = [sd for sd in probed["streams"][0]["side_data_list"] if sd["side_data_type"] == "Display Matrix"]
    flipped = MIRRORS[name][0]
    assert [int(x) for x in matrix["displaymatrix"].split()[1:3]] == list(flipped[:2])  # the flip is in the file
    _, frames = Player.required().frames(m.path)
    assert [frame_code(f) for f in frames] == list(m.codes)
    assert all(is_upright(f) and f.shape == (m.size[1], m.size[0], 3) for f in frames)


@pytest.mark.parametrize("name", NAMES)
def test_every_reader_shows_what_ffmpeg_shows(mirrored: dict[str, Made], name: str) -> None:
    m = mirrored[name]
    _, theirs = Player.required().frames(m.path)
    info = probe(m.path)
    assert (info.width, info.height, info.rotation) == (*m.size, m.rotation)
    mine = read_frames(m.path, list(range(info.n_frames)))
    assert [frame_code(f) for f in mine] == list(m.codes)
    for a, b in zip(mine, theirs, strict=True):
        assert a.shape == b.shape and np.abs(a.astype(int) - b).mean() < 3.0
    half = list(iter_frames(m.path, half=True))
    assert [frame_code(f) for f in half] == list(m.codes) and all(is_upright(f) for f in half)
    thumbs = [f for _, f in iter_selected(m.path, [0, 5], width=48)]
    assert [frame_code(f) for f in thumbs] == [0, 5] and all(is_upright(f) for f in thumbs)


@pytest.mark.parametrize("name", ["vflip.mp4", "transpose.mp4"])
def test_a_perturbation_of_a_mirrored_clip_shows_it_as_ffmpeg_does(
    mirrored: dict[str, Made], name: str, tmp_path: Path
) -> None:
    """perturb's planned reader converts plain frames on a fast path: a vertical flip has no angle, so it must
    still take the displayed path."""
    m = mirrored[name]
    res = apply(m.path, PerturbationSpec(name="reverse"), tmp_path / "rev.mp4")
    _, written = Player.required().frames(res.video)
    assert [frame_code(f) for f in written] == list(m.codes)[::-1]
    assert all(is_upright(f) and f.shape == (m.size[1], m.size[0], 3) for f in written)
