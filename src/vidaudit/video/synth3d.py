"""Reveal Algorithm 2: camera motion rendered from a 3D scene of sprites through a pinhole camera.

Camera space is x right, y down (image rows grow downward), z forward. A sprite is a textured RGBA
billboard at a world position; each frame ``t`` of ``N`` has ``alpha = t / N`` and the camera pose

- zoom (a dolly): position ``p = (0, 0, +/- d(alpha))``, no rotation;
- pan: ``yaw = +/- alpha * theta_max`` about the vertical axis; tilt: ``pitch = +/- alpha * theta_max``
  about the horizontal axis;

then ``r = R_Y(yaw) R_X(pitch) (x - p)`` with the paper's standard matrices, sprites with
``r_z > z_near`` are kept, drawn far to near (painter's algorithm) at ``s = f / r_z``,
``(u, v) = (s r_x + c_x, s r_y + c_y)`` with ``f = (W/2) / tan(FOV/2)``, resized to ``s * size`` and
alpha-blended.

Signs are physical (the names of ``camera_2d``): ``pan_left`` is ``yaw > 0``, which sends a point ahead
to ``r_x > 0`` (the content moves right); ``tilt_up`` is ``pitch < 0`` (``r_y > 0``: the content moves
down); ``zoom_in`` moves the camera forward (the content grows from the centre); ``zoom_out`` backward.

The paper leaves FOV, theta_max, d_max and z_near open; ours (``docs/stress.md``): FOV 60 degrees
horizontal; ``theta_max = speed / f * T`` so the content at the image centre moves ``speed`` px/s as a
2D pan of that speed does; the dolly is set so a sprite at the reference depth ``Z_REF`` grows (or
shrinks) by the zoom curve of ``camera_2d`` (``1 + (zoom_max - 1) alpha`` or ``zoom_max ** alpha``);
``z_near = 0.5``. Sprites lie in every direction around the camera (so a pan or tilt of any angle keeps
the frame full) at depths 3-30 (but none nearer than ``Z_REF`` within 45 degrees of the camera's
initial axis: a dolly approaches the scene, the nearest content ahead growing by the zoom curve and
farther content less), each covering 5-14 degrees.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import rng_from

Motion = Literal["pan_left", "pan_right", "tilt_up", "tilt_down", "zoom_in", "zoom_out"]
MOTIONS: tuple[str, ...] = ("zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up", "tilt_down")

FOV_DEG = 60.0
Z_NEAR = 0.5
Z_REF = 8.0
DEPTH_RANGE = (3.0, 30.0)
ANGLE_RANGE_DEG = (5.0, 14.0)
N_SPRITES = 700
N_TEXTURES = 24
TEXTURE_SIDE = 64


@dataclass(frozen=True)
class Sprite:
    position: tuple[float, float, float]
    size: tuple[float, float]  # world width and height
    texture: int  # index into World.textures


@dataclass(frozen=True)
class World:
    sprites: tuple[Sprite, ...]
    #: per texture, RGBA mip levels (64, 32, 16 px), premultiplied-free uint8
    textures: tuple[tuple[np.ndarray, ...], ...]
    background: tuple[int, int, int]

    @functools.cached_property
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (n, 3) and world sizes (n, 2), built once rather than per frame."""
        return (
            np.array([s.position for s in self.sprites], np.float64).reshape(-1, 3),
            np.array([s.size for s in self.sprites], np.float64).reshape(-1, 2),
        )


def focal_length(width: int, fov_deg: float = FOV_DEG) -> float:
    """f = (W/2) / tan(FOV/2), in pixels."""
    return (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)


def rot_x(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]], np.float64)


def rot_y(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]], np.float64)


