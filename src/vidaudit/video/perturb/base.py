"""What every op shares: the source's facts, the plan (the frame-by-frame map), the op protocol, helpers.

An op is split in two so that its metadata never depends on pixels:

- ``plan(params, source, rng, second)`` returns a :class:`Plan`: the output's size, rate and frame
  count, and the **map**, one list per column with one entry per output frame. ``map["source_frame"][i]``
  is the source frame output frame ``i`` is made from (``None`` when it is synthesised), and
  ``map["source_video"][i]`` (when present) says which input it comes from (``"source"`` or ``"second"``).
  The map is the render recipe: the engine reads exactly those frames, in that order, and hands each
  to ``frame()``.
- ``prepare(...)`` and ``frame(i, src, state)`` make the pixels of output frame ``i``.

Random choices in ``plan`` come from ``rng_from("perturb", op, seed)``; pixel noise in ``frame`` from
``rng_from("perturb", op, seed, "pixels")``, drawn in output order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict

from vidaudit.core.errors import ConfigError
from vidaudit.core.timeline import Timeline, constant_rate_frames

_EPS = 1e-9


class Params(BaseModel):
    """Base of every op's parameter model: frozen, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class SourceInfo:
    """A source as an op sees it: upright, at a constant rate from time 0. Stills have one frame and no rate.

    A video that is not constant-rate from 0 on a player's clock (variable rate, a skipped frame, a late
    first frame) is converted to its nominal rate: op frame ``k`` is the source frame a player shows at
    ``k / fps``, which ``frame_map`` names (``None``: the identity). The engine turns an op's map into
    source frames through it before reading, and records each one's time (``source_time_s``).
    """

    path: Path
    sha256: str
    width: int  # even, displayed (an odd last row/column is cropped away: yuv420p needs even sizes)
    height: int
    n_frames: int  # frames as the op sees them (at ``fps`` from 0)
    fps: float | None
    still: bool = False
    crop: tuple[int, int] = (0, 0)  # columns, rows cropped off the right/bottom to make the size even
    frame_map: tuple[int, ...] | None = None  # op frame -> source frame (player's order), when converted
    clock: Timeline | None = None  # the source's own clock, when converted
    n_source_frames: int | None = None  # frames in the file, when converted
    stream: int | None = None  # the video stream read, when it was named or the file has several
    shape: dict[str, Any] = field(default_factory=dict, hash=False)  # stream / sar / stored_size, where not the default

    @classmethod
    def of_video(
        cls,
        path: Path,
        sha256: str,
        width: int,
        height: int,
        clock: Timeline,
        crop: tuple[int, int] = (0, 0),
        stream: int | None = None,
        shape: dict[str, Any] | None = None,
    ) -> SourceInfo:
        """A video known by its displayed size and its clock (converted if it is not constant-rate from 0)."""
        if clock.plain:
            return cls(
                path=path,
                sha256=sha256,
                width=width,
                height=height,
                n_frames=clock.n_frames,
                fps=clock.fps,
                crop=crop,
                stream=stream,
                shape=dict(shape or {}),
            )
        fmap = constant_rate_frames(clock, clock.fps)
        return cls(
            path=path,
            sha256=sha256,
            width=width,
            height=height,
            n_frames=len(fmap),
            fps=clock.fps,
            crop=crop,
            frame_map=fmap,
            clock=clock,
            n_source_frames=clock.n_frames,
            stream=stream,
            shape=dict(shape or {}),
        )

    @property
    def file_frames(self) -> int:
        """Frames in the file (what a reader decodes)."""
        return self.n_source_frames if self.n_source_frames is not None else self.n_frames

    @property
    def duration_s(self) -> float | None:
        return None if self.fps is None else round(self.n_frames / self.fps, 6)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "width": self.width,
            "height": self.height,
            "n_frames": self.n_frames,
            "fps": self.fps,
            "duration_s": self.duration_s,
            "still": self.still,
            "crop_px": list(self.crop),
            **self.shape,
        }
        if self.frame_map is not None and self.clock is not None:
            out["converted_to_constant_rate"] = {
                "source_frames": self.file_frames,
                "source_start_s": self.clock.start_s,
                "source_variable_rate": self.clock.times is not None,
            }
        return out


