"""Render one grid point to an MP4 and read back what was written."""

from __future__ import annotations

from pathlib import Path

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.types import Trace, VideoRef
from vidaudit.suites.counting.blinking import Blinking
from vidaudit.suites.counting.bounce_ball import BounceBall
from vidaudit.suites.counting.grid import GridPoint, validate
from vidaudit.suites.counting.scene import RenderSettings, Scene
from vidaudit.suites.counting.state_machine import StateMachine
from vidaudit.video.io import VideoWriter, probe, ref_from

SCENES: dict[str, type[Scene]] = {c.domain: c for c in (BounceBall, Blinking, StateMachine)}


def make_scene(point: GridPoint, settings: RenderSettings = RenderSettings()) -> Scene:
    validate(point.domain, point.n_events, point.frequency_hz, point.seed)
    if settings.fps <= 0 or settings.duration_s <= 0:
        raise ConfigError(f"fps and duration must be positive, got fps={settings.fps}, duration={settings.duration_s}")
    if settings.width % 2 or settings.height % 2 or settings.width < 320 or settings.height < 240:
        raise ConfigError(f"frame size must be even and at least 320x240, got {settings.width}x{settings.height}")
    return SCENES[point.domain](point, settings)


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