def _mips(rgba: np.ndarray) -> tuple[np.ndarray, ...]:
    levels = [rgba]
    while levels[-1].shape[0] > 16:
        a = levels[-1]
        levels.append(cv2.resize(a, (a.shape[1] // 2, a.shape[0] // 2), interpolation=cv2.INTER_AREA))
    return tuple(levels)


def _texture(rng: np.random.Generator, side: int = TEXTURE_SIDE) -> np.ndarray:
    """A textured RGBA sprite: a random shape (disc, box, triangle or ring) filled with stripes, checks
    or blotches of two colours, outlined; drawn at 2x and reduced so the edge is antialiased."""
    big = side * 2
    c1, c2 = (tuple(int(v) for v in rng.integers(0, 256, 3)) for _ in range(2))
    yy, xx = np.mgrid[0:big, 0:big].astype(np.float32)
    pattern = int(rng.integers(0, 3))
    if pattern == 0:
        period = float(rng.uniform(8, 24))
        ang = float(rng.uniform(0, math.pi))
        sel = np.sin((xx * math.cos(ang) + yy * math.sin(ang)) * 2 * math.pi / period) > 0
    elif pattern == 1:
        cell = int(rng.integers(10, 28))
        sel = ((xx // cell + yy // cell) % 2) == 0
    else:
        noise = rng.normal(0, 1, (6, 6)).astype(np.float32)
        sel = cv2.resize(noise, (big, big), interpolation=cv2.INTER_CUBIC) > 0
    rgb = np.where(sel[..., None], np.asarray(c1, np.float32), np.asarray(c2, np.float32)).astype(np.uint8)
    mask = np.zeros((big, big), np.uint8)
    kind = int(rng.integers(0, 4))
    m = big // 16
    if kind == 0:
        cv2.circle(mask, (big // 2, big // 2), big // 2 - m, 255, -1)
    elif kind == 1:
        cv2.rectangle(mask, (m, m), (big - m, big - m), 255, -1)
    elif kind == 2:
        cv2.fillPoly(mask, [np.array([[big // 2, m], [big - m, big - m], [m, big - m]], np.int32)], 255)
    else:
        cv2.circle(mask, (big // 2, big // 2), big // 2 - m, 255, -1)
        cv2.circle(mask, (big // 2, big // 2), big // 5, 0, -1)
    edge = cv2.morphologyEx(mask, cv2.MORPH_GRADIENT, np.ones((5, 5), np.uint8))
    rgb[edge > 0] = rgb[edge > 0] // 3
    rgba = np.dstack([rgb, mask])
    return cv2.resize(rgba, (side, side), interpolation=cv2.INTER_AREA)


def make_world(seed: int, n_sprites: int = N_SPRITES) -> World:
    """Scene ``seed``: sprites uniform over the directions around the camera, log-uniform in depth."""
    rng = rng_from("stress", "world3d", int(seed), int(n_sprites))
    textures = tuple(_mips(_texture(rng)) for _ in range(N_TEXTURES))
    dirs = rng.normal(0, 1, (n_sprites, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    depth = np.exp(rng.uniform(math.log(DEPTH_RANGE[0]), math.log(DEPTH_RANGE[1]), n_sprites))
    # ahead of the camera (within 45 degrees of +z) nothing is nearer than Z_REF, so a dolly approaches the
    # scene instead of flying through sprites that loom over the whole frame and vanish at z_near
    ahead = dirs[:, 2] > math.cos(math.radians(45.0))
    depth[ahead] = np.exp(rng.uniform(math.log(Z_REF), math.log(DEPTH_RANGE[1]), int(ahead.sum())))
    ang = np.radians(rng.uniform(*ANGLE_RANGE_DEG, n_sprites))
    aspect = rng.uniform(0.7, 1.4, n_sprites)
    tex = rng.integers(0, N_TEXTURES, n_sprites)
    sprites = tuple(
        Sprite(
            position=tuple(float(v) for v in dirs[i] * depth[i]),  # type: ignore[arg-type]
            size=(float(ang[i] * depth[i] * aspect[i]), float(ang[i] * depth[i] / aspect[i])),
            texture=int(tex[i]),
        )
        for i in range(n_sprites)
    )
    bg = tuple(int(v) for v in rng.integers(20, 90, 3))
    return World(sprites=sprites, textures=textures, background=bg)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Camera3DSpec:
    """One motion clip of a world: what Algorithm 2 needs besides the sprites."""

    motion: Motion
    width: int
    height: int
    duration_s: float
    fps: float
    speed_px_s: float = 100.0
    zoom_max: float = 1.5
    zoom_curve: Literal["linear", "exponential"] = "linear"
    fov_deg: float = FOV_DEG

    def __post_init__(self) -> None:
        if self.motion not in MOTIONS:
            raise ConfigError(f"unknown camera motion {self.motion!r}; choose from {', '.join(MOTIONS)}")
        if self.width < 16 or self.height < 16 or self.width % 2 or self.height % 2:
            raise ConfigError(f"3D frames must be even-sized and at least 16x16, got {self.width}x{self.height}")
        if self.n_frames < 2:
            raise ConfigError(f"{self.duration_s:g} s at {self.fps:g} fps is fewer than two frames")
        if not 1.0 < self.zoom_max <= 8.0 or self.speed_px_s <= 0 or not 10.0 <= self.fov_deg <= 150.0:
            raise ConfigError("zoom_max must be in (1, 8], speed_px_s > 0 and fov_deg in [10, 150]")

    @property
    def n_frames(self) -> int:
        return int(math.floor(self.duration_s * self.fps + 0.5))

    @property
    def focal(self) -> float:
        return focal_length(self.width, self.fov_deg)

    @property
    def theta_max(self) -> float:
        """Total rotation (radians) of a pan or tilt: the centre content moves ``speed_px_s`` px/s."""
        return self.speed_px_s / self.focal * (self.n_frames / self.fps)

    def growth(self, alpha: float) -> float:
        """The zoom curve of ``camera_2d``'s zoom_in: 1 at alpha = 0, toward zoom_max."""
        if self.zoom_curve == "linear":
            return 1.0 + (self.zoom_max - 1.0) * alpha
        return float(self.zoom_max**alpha)

    def pose(self, alpha: float) -> tuple[tuple[float, float, float], float, float]:
        """(camera position p, yaw, pitch) at ``alpha``."""
        m = self.motion
        if m == "zoom_in":  # a sprite at Z_REF appears growth(alpha) times larger
            return (0.0, 0.0, Z_REF * (1.0 - 1.0 / self.growth(alpha))), 0.0, 0.0
        if m == "zoom_out":  # ... 1 / growth(alpha) times as large
            return (0.0, 0.0, -Z_REF * (self.growth(alpha) - 1.0)), 0.0, 0.0
        a = alpha * self.theta_max
        if m == "pan_left":
            return (0.0, 0.0, 0.0), a, 0.0
        if m == "pan_right":
            return (0.0, 0.0, 0.0), -a, 0.0
        if m == "tilt_up":
            return (0.0, 0.0, 0.0), 0.0, -a
        return (0.0, 0.0, 0.0), 0.0, a

    def info(self) -> dict[str, float | str]:
        return {
            "fov_deg": self.fov_deg,
            "focal_px": round(self.focal, 6),
            "z_near": Z_NEAR,
            "z_ref": Z_REF,
            "theta_max_deg": round(math.degrees(self.theta_max), 6) if self.motion.startswith(("pan", "tilt")) else 0.0,
            "d_max": round(abs(self.pose(1.0)[0][2]), 6) if self.motion.startswith("zoom") else 0.0,
        }


def render_frame(world: World, spec: Camera3DSpec, alpha: float, out: np.ndarray | None = None) -> np.ndarray:
    """One RGB frame of ``world`` seen from the camera pose at ``alpha``."""
    w, h = spec.width, spec.height
    img = out if out is not None else np.empty((h, w, 3), np.uint8)
    img[:] = np.asarray(world.background, np.uint8)
    pos, size = world.arrays
    p, yaw, pitch = spec.pose(alpha)
    r = (pos - np.array(p)) @ (rot_y(yaw) @ rot_x(pitch)).T
    f, cx, cy = spec.focal, w / 2.0, h / 2.0
    keep = r[:, 2] > Z_NEAR
    s = np.where(keep, f / np.maximum(r[:, 2], Z_NEAR), 0.0)
    u, v = s * r[:, 0] + cx, s * r[:, 1] + cy
    sw, sh = s * size[:, 0], s * size[:, 1]
    keep &= (u + sw / 2 > 0) & (u - sw / 2 < w) & (v + sh / 2 > 0) & (v - sh / 2 < h) & (sw >= 0.5) & (sh >= 0.5)
    idx = np.nonzero(keep)[0]
    for i in idx[np.argsort(-r[idx, 2], kind="stable")]:  # painter's algorithm: far to near
        x0, y0 = u[i] - sw[i] / 2, v[i] - sh[i] / 2
        rx0, ry0 = max(int(math.floor(x0)), 0), max(int(math.floor(y0)), 0)
        rx1, ry1 = min(int(math.ceil(x0 + sw[i])), w), min(int(math.ceil(y0 + sh[i])), h)
        if rx1 <= rx0 or ry1 <= ry0:
            continue
        mips = world.textures[world.sprites[i].texture]
        tex = next((t for t in reversed(mips) if t.shape[1] >= min(sw[i], sh[i])), mips[0])
        kx, ky = sw[i] / tex.shape[1], sh[i] / tex.shape[0]
        m = np.array([[kx, 0, x0 - rx0 + 0.5 * kx - 0.5], [0, ky, y0 - ry0 + 0.5 * ky - 0.5]], np.float32)
        patch = cv2.warpAffine(
            tex,
            m,
            (rx1 - rx0, ry1 - ry0),
            flags=cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=(0, 0, 0, 0),
        )
        a = patch[..., 3:4].astype(np.float32) * (1.0 / 255.0)
        roi = img[ry0:ry1, rx0:rx1]
        roi[:] = (roi * (1.0 - a) + patch[..., :3] * a + 0.5).astype(np.uint8)
    return img


def render_frames(world: World, spec: Camera3DSpec) -> Iterator[np.ndarray]:
    """Every frame of the clip, ``alpha = t / N`` (it never reaches 1), one buffer reused."""
    n = spec.n_frames
    buf = np.empty((spec.height, spec.width, 3), np.uint8)
    for t in range(n):
        yield render_frame(world, spec, t / n, buf)