@dataclass
class Plan:
    """The output of one op, frame by frame, before any pixel is made."""

    n_frames: int
    fps: float
    width: int
    height: int
    map: dict[str, list[Any]]
    info: dict[str, Any] = field(default_factory=dict)

    def check(self, op: str) -> None:
        if self.n_frames < 1:
            raise ConfigError(f"{op} would produce no frames; lengthen the clip or the duration")
        if "source_frame" not in self.map:
            raise AssertionError(f"{op}: plan map has no source_frame column")  # pragma: no cover
        for k, col in self.map.items():
            if len(col) != self.n_frames:
                raise AssertionError(f"{op}: map column {k} has {len(col)} entries for {self.n_frames} frames")
        if self.width % 2 or self.height % 2:
            raise AssertionError(f"{op}: odd output size {self.width}x{self.height}")  # pragma: no cover

    def video_of(self, i: int) -> str:
        col = self.map.get("source_video")
        return "source" if col is None else col[i]

    def order(self, video: str) -> list[int]:
        """The frames of ``video`` the render reads, in output order (repeats included)."""
        sf = self.map["source_frame"]
        return [int(sf[i]) for i in range(self.n_frames) if sf[i] is not None and self.video_of(i) == video]


_ParamsModel = Params  # the base model, named apart from ``Op.Params`` (an op's own model)


