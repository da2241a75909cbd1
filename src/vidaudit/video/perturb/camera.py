"""``camera_2d``: Reveal Algorithm 1 on any still image or on every frame of a video.

Frame ``t`` of ``N`` has ``alpha = t / N`` (so alpha never reaches 1) and ``T = N / fps``:

- pan / tilt slide a window over the frame tiled with itself: the content moves by
  ``d = floor(alpha * speed * T) = floor(speed * t / fps)`` pixels, wrapping around;
- zoom crops the centred ``floor(W / z) x floor(H / z)`` region and resizes it back to ``W x H``, with
  ``z = 1 + (zoom_max - 1) alpha`` (in) or ``zoom_max - (zoom_max - 1) alpha`` (out); ``zoom_max = 1.5`` is the
  paper's ``1 + 0.5 alpha``. ``zoom_curve=exponential`` uses ``zoom_max ** alpha`` instead.

Direction names follow the physical camera: ``pan_left`` = the camera turns left, so the content moves
right (``dx > 0``); ``pan_right``: content moves left; ``tilt_up`` = the camera tilts up, so the content
moves down (``dy > 0``, rows grow downward); ``tilt_down``: content moves up; ``zoom_in``: content grows
from the centre. Algorithm 1 as printed slides the window down for "up" with row-down arrays, which
moves the content up (a physical tilt *down*); we implement the physical mapping.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import cv2
import numpy as np
from pydantic import Field

from vidaudit.core.errors import ConfigError
from vidaudit.video.perturb.base import Op, Params, Plan, SourceInfo, to_frames
from vidaudit.video.perturb.registry import register

Motion = Literal["pan_left", "pan_right", "tilt_up", "tilt_down", "zoom_in", "zoom_out"]

#: Content motion on screen for each camera motion (what a correct answer describes).
CONTENT_MOTION = {
    "pan_left": "right",
    "pan_right": "left",
    "tilt_up": "down",
    "tilt_down": "up",
    "zoom_in": "grows from the centre",
    "zoom_out": "shrinks toward the centre",
}

STILL_DURATION_S = 8.0  # Algorithm 1's base video: T = 8 s at 30 fps (N = 240)
STILL_FPS = 30.0


class Camera2DParams(Params):
    motion: Motion = Field(..., description="the camera's motion (physical names)")
    speed_px_s: float = Field(
        100.0,
        gt=0,
        le=100_000,
        description="pan/tilt speed in source pixels per second (the paper's s_pan, s_tilt; A.3 sweeps 10-200)",
    )
    zoom_max: float = Field(1.5, gt=1, le=8, description="zoom factor at the far end (A.3 sweeps 1.2-3.0)")
    zoom_curve: Literal["linear", "exponential"] = Field("linear", description="how z moves between 1 and zoom_max")
    still_s: float | None = Field(
        None, ge=0, description="for a video: use the frame at still_s as a still; null: move over every frame"
    )
    duration_s: float | None = Field(None, gt=0, le=3600, description="output length for a still (s); null: 8")
    fps: float | None = Field(None, gt=0, le=240, description="output rate for a still; null: 30")


def zoom_at(p: Camera2DParams, alpha: float) -> float:
    if p.zoom_curve == "linear":
        z_in = 1 + (p.zoom_max - 1) * alpha
        z_out = p.zoom_max - (p.zoom_max - 1) * alpha
    else:
        z_in, z_out = p.zoom_max**alpha, p.zoom_max ** (1 - alpha)
    return z_in if p.motion == "zoom_in" else z_out


def _crop(w: int, h: int, z: float) -> tuple[int, int]:
    """The centred crop ``floor(W / z) x floor(H / z)`` a zoom of ``z`` resizes back to ``W x H``."""
    return int(math.floor(w / z + 1e-9)), int(math.floor(h / z + 1e-9))


def _check_visible(
    op: str, p: Camera2DParams, n: int, fps: float, w: int, h: int, d: list[int], zoom: list[float]
) -> None:
    """Refuse a motion a viewer would not see as labelled: one frame, a pan/tilt that never moves a whole pixel
    or a zoom whose crop never changes (a still picture), and a pan/tilt stepping half the frame or more per
    frame, which on the wrapping canvas is seen going the other way (a 50 px step on a 96 px frame shows a
    46 px step back)."""
    if n < 2:
        raise ConfigError(f"{op}: {n} frame shows no motion; need at least 2 frames (a longer duration_s or fps)")
    if p.motion.startswith("zoom"):
        if len({_crop(w, h, z) for z in zoom}) < 2:
            raise ConfigError(
                f"{op}: zoom_max={p.zoom_max:g} never changes the {w}x{h} crop by a whole pixel, so every frame is "
                "the same picture; raise zoom_max"
            )
        return
    length, axis = (w, "width") if p.motion.startswith("pan") else (h, "height")
    if all(x % length == 0 for x in d):
        raise ConfigError(
            f"{op}: speed_px_s={p.speed_px_s:g} moves the picture less than one pixel in {n} frames at {fps:g} fps, "
            f"so every frame is the same picture; speed_px_s must be at least {fps / (n - 1):.4g}"
        )
    step = max(abs(b - a) for a, b in zip(d, d[1:], strict=False))
    if 2 * step >= length:
        raise ConfigError(
            f"{op}: speed_px_s={p.speed_px_s:g} moves the content {step} px per frame, half the {length} px "
            f"{axis} or more, so on the wrapping canvas it is seen moving the other way; speed_px_s must be at "
            f"most {(length - 1) // 2 * fps:g} at {fps:g} fps"
        )


@register
class Camera2D(
    Op,
    name="camera_2d",
    kind="camera",
    params=Camera2DParams,
    summary="Algorithm 1: pan/tilt by sliding over a tiled canvas, zoom by centre crop and resize",
    accepts_still=True,
):
    def plan(self, p: Camera2DParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        per_frame = not src.still and p.still_s is None
        if per_frame:
            if p.duration_s is not None or p.fps is not None:
                raise ConfigError(
                    f"{self.name}: duration_s and fps apply to a still (an image, or a video with "
                    "still_s set); over a video the camera moves for the whole clip at its rate"
                )
            assert src.fps is not None
            fps, n = src.fps, src.n_frames
            sf: list[int] = list(range(n))
        else:
            fps = p.fps if p.fps is not None else STILL_FPS
            n = to_frames(p.duration_s if p.duration_s is not None else STILL_DURATION_S, fps)
            if n < 1:
                raise ConfigError(f"{self.name}: duration_s={p.duration_s:g} is shorter than one frame")
            still = 0
            if not src.still:
                assert p.still_s is not None and src.fps is not None
                still = to_frames(p.still_s, src.fps)
                if still >= src.n_frames:
                    raise ConfigError(
                        f"{self.name}: still_s={p.still_s:g} is past the end of the {src.duration_s:g} s source"
                    )
            sf = [still] * n
        dx, dy, zoom = [0] * n, [0] * n, [1.0] * n
        for t in range(n):
            d = int(math.floor(p.speed_px_s * t / fps + 1e-9))
            if p.motion == "pan_left":
                dx[t] = d
            elif p.motion == "pan_right":
                dx[t] = -d
            elif p.motion == "tilt_up":
                dy[t] = d
            elif p.motion == "tilt_down":
                dy[t] = -d
            else:
                zoom[t] = round(zoom_at(p, t / n), 9)
        _check_visible(self.name, p, n, fps, src.width, src.height, dx if p.motion.startswith("pan") else dy, zoom)
        info = {
            "motion": p.motion,
            "content_motion": CONTENT_MOTION[p.motion],
            "N": n,
            "T_s": round(n / fps, 6),
            "alpha": "t / N",
            "per_frame": per_frame,
            "convention": "dx > 0: content moves right; dy > 0: content moves down (wrapping); zoom: "
            "centre crop floor(W/z) x floor(H/z) resized to W x H",
        }
        return Plan(
            n_frames=n,
            fps=fps,
            width=src.width,
            height=src.height,
            map={"source_frame": sf, "dx": dx, "dy": dy, "zoom": zoom},
            info=info,
        )

    def prepare(self, p: Camera2DParams, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        return {
            "dx": plan.map["dx"],
            "dy": plan.map["dy"],
            "zoom": plan.map["zoom"],
            "buf": np.empty((plan.height, plan.width, 3), np.uint8),
        }

    def frame(self, i: int, src: np.ndarray | None, state: Any) -> np.ndarray:
        assert src is not None
        h, w = src.shape[:2]
        z = state["zoom"][i]
        if z != 1.0:
            wc, hc = _crop(w, h, z)
            x0, y0 = (w - wc) // 2, (h - hc) // 2
            return cv2.resize(src[y0 : y0 + hc, x0 : x0 + wc], (w, h), dst=state["buf"], interpolation=cv2.INTER_LINEAR)
        sx, sy = state["dx"][i] % w, state["dy"][i] % h
        if sx == 0 and sy == 0:
            return src
        out: np.ndarray = state["buf"]
        if sx:  # out[:, x] = src[:, (x - sx) mod w]
            out[:, sx:] = src[:, : w - sx]
            out[:, :sx] = src[:, w - sx :]
        else:  # out[y] = src[(y - sy) mod h]
            out[sy:] = src[: h - sy]
            out[:sy] = src[h - sy :]
        return out
