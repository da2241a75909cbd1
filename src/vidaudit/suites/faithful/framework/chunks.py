"""Chunk and frame plans: disjoint half-open chunks over the video and uniform frames inside each.

Chunks are ``[m * L, (m + 1) * L)`` for m = 0..M-1 with M = ceil(duration / L); the last chunk is
whatever remains (however short). Frame k of K inside a chunk is the frame on screen at the centre of
the k-th of K equal segments, so a boundary frame belongs to one chunk only (the release's code sent
it to both). With fewer frames in the chunk than K, each is sent once. The answerer's frames are
the same rule over the whole video (``frames#K``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    index: int
    t_start: float
    t_end: float
    frames: tuple[int, ...]
    times: tuple[float, ...]


def _frames_in(t0: float, t1: float, fps: float, n_frames: int, k: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    first = max(0, math.ceil(t0 * fps - 1e-9))
    last = min(n_frames - 1, math.ceil(t1 * fps - 1e-9) - 1)  # frames with time in [t0, t1)
    if last < first:
        return (), ()
    n = last - first + 1
    picks = sorted({first + min(n - 1, int((j + 0.5) * n / k)) for j in range(k)})
    return tuple(picks), tuple(round(i / fps, 6) for i in picks)


def plan_chunks(duration_s: float, fps: float, n_frames: int, chunk_s: float, frames_per_chunk: int) -> list[Chunk]:
    m = max(1, math.ceil(duration_s / chunk_s - 1e-9))
    out: list[Chunk] = []
    for i in range(m):
        t0, t1 = i * chunk_s, min(duration_s, (i + 1) * chunk_s)
        frames, times = _frames_in(t0, t1, fps, n_frames, frames_per_chunk)
        if frames:
            out.append(Chunk(index=len(out), t_start=t0, t_end=t1, frames=frames, times=times))
    return out


def uniform_frames(fps: float, n_frames: int, k: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    return _frames_in(0.0, n_frames / fps, fps, n_frames, k)
