"""The frame cache under concurrent requests (the executor prepares several trials' frames at once): a frame
another thread evicts between the lookup and the decode is never lost, and the byte count stays exact."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import numpy as np

from vidaudit.video.decode import iter_selected
from vidaudit.video.encode import write_video
from vidaudit.video.frame_cache import FrameCache


def test_concurrent_gets_under_constant_eviction(tmp_path: Path) -> None:
    path = tmp_path / "v.mp4"
    frames = [np.full((32, 48, 3), 8 * i, np.uint8) for i in range(24)]
    write_video(path, frames, 8.0, 48, 32)
    truth = dict(iter_selected(path, list(range(24))))
    one = truth[0].nbytes
    cache = FrameCache(max_bytes=3 * one)  # room for 3 frames: every call evicts someone else's
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(40):
                idx = rng.sample(range(24), rng.randint(1, 5))
                got = cache.get(path, "sha", idx)
                for i, f in zip(idx, got):
                    assert np.array_equal(f, truth[i]), i
        except BaseException as e:  # noqa: BLE001 - reported below with the thread's failure
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert cache._bytes == sum(f.nbytes for f in cache._data.values()) <= 3 * one
    assert cache.misses > 0 and cache.hits > 0
