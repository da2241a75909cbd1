"""Procedural still scenes: textured and non-periodic, so that any camera motion is visible.

A scene is a smooth colour gradient with low-frequency noise, then random filled rectangles, circles
and lines of random colours, all drawn from ``rng_from("stress", "scene", seed, width, height)``.
"""

from __future__ import annotations

import cv2
import numpy as np

from vidaudit.sdk import rng_from


def render_scene(seed: int, width: int, height: int) -> np.ndarray:
    """An RGB uint8 still of ``height x width`` for scene ``seed``."""
    rng = rng_from("stress", "scene", int(seed), int(width), int(height))
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    c0, c1, c2 = (rng.uniform(40, 215, 3) for _ in range(3))
    gx, gy = xx / max(width - 1, 1), yy / max(height - 1, 1)
    img = (c0[None, None] * (1 - gx[..., None]) + c1[None, None] * gx[..., None]) * (1 - gy[..., None]) + c2[
        None, None
    ] * gy[..., None]
    coarse = rng.normal(0, 25, (max(height // 8, 2), max(width // 8, 2), 3)).astype(np.float32)
    img = img + cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC)
    img = np.clip(img, 0, 255).astype(np.uint8)
    n_shapes = int(rng.integers(25, 40))
    scale = min(width, height)
    for _ in range(n_shapes):
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        kind = int(rng.integers(0, 3))
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        if kind == 0:
            w, h = (
                int(rng.integers(scale // 20 + 2, scale // 4 + 3)),
                int(rng.integers(scale // 20 + 2, scale // 4 + 3)),
            )
            cv2.rectangle(img, (x, y), (x + w, y + h), colour, -1)
        elif kind == 1:
            cv2.circle(img, (x, y), int(rng.integers(scale // 30 + 2, scale // 6 + 3)), colour, -1)
        else:
            x2, y2 = int(rng.integers(0, width)), int(rng.integers(0, height))
            cv2.line(img, (x, y), (x2, y2), colour, int(rng.integers(1, 4)))
    return img