class Op:
    """One registered perturbation. Subclasses declare themselves in the class header (``__init_subclass__``)
    and implement ``plan``."""

    name: ClassVar[str]
    kind: ClassVar[str]  # temporal, spatial, integration, camera
    version: ClassVar[int] = 1  # bump when the output for the same inputs changes
    Params: ClassVar[type[Params]]
    summary: ClassVar[str] = ""
    needs_second: ClassVar[bool] = False
    accepts_still: ClassVar[bool] = False
    needs_frames: ClassVar[bool] = True  # False: the output never reads the source's pixels

    def __init_subclass__(
        cls,
        *,
        name: str = "",
        kind: str = "",
        params: type[_ParamsModel] | None = None,
        summary: str = "",
        **flags: Any,
    ) -> None:
        """An op says what it is in its class header, all in one place:
        ``class Reverse(Op, name="reverse", kind="temporal", params=ReverseParams, summary="...")``; ``flags``
        set ``version``, ``needs_second``, ``accepts_still`` or ``needs_frames``."""
        super().__init_subclass__()
        unknown = set(flags) - {"version", "needs_second", "accepts_still", "needs_frames"}
        if unknown:
            raise TypeError(f"op {cls.__name__}: unknown class keyword(s) {sorted(unknown)}")  # programming error
        declared = {"name": name, "kind": kind, "Params": params, "summary": summary, **flags}
        for key, value in declared.items():
            if value is not None and value != "":
                setattr(cls, key, value)

    def plan(self, p: Any, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        raise NotImplementedError

    def prepare(self, p: Any, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        """Per-render state (masks, sprites, buffers); called once before the first frame."""
        return None

    def frame(self, i: int, src: np.ndarray | None, state: Any) -> np.ndarray:
        """Output frame ``i`` from its source frame (read-only; may be returned as is)."""
        if src is None:
            raise AssertionError(f"{self.name}: frame {i} has no source")  # pragma: no cover
        return src


# --------------------------------------------------------------------------- time and space helpers


def to_frames(t: float, fps: float) -> int:
    """Seconds to a whole number of frames, rounding half up (0.5 frame -> 1)."""
    return int(math.floor(t * fps + 0.5 + _EPS))


def t_of(frame: int, fps: float) -> float:
    return round(frame / fps, 6)


def span(a: int, b: int, fps: float) -> dict[str, Any]:
    """A half-open frame range [a, b) and its presentation-time interval [a / fps, b / fps)."""
    return {"frames": [a, b], "t": [t_of(a, fps), t_of(b, fps)]}


def need_video(op: str, src: SourceInfo) -> float:
    if src.still or src.fps is None:
        raise ConfigError(f"{op} needs a video; {src.path.name} is a still image")
    return src.fps


def window(
    op: str,
    src: SourceInfo,
    start_s: float | None,
    duration_s: float | None,
    rng: np.random.Generator,
    *,
    interior: bool = False,
    what: str = "window",
) -> tuple[int, int]:
    """The frame range [a, b) of a time window: ``duration_s`` None means the whole clip, ``start_s``
    None means a start drawn from ``rng``. ``interior`` keeps frames on both sides (a cut must have
    something before and after it; a drawn start keeps >= 10% of the clip, at least one frame, each side)."""
    fps = need_video(op, src)
    n = src.n_frames
    if duration_s is None:
        if interior:
            raise ConfigError(f"{op}: a {what} needs duration_s")  # pragma: no cover - params forbid it
        return 0, n
    length = to_frames(duration_s, fps)
    if length < 1:
        raise ConfigError(
            f"{op}: duration_s={duration_s:g} is shorter than one frame at {fps:g} fps; "
            f"duration_s must be at least {1 / fps:.4g}"
        )
    lo = 1 if interior else 0
    hi = n - length - (1 if interior else 0)  # largest allowed start frame
    if hi < lo:
        room = (n - 2) / fps if interior else n / fps
        raise ConfigError(
            f"{op}: duration_s={duration_s:g} does not fit in the {n / fps:g} s source"
            + (" with a frame kept on each side" if interior else "")
            + f"; duration_s must be at most {max(room, 0):.4g}"
        )
    if start_s is None:
        if interior:
            margin = max(1, int(round(0.1 * n)))
            dlo, dhi = max(lo, margin), min(hi, n - length - margin)
            if dhi < dlo:
                dlo, dhi = lo, hi
        else:
            dlo, dhi = lo, hi
        a = int(rng.integers(dlo, dhi + 1))
    else:
        a = to_frames(start_s, fps)
        if not lo <= a <= hi:
            raise ConfigError(
                f"{op}: start_s={start_s:g} puts the {what} [{a / fps:g}, {(a + length) / fps:g}) s "
                f"outside the {n / fps:g} s source"
                + (" interior" if interior else "")
                + f"; with duration_s={duration_s:g}, start_s must be in "
                f"[{lo / fps:.4g}, {hi / fps:.4g}]"
            )
    return a, a + length


def frame_range(op: str, src: SourceInfo, start_s: float, end_s: float | None) -> tuple[int, int]:
    """[start_s, end_s) as frames (end None: the end of the clip), at least one frame long."""
    fps = need_video(op, src)
    n = src.n_frames
    a = to_frames(start_s, fps)
    b = n if end_s is None else to_frames(end_s, fps)
    if not 0 <= a < b <= n:
        raise ConfigError(
            f"{op}: the range [{start_s:g}, {end_s if end_s is not None else n / fps:g}) s is empty or "
            f"outside the {n / fps:g} s source; need 0 <= start_s < end_s <= {n / fps:g}"
        )
    return a, b


def region_px(
    op: str, region: tuple[float, float, float, float] | None, width: int, height: int
) -> tuple[int, int, int, int]:
    """A region given as fractions (x0, y0, x1, y1) of the frame -> pixels [x0, x1) x [y0, y1)."""
    if region is None:
        return 0, 0, width, height
    fx0, fy0, fx1, fy1 = region
    if not (0 <= fx0 < fx1 <= 1 and 0 <= fy0 < fy1 <= 1):
        raise ConfigError(
            f"{op}: region={list(region)} must be fractions x0, y0, x1, y1 of the frame with "
            "0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1"
        )
    x0, y0 = int(round(fx0 * width)), int(round(fy0 * height))
    x1, y1 = int(round(fx1 * width)), int(round(fy1 * height))
    if x1 <= x0 or y1 <= y0:
        raise ConfigError(f"{op}: region={list(region)} covers no whole pixel of a {width}x{height} frame")
    return x0, y0, x1, y1


def fit_frame(frame: np.ndarray, width: int, height: int) -> np.ndarray:
    """Scale to cover ``width`` x ``height`` keeping the aspect ratio, then crop the centre."""
    h, w = frame.shape[:2]
    if (w, h) == (width, height):
        return frame
    scale = max(width / w, height / h)
    nw, nh = max(width, int(math.ceil(w * scale - _EPS))), max(height, int(math.ceil(h * scale - _EPS)))
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    big = cv2.resize(frame, (nw, nh), interpolation=interp)
    x0, y0 = (nw - width) // 2, (nh - height) // 2
    return np.ascontiguousarray(big[y0 : y0 + height, x0 : x0 + width])
