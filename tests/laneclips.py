"""Synthetic dashcam clips for the lane-change probe: a road whose lane lines scroll, sliding sideways by one
lane in a lane change (shared by the lane-change, human-study and audit tests)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from vidaudit.video.encode import VideoWriter

W, H, FPS = 96, 64, 10.0


def road_clip(path: Path, change: bool, seconds: float = 2.0) -> Path:
    """A road seen from the car: dashed lane lines scroll down (driving forward); in a lane change the lines
    slide sideways by one lane width over the middle half of the clip."""
    n = int(seconds * FPS)
    with VideoWriter(path, FPS, W, H) as w:
        for t in range(n):
            img = np.full((H, W, 3), 70, np.uint8)
            a = min(max((t / n - 0.25) / 0.5, 0.0), 1.0) if change else 0.0
            offset = 40.0 * (0.5 - 0.5 * math.cos(math.pi * a))
            for lane_x in (-52.0, -12.0, 28.0, 68.0, 108.0):
                x = int(round(lane_x + offset))
                for y0 in range(-16, H, 16):
                    y = y0 + (t * 3) % 16
                    img[max(y, 0) : max(min(y + 8, H), 0), max(x - 1, 0) : max(min(x + 2, W), 0)] = 235
            w.write(img)
    return path
