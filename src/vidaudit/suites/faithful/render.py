"""Draw the tracks into frames and encode them (PyAV through ``vidaudit.video.encode``).

Per frame: the background, then the agents in z-order (small first, so a large agent hides a
small one behind it), each with its ring when lit and its number in the middle, then the ball on
top. Positions are drawn at sub-pixel precision (``vidaudit.video.draw``).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from vidaudit.sdk import VideoWriter, draw
from vidaudit.suites.faithful.choreography import Tracks
from vidaudit.suites.faithful.scene import BACKGROUND, BALL_RGB, HALO, HALO_GAP, HALO_WIDTH, Agent, SceneSpec, vertices
from vidaudit.suites.faithful.simulate import z_order


def _number(img: np.ndarray, agent: Agent, centre: tuple[float, float]) -> None:
    scale = max(0.28, 0.045 * agent.inradius)
    thickness = 1 if agent.inradius < 9 else 2
    draw.text_centre(img, str(agent.number), centre, scale, agent.text_rgb, thickness)


def draw_ring(img: np.ndarray, agent: Agent, centre: np.ndarray) -> None:
    draw.circle(
        img, (float(centre[0]), float(centre[1])), agent.radius + HALO_GAP + HALO_WIDTH / 2, HALO, thickness=HALO_WIDTH
    )


def draw_agent(img: np.ndarray, agent: Agent, centre: np.ndarray) -> None:
    c = (float(centre[0]), float(centre[1]))
    if agent.shape == "circle":
        draw.circle(img, c, agent.radius, agent.rgb)
    else:
        draw.polygon(img, vertices(agent.shape, agent.radius) + np.asarray(c), agent.rgb)
    _number(img, agent, c)


def draw_frame(
    spec: SceneSpec, cast: list[Agent], tracks: Tracks, f: int, canvas: np.ndarray | None = None
) -> np.ndarray:
    """One frame: rings of lit agents first (so that touching shapes touch), then the shapes in
    z-order, then the ball."""
    img = canvas if canvas is not None else np.empty((spec.height, spec.width, 3), np.uint8)
    img[:] = BACKGROUND
    order = [i for i in z_order(cast) if not _outside(spec, cast[i], tracks.pos[i, f])]
    for i in order:
        if tracks.lit[i, f]:
            draw_ring(img, cast[i], tracks.pos[i, f])
    for i in order:
        draw_agent(img, cast[i], tracks.pos[i, f])
    b = tracks.ball[f]
    draw.circle(img, (float(b[0]), float(b[1])), tracks.ball_radius, BALL_RGB)
    return img


def _outside(spec: SceneSpec, a: Agent, p: np.ndarray) -> bool:
    return bool(
        p[0] + a.footprint < 0
        or p[0] - a.footprint > spec.width
        or p[1] + a.footprint < 0
        or p[1] - a.footprint > spec.height
    )


def render_video(spec: SceneSpec, cast: list[Agent], tracks: Tracks, path: str | Path) -> None:
    cv2.setNumThreads(1)
    with VideoWriter(path, spec.fps, spec.width, spec.height) as w:
        for f in range(tracks.n_frames):
            w.write(draw_frame(spec, cast, tracks, f))
