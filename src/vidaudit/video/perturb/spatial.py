"""Spatial ops: they change pixels (or replace the picture) over a frame range and a region.

Each records ``map.source_frame[i]`` and ``map.affected[i]`` (whether output frame ``i`` was changed),
and in ``info`` the affected range (frames and seconds) and ``region_px`` = [x0, y0, x1, y1), exclusive.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Literal

import cv2
import numpy as np
from pydantic import Field

from vidaudit.core.errors import ConfigError
from vidaudit.video import draw
from vidaudit.video.perturb.base import Op, Params, Plan, SourceInfo, need_video, region_px, span, to_frames, window
from vidaudit.video.perturb.registry import register
from vidaudit.video.sampling import frame_on_screen

Region = tuple[float, float, float, float]
#: a region in pixels: [x0, y0, x1, y1), exclusive
Box = tuple[int, int, int, int]


def _start() -> Any:
    return Field(None, ge=0, description="start of the affected range (s); null: drawn from the seed")


def _duration() -> Any:
    return Field(2.0, gt=0, description="length of the affected range (s); null: the whole clip")


def _region() -> Any:
    return Field(None, description="fractions [x0, y0, x1, y1] of the frame; null: the whole frame")


def _windowed_plan(
    op: str,
    src: SourceInfo,
    start_s: float | None,
    duration_s: float | None,
    rng: np.random.Generator,
    box: Box,
    **info: Any,
) -> Plan:
    fps = need_video(op, src)
    a, b = window(op, src, start_s, duration_s, rng)
    n = src.n_frames
    return Plan(
        n_frames=n,
        fps=fps,
        width=src.width,
        height=src.height,
        map={"source_frame": list(range(n)), "affected": [a <= i < b for i in range(n)]},
        info={"affected": span(a, b, fps), "region_px": list(box), **info},
    )


class _Windowed(Op):
    """A spatial op over a time window and a region. ``plan`` draws the window (``start_s``, ``duration_s``) once
    ``place`` has picked the region and said what the op records beside it; ``paint`` redraws the region of each
    affected frame from the state ``prepare`` returns, which ``_state`` completes with the window's bookkeeping."""

    kind = "spatial"

    def place(self, p: Any, src: SourceInfo, rng: np.random.Generator) -> tuple[Box, dict[str, Any]]:
        """The region the op changes (here ``p.region`` of the frame) and what it records beside it (``info``)."""
        info = self.info(p)
        return region_px(self.name, p.region, src.width, src.height), info

    def info(self, p: Any) -> dict[str, Any]:
        """What the op records in its plan beside the region and the window (checked before either)."""
        return {}

    def plan(self, p: Any, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        box, info = self.place(p, src, rng)
        return _windowed_plan(self.name, src, p.start_s, p.duration_s, rng, box, **info)

    @staticmethod
    def _state(plan: Plan, **state: Any) -> dict[str, Any]:
        """``state`` with the planned region (``box``) and which frames it affects (``affected``)."""
        return {**state, "box": plan.info["region_px"], "affected": plan.map["affected"]}

    @abstractmethod
    def paint(self, roi: np.ndarray, state: Any) -> np.ndarray:
        """The new pixels of an affected frame's region ``roi`` (a view of a copy of the source frame)."""

    def frame(self, i: int, src: np.ndarray | None, state: Any) -> np.ndarray:
        assert src is not None
        if not state["affected"][i]:
            return src
        x0, y0, x1, y1 = state["box"]
        out = src.copy()
        out[y0:y1, x0:x1] = self.paint(out[y0:y1, x0:x1], state)
        return out


# --------------------------------------------------------------------------- colour_shift


class ColourShiftParams(Params):
    hue_deg: float = Field(90.0, ge=-180, le=180, description="hue rotation in degrees (OpenCV steps of 2)")
    start_s: float | None = _start()
    duration_s: float | None = _duration()
    region: Region | None = _region()


@register
class ColourShift(
    _Windowed, name="colour_shift", params=ColourShiftParams, summary="rotate the hue of a region over a time window"
):
    def info(self, p: ColourShiftParams) -> dict[str, Any]:
        steps = int(round(p.hue_deg / 2)) % 180
        if steps == 0:
            raise ConfigError(
                f"{self.name}: hue_deg={p.hue_deg:g} is no rotation; hue_deg must be in [-180, 180] "
                "and at least 1 degree away from 0"
            )
        return {"hue_shift_deg": steps * 2 if steps <= 90 else steps * 2 - 360}

    def prepare(self, p: ColourShiftParams, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        steps = int(round(p.hue_deg / 2)) % 180
        lut = np.arange(256, dtype=np.int32)
        lut[:180] = (lut[:180] + steps) % 180
        return self._state(plan, lut=lut.astype(np.uint8))

    def paint(self, roi: np.ndarray, state: Any) -> np.ndarray:
        hsv = cv2.cvtColor(np.ascontiguousarray(roi), cv2.COLOR_RGB2HSV)
        hsv[..., 0] = state["lut"][hsv[..., 0]]
        return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)


# --------------------------------------------------------------------------- noise


class NoiseParams(Params):
    sigma: float = Field(20.0, gt=0, le=128, description="standard deviation of the added Gaussian noise (0-255 units)")
    start_s: float | None = _start()
    duration_s: float | None = _duration()
    region: Region | None = _region()


@register
class Noise(
    _Windowed,
    name="noise",
    params=NoiseParams,
    summary="add Gaussian noise to a region over a time window (fresh noise every frame)",
):
    def info(self, p: NoiseParams) -> dict[str, Any]:
        return {"sigma": p.sigma}

    def prepare(self, p: NoiseParams, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        return self._state(plan, rng=rng, sigma=np.float32(p.sigma))

    def paint(self, roi: np.ndarray, state: Any) -> np.ndarray:
        noisy = roi.astype(np.float32)
        noisy += state["rng"].standard_normal(noisy.shape, dtype=np.float32) * state["sigma"]
        return np.clip(np.rint(noisy), 0, 255).astype(np.uint8)


# --------------------------------------------------------------------------- insert_object


def _sprite_alpha(shape: str, side: int) -> np.ndarray:
    """An antialiased mask (float32, 0..1) of ``shape`` filling a ``side`` x ``side`` box."""
    m = np.zeros((side, side), np.uint8)
    c, r = side / 2 - 0.5, side / 2 - 0.5
    if shape == "disc":
        draw.circle(m, (c, c), r, (255,))
    elif shape == "square":
        draw.polygon(m, np.array([[0, 0], [side - 1, 0], [side - 1, side - 1], [0, side - 1]], float), (255,))
    elif shape == "triangle":
        draw.polygon(m, np.array([[c, 0], [side - 1, side - 1], [0, side - 1]], float), (255,))
    elif shape == "diamond":
        draw.polygon(m, np.array([[c, 0], [side - 1, c], [c, side - 1], [0, c]], float), (255,))
    return m.astype(np.float32) / 255.0


class InsertObjectParams(Params):
    shape: Literal["disc", "square", "triangle", "diamond"] = Field("disc", description="the sprite")
    size: float = Field(0.2, gt=0, le=1, description="sprite side as a fraction of the frame's shorter side")
    centre: tuple[float, float] | None = Field(
        None, description="sprite centre as fractions [x, y] of the frame; null: drawn from the seed, fully inside"
    )
    colour: tuple[int, int, int] | None = Field(None, description="RGB 0-255; null: drawn from the seed's palette")
    start_s: float | None = _start()
    duration_s: float | None = _duration()


@register
class InsertObject(
    _Windowed,
    name="insert_object",
    params=InsertObjectParams,
    summary="draw a sprite in a region of the frame over a time window",
):
    def place(self, p: InsertObjectParams, src: SourceInfo, rng: np.random.Generator) -> tuple[Box, dict[str, Any]]:
        """A sprite's box, at ``centre`` or drawn fully inside the frame, and its shape, colour and side."""
        w, h = src.width, src.height
        side = max(2, int(round(p.size * min(w, h))))
        if p.colour is not None and not all(0 <= c <= 255 for c in p.colour):
            raise ConfigError(f"{self.name}: colour={list(p.colour)} must be three integers in [0, 255]")
        if p.centre is None:
            x0 = int(rng.integers(0, w - side + 1))
            y0 = int(rng.integers(0, h - side + 1))
        else:
            fx, fy = p.centre
            if not (0 <= fx <= 1 and 0 <= fy <= 1):
                raise ConfigError(f"{self.name}: centre={list(p.centre)} must be fractions in [0, 1]")
            x0 = int(round(fx * w - side / 2))
            y0 = int(round(fy * h - side / 2))
            if not (0 <= x0 <= w - side and 0 <= y0 <= h - side):
                raise ConfigError(
                    f"{self.name}: a sprite of {side} px centred at {list(p.centre)} leaves the "
                    f"{w}x{h} frame; move centre inward or lower size"
                )
        colour = (
            list(p.colour) if p.colour is not None else list(draw.FOREGROUNDS[int(rng.integers(len(draw.FOREGROUNDS)))])
        )
        return (x0, y0, x0 + side, y0 + side), {"shape": p.shape, "colour": colour, "side_px": side}

    def prepare(self, p: InsertObjectParams, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        alpha = _sprite_alpha(p.shape, plan.info["side_px"])[..., None]
        colour = np.asarray(plan.info["colour"], np.float32)
        return self._state(plan, alpha=alpha, ink=alpha * colour)

    def paint(self, roi: np.ndarray, state: Any) -> np.ndarray:
        drawn = roi.astype(np.float32) * (1 - state["alpha"]) + state["ink"]
        out: np.ndarray = np.clip(np.rint(drawn), 0, 255).astype(np.uint8)
        return out


# --------------------------------------------------------------------------- blank and noise_video


def _own_duration(op: str, src: SourceInfo, duration_s: float | None) -> tuple[float, int]:
    fps = need_video(op, src)
    n = src.n_frames if duration_s is None else to_frames(duration_s, fps)
    if n < 1:
        raise ConfigError(f"{op}: duration_s={duration_s:g} is shorter than one frame at {fps:g} fps")
    return fps, n


def _replacing(
    src: SourceInfo, fps: float, n: int, info: dict[str, Any], sf: list[Any] | None = None, **cols: list[Any]
) -> Plan:
    """The plan of ``n`` frames that replace the source's whole picture, all affected: ``sf`` names the frames of the
    second video they show (None: synthesised), ``cols`` further map columns, ``info`` what the op records."""
    return Plan(
        n_frames=n,
        fps=fps,
        width=src.width,
        height=src.height,
        map={"source_frame": [None] * n if sf is None else sf, **cols, "affected": [True] * n},
        info={
            "affected": span(0, n, fps),
            "region_px": [0, 0, src.width, src.height],
            "duration_s": round(n / fps, 6),
            **info,
        },
    )


def _synth_plan(op: str, src: SourceInfo, duration_s: float | None, **info: Any) -> Plan:
    fps, n = _own_duration(op, src, duration_s)
    return _replacing(src, fps, n, info)


class BlankParams(Params):
    duration_s: float | None = Field(
        None, gt=0, le=86400, description="length of the blank video (s); null: the source's duration"
    )
    colour: tuple[int, int, int] = Field((0, 0, 0), description="RGB 0-255 of every frame")


@register
class Blank(
    Op,
    name="blank",
    kind="spatial",
    params=BlankParams,
    summary="a uniform (black) video at the source's size and rate, with its own duration",
    needs_frames=False,
):
    def plan(self, p: BlankParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        if not all(0 <= c <= 255 for c in p.colour):
            raise ConfigError(f"{self.name}: colour={list(p.colour)} must be three integers in [0, 255]")
        return _synth_plan(self.name, src, p.duration_s, colour=list(p.colour))

    def prepare(self, p: BlankParams, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        img = np.empty((plan.height, plan.width, 3), np.uint8)
        img[:] = p.colour
        return img

    def frame(self, i: int, src: np.ndarray | None, state: Any) -> np.ndarray:
        img: np.ndarray = state
        return img


class NoiseVideoParams(Params):
    duration_s: float | None = Field(None, gt=0, le=86400, description="length (s); null: the source's duration")
    kind: Literal["uniform", "gaussian"] = Field("uniform", description="uniform 0-255, or Gaussian around 128")
    sigma: float = Field(64.0, gt=0, le=255, description="standard deviation of the Gaussian kind")


@register
class NoiseVideo(
    Op,
    name="noise_video",
    kind="spatial",
    params=NoiseVideoParams,
    summary="a video of pure per-pixel noise at the source's size and rate",
    needs_frames=False,
):
    def plan(self, p: NoiseVideoParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        return _synth_plan(self.name, src, p.duration_s, noise=p.kind, sigma=p.sigma if p.kind == "gaussian" else None)

    def prepare(self, p: NoiseVideoParams, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        return {"rng": rng, "shape": (plan.height, plan.width, 3), "kind": p.kind, "sigma": np.float32(p.sigma)}

    def frame(self, i: int, src: np.ndarray | None, state: Any) -> np.ndarray:
        r: np.random.Generator = state["rng"]
        out: np.ndarray
        if state["kind"] == "uniform":
            out = r.integers(0, 256, state["shape"], dtype=np.uint8)
            return out
        g = r.standard_normal(state["shape"], dtype=np.float32) * state["sigma"] + np.float32(128)
        out = np.clip(np.rint(g), 0, 255).astype(np.uint8)
        return out


# --------------------------------------------------------------------------- unrelated


class UnrelatedParams(Params):
    duration_s: float | None = Field(None, gt=0, le=86400, description="length (s); null: the source's duration")
    second_start_s: float = Field(0.0, ge=0, description="where to start in the unrelated video (s)")
    loop: bool = Field(True, description="loop the unrelated video when it is shorter than the output")


@register
class Unrelated(
    Op,
    name="unrelated",
    kind="spatial",
    params=UnrelatedParams,
    summary="replace the source by an unrelated (second) video, fitted to the source's size, rate and duration",
    needs_second=True,
    needs_frames=False,
):
    def plan(self, p: UnrelatedParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        assert second is not None
        fps, n = _own_duration(self.name, src, p.duration_s)
        fps2 = need_video(self.name + " (second video)", second)
        d2 = second.n_frames / fps2
        if p.second_start_s >= d2:
            raise ConfigError(
                f"{self.name}: second_start_s={p.second_start_s:g} is past the end of the {d2:g} s "
                f"second video; second_start_s must be in [0, {d2:.4g})"
            )
        ts = [p.second_start_s + i / fps for i in range(n)]
        if p.loop:
            ts = [t % d2 for t in ts]
        elif ts[-1] >= d2 + 1e-9:
            raise ConfigError(
                f"{self.name}: the second video has {d2 - p.second_start_s:.4g} s after second_start_s "
                f"but the output lasts {n / fps:.4g} s; set loop=true or a shorter duration_s"
            )
        sf = [frame_on_screen(t, fps2, second.n_frames) for t in ts]
        looped = bool(p.loop and p.second_start_s + n / fps > d2 + 1e-9)
        return _replacing(src, fps, n, {"looped": looped}, sf, source_video=["second"] * n)
