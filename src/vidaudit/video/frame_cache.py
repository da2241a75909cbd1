"""A bounded in-memory cache of decoded frames keyed by (video sha256, video stream, frame index).

Keys are content, never paths: two manifests pointing at the same bytes share entries.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vidaudit.video.decode import iter_selected


class FrameCache:
    def __init__(self, max_bytes: int = 1 << 30) -> None:
        self.max_bytes = max_bytes
        self._data: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()  # ((content, stream), i)
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(
        self, path: str | Path, sha256: str | None, indices: Sequence[int], stream: int | None = None
    ) -> list[np.ndarray]:
        """Frames at ``indices`` (in that order) of the video stream ``stream`` (None: the one a player picks),
        decoding only the missing ones in one pass.

        The frames already cached are taken (referenced) under the same lock that decides what is missing, so
        another thread's eviction between the lookup and the decode cannot take one away from this call."""
        key = sha256 or str(Path(path).resolve())
        if stream is not None:
            key = f"{key}#{stream}"
        with self._lock:
            have: dict[int, np.ndarray] = {}
            for i in indices:
                got = self._data.get((key, i))
                if got is not None:
                    have[i] = got
                    self._data.move_to_end((key, i))
            missing = sorted({i for i in indices if i not in have})
            self.hits += len(indices) - len(missing)
            self.misses += len(missing)
        fresh = dict(iter_selected(path, missing, stream=stream)) if missing else {}
        with self._lock:
            for i, f in fresh.items():
                f.setflags(write=False)
                previous = self._data.pop((key, i), None)  # another thread decoded it meanwhile
                if previous is not None:
                    self._bytes -= previous.nbytes
                self._data[(key, i)] = f
                self._bytes += f.nbytes
            while self._bytes > self.max_bytes and self._data:
                _, old = self._data.popitem(last=False)
                self._bytes -= old.nbytes
        return [have[i] if i in have else fresh[i] for i in indices]
