"""Render one grid point to an MP4 and read back what was written.

``render_checked`` also proves what it wrote without decoding the file: the pixel detector reads the
frames handed to the encoder (each run of identical frames converted once, exactly as the encoder
receives it, then to the half-size RGB a decoded frame becomes) and must show every event of the
trace at its frame (``verify.pixel_problems``); and the file's stored H.264 packets (demuxed, not decoded) must be, NAL unit for
NAL unit, what the encoder emitted. What it cannot prove, that libx264's lossy coding kept every
event visible, is checked by decoding a deterministic sample of videos at generate time
(``generate.decoded_at_generate``) and every video under ``vidaudit verify`` (docs/counting.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from vidaudit.sdk import (
    NalDigest,
    Trace,
    VideoRef,
    VideoWriter,
    i420_to_rgb_half,
    probe,
    ref_from,
    sha256_file,
    stored_nal_digest,
)
from vidaudit.suites.counting.grid import GridPoint
from vidaudit.suites.counting.scene import RenderSettings
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.suites.counting.verify import pixel_problems


def planned_video(point: GridPoint, settings: RenderSettings, rel_path: str) -> VideoRef:
    """The video fields known before rendering (dry run): no sha256."""
    return VideoRef(path=rel_path, sha256=None, fps=settings.fps, width=settings.width, height=settings.height,
                    n_frames=settings.n_frames, duration_s=settings.n_frames / settings.fps)


def render(point: GridPoint, settings: RenderSettings, out: Path, rel_path: str) -> tuple[Trace, VideoRef]:
    """Render to ``out`` (atomically) and return the trace and the video as read back from the file."""
    scene = make_scene(point, settings)
    with VideoWriter(out, settings.fps, settings.width, settings.height) as w:
        for frame, repeat in scene.frame_runs():
            w.write(frame, repeat)
    info = probe(out)
    return scene.trace(), ref_from(info, rel_path, sha256_file(out))


@dataclass(frozen=True)
class Rendered:
    """A rendered video and what the render-time check found (``problems`` empty: it shows its trace)."""

    trace: Trace
    video: VideoRef
    problems: tuple[str, ...]


def render_checked(point: GridPoint, settings: RenderSettings, out: Path, rel_path: str) -> Rendered:
    """``render``, and check what was written without decoding it (see the module docstring): the same file,
    trace and video, byte for byte."""
    scene = make_scene(point, settings)
    w, h, fps = settings.width, settings.height, settings.fps
    emitted = NalDigest()
    yuv = np.empty((h * 3 // 2, w), np.uint8)

    def drawn(writer: VideoWriter) -> Iterator[tuple[int, float, np.ndarray]]:
        i = 0
        for frame, repeat in scene.frame_runs():
            writer.write(frame, repeat)
            cv2.cvtColor(frame, cv2.COLOR_RGB2YUV_I420, dst=yuv)  # what VideoWriter hands the encoder
            half = i420_to_rgb_half(yuv, w, h)
            half.flags.writeable = False  # one array for the run: the detector reads it once
            for _ in range(repeat):
                yield i, i / fps, half
                i += 1

    with VideoWriter(out, fps, w, h, on_packet=emitted.update) as writer:
        trace = scene.trace()
        problems = [f"in the frames drawn: {p}" for p in pixel_problems(point.domain, drawn(writer), trace, fps)]
    stored, n_stored = stored_nal_digest(out)
    if stored != emitted.hexdigest() or n_stored != emitted.n_packets:
        problems.append(f"the file's {n_stored} stored packets are not the {emitted.n_packets} the encoder emitted "
                        "(written wrong or changed since); render it again")
    info = probe(out)
    return Rendered(trace, ref_from(info, rel_path, sha256_file(out)), tuple(problems))
