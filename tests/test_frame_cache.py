"""The frame cache decodes the same frames on the calling thread as with the decoder's threads (the report
decodes its thumbnails single-threaded: ~30% less CPU), on a real H.264 file written with PyAV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vidaudit.video.frame_cache import FrameCache
from vidaudit.video.io import iter_selected, write_video


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    frames = []
    for i in range(90):  # each frame distinct: a bar that moves, and the index in its brightness
        f = np.full((64, 96, 3), 20 + i, np.uint8)
        f[:, (i * 3) % 90:(i * 3) % 90 + 6] = 240
        frames.append(f)
    write_video(path, frames, fps=30.0, width=96, height=64)
    return path


def test_single_threaded_decoding_gives_the_same_frames(clip: Path) -> None:
    want = [0, 1, 29, 30, 31, 59, 60, 89]
    threaded = dict(iter_selected(clip, want))
    single = dict(iter_selected(clip, want, threaded=False))
    assert sorted(single) == want
    for i in want:
        assert np.array_equal(single[i], threaded[i]), i
    assert not np.array_equal(single[0], single[1])  # distinct frames, so an off-by-one would show
    cache = FrameCache(threaded=False)
    got = cache.get(clip, None, [89, 0, 30])
    assert all(np.array_equal(g, threaded[i]) for g, i in zip(got, [89, 0, 30], strict=True))
    assert cache.misses == 3 and cache.get(clip, None, [30])[0] is got[2] and cache.hits == 1
