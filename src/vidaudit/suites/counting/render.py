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

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vidaudit.sdk import (
    NalDigest,
    Trace,
    VideoRef,
    VideoWriter,
    i420_to_rgb_half,
    probe,
    probe_stored,
    ref_from,
    sha256_file,
)
from vidaudit.suites.counting.detector import analysed_at_full_size
from vidaudit.suites.counting.grid import GridPoint
from vidaudit.suites.counting.scene import RenderSettings, Scene
from vidaudit.suites.counting.scenes import make_scene
from vidaudit.suites.counting.verify import pixel_problems

#: visual keys whose half-size RGB frame ``render_checked`` keeps (blinking has two, a state machine its states; a
#: bouncing ball's frames go to the detector as patches)
HALF_MEMO = 16


def planned_video(point: GridPoint, settings: RenderSettings, rel_path: str) -> VideoRef:
    """The video fields known before rendering (dry run): no sha256."""
    return VideoRef(
        path=rel_path,
        sha256=None,
        fps=settings.fps,
        width=settings.width,
        height=settings.height,
        n_frames=settings.n_frames,
        duration_s=settings.n_frames / settings.fps,
    )


def render(point: GridPoint, settings: RenderSettings, out: Path, rel_path: str) -> tuple[Trace, VideoRef]:
    """Render to ``out`` (atomically) and return the trace and the video as read back from the file."""
    scene = make_scene(point, settings)
    key_before: Hashable = None
    with VideoWriter(out, settings.fps, settings.width, settings.height) as w:
        for i, (key, frame, repeat) in enumerate(scene.keyed_runs(reuse=True)):  # the writer is done with a frame
            w.write(frame, repeat, scene.changed_box(key_before, key) if i else None)  # when write returns
            key_before = key
    info = probe(out)
    return scene.trace(), ref_from(info, rel_path, sha256_file(out))


@dataclass(frozen=True)
class Rendered:
    """A rendered video and what the render-time check found (``problems`` empty: it shows its trace)."""

    trace: Trace
    video: VideoRef
    problems: tuple[str, ...]


def drawn_as_decoded(
    scene: Scene, write: Callable[[np.ndarray, int, tuple[int, int, int, int] | None], None]
) -> Iterator[tuple[Any, ...]]:
    """Every run of ``scene`` handed to ``write`` (the encoder's ``VideoWriter.write``, with the box that changed from
    the run before, if the scene knows it), and each of its frames to the detector as a decoder
    would see it: I420 exactly as ``VideoWriter`` converts it, then half-size RGB (``i420_to_rgb_half``), one
    read-only array per run. Where the scene says what changed from the run before (``Scene.changed_box``), only
    that box is converted and handed over as a patch: the conversions are local (a 2x2 block at most), so the
    patch holds the same bytes as the whole frame's conversion there
    (``tests/suites/counting/test_counting_patches.py``)."""
    s = scene.settings
    w, h, fps = s.width, s.height, s.fps
    yuv = np.empty((h * 3 // 2, w), np.uint8)
    patches = analysed_at_full_size(w // 2)  # the detector takes patches of frames it analyses at their size
    i = 0
    key_before: Hashable = None
    halves: dict[Hashable, np.ndarray] = {}  # by visual key (equal keys, equal frames): few, for scenes that
    for key, frame, repeat in scene.keyed_runs(reuse=True):  # redraw some (blinking, state machine)
        box = scene.changed_box(key_before, key) if i else None
        write(frame, repeat, box)
        item: tuple[Any, ...]
        if box is not None and patches:
            x0, y0, x1, y1 = box
            patch = i420_to_rgb_half(cv2.cvtColor(frame[y0:y1, x0:x1], cv2.COLOR_RGB2YUV_I420), x1 - x0, y1 - y0)
            patch.flags.writeable = False
            item = (patch, (x0 // 2, y0 // 2, x1 // 2, y1 // 2))
        else:
            half = halves.get(key)
            if half is None:
                cv2.cvtColor(frame, cv2.COLOR_RGB2YUV_I420, dst=yuv)  # what VideoWriter hands the encoder
                half = i420_to_rgb_half(yuv, w, h)
                half.flags.writeable = False  # one array for the run: the detector reads it once
                if len(halves) < HALF_MEMO:
                    halves[key] = half
            item = (half,)
        key_before = key
        for _ in range(repeat):
            yield (i, i / fps, *item)
            i += 1


def render_checked(point: GridPoint, settings: RenderSettings, out: Path, rel_path: str) -> Rendered:
    """``render``, and check what was written without decoding it (see the module docstring): the same file,
    trace and video, byte for byte."""
    scene = make_scene(point, settings)
    emitted = NalDigest()
    with VideoWriter(out, settings.fps, settings.width, settings.height, on_packet=emitted.update) as writer:
        trace = scene.trace()
        problems = [
            f"in the frames drawn: {p}"
            for p in pixel_problems(point.domain, drawn_as_decoded(scene, writer.write), trace, settings.fps)
        ]
    info, stored, n_stored = probe_stored(out)  # one pass over the file for both
    if stored != emitted.hexdigest() or n_stored != emitted.n_packets:
        problems.append(
            f"the file's {n_stored} stored packets are not the {emitted.n_packets} the encoder emitted "
            "(written wrong or changed since); render it again"
        )
    return Rendered(trace, ref_from(info, rel_path, sha256_file(out)), tuple(problems))
