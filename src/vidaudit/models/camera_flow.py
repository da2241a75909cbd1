"""``camera-flow``: the physical-limit reference for camera-motion questions (a local observer).

It reads only the frames it is sent (images, or the listed frames of a video part) and classifies the
camera's motion from consecutive frame pairs:

- translation by phase correlation (circular, so it holds across the wrap of a 2D pan);
- radial scale by a search over centred zooms ``s`` (content grows from the centre: ``s > 1``);
- each pair is explained by the model (translation or zoom) with the lower residual; the evidence is
  summed over pairs.

Directions follow the physical camera (``docs/perturbations.md``): content moving right = ``pan_left``,
down = ``tilt_up``, growing = ``zoom_in``. The answer text comes from the suite's ``constant_answer``, so
the suite's own strict parser scores it like any model.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence

import cv2
import numpy as np

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import ErrorKind, ImagePart, ModelSpec, Request, Response, Sample, VideoPart
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.video.io import iter_selected

DIRECTIONS = ("zoom_in", "zoom_out", "pan_left", "pan_right", "tilt_up", "tilt_down")
_SCALES = np.exp(np.linspace(-0.25, 0.25, 51))
_MAX_SIDE = 192


def _gray(frame: np.ndarray) -> np.ndarray:
    g = cv2.cvtColor(np.ascontiguousarray(frame), cv2.COLOR_RGB2GRAY).astype(np.float32)
    h, w = g.shape
    f = min(1.0, _MAX_SIDE / max(h, w))
    if f < 1.0:
        g = cv2.resize(g, (max(int(w * f), 8), max(int(h * f), 8)), interpolation=cv2.INTER_AREA)
    return g


def _zoom(g: np.ndarray, s: float) -> np.ndarray:
    h, w = g.shape
    m = cv2.getRotationMatrix2D((w / 2.0 - 0.5, h / 2.0 - 0.5), 0.0, float(s))
    return cv2.warpAffine(g, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def _err(a: np.ndarray, b: np.ndarray, margin: tuple[int, int]) -> float:
    my, mx = margin
    d = a[my:a.shape[0] - my, mx:a.shape[1] - mx] - b[my:b.shape[0] - my, mx:b.shape[1] - mx]
    return float(np.mean(d * d))


def pair_motion(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """How grey frame ``b`` follows ``a``: translation (dx, dy) and zoom ``s``, each with its residual."""
    h, w = a.shape
    win = cv2.createHanningWindow((w, h), cv2.CV_32F)
    (dx, dy), _ = cv2.phaseCorrelate(a, b, win)
    shifted = np.roll(a, (int(round(dy)), int(round(dx))), axis=(0, 1))
    margin = (max(h // 8, 1), max(w // 8, 1))
    e_t = _err(shifted, b, margin)
    errs = [_err(_zoom(a, s), b, margin) for s in _SCALES]
    k = int(np.argmin(errs))
    return {"dx": float(dx), "dy": float(dy), "err_t": e_t, "s": float(_SCALES[k]), "err_z": float(errs[k]),
            "err_0": _err(a, b, margin)}


def classify_motion(frames: Sequence[np.ndarray]) -> tuple[str, dict[str, float]]:
    """The camera motion of RGB ``frames`` (in time order) and the evidence summed over consecutive pairs."""
    if len(frames) < 2:
        raise ConfigError("camera-flow needs at least two frames to see a motion")
    grey = [_gray(f) for f in frames]
    tx = ty = logz = 0.0
    votes_t = votes_z = 0.0
    for a, b in zip(grey, grey[1:], strict=False):
        m = pair_motion(a, b)
        if m["err_t"] <= m["err_z"]:
            votes_t += m["err_0"] - m["err_t"]
            tx += m["dx"]
            ty += m["dy"]
        else:
            votes_z += m["err_0"] - m["err_z"]
            logz += math.log(m["s"])
    ev = {"tx": tx, "ty": ty, "log_zoom": logz, "votes_translation": votes_t, "votes_zoom": votes_z}
    if votes_z > votes_t:
        return ("zoom_in" if logz > 0 else "zoom_out"), ev
    if abs(tx) >= abs(ty):
        return ("pan_left" if tx > 0 else "pan_right"), ev
    return ("tilt_up" if ty > 0 else "tilt_down"), ev


class CameraFlowAdapter:
    """The ``camera-flow`` provider: role ``observer``; answers in the suite's format via ``constant_answer``."""

    capabilities = Capabilities(native_video=True, images=True, default_native_fps=None, concurrency=2, local=True,
                                synthetic=True)
    needs_suite = True
    needs_samples = True
    role = "observer"

    def __init__(self, spec: ModelSpec, *, suite=None, samples: Mapping[str, Sample] | None = None,
                 **_: object) -> None:
        if suite is None:
            raise ConfigError("camera-flow needs the run's suite (it answers in the suite's format)")
        self.spec = spec
        self.suite = suite
        self.samples = samples or {}

    async def aclose(self) -> None:
        return None

    async def generate(self, request: Request) -> Response:
        return await asyncio.to_thread(self._answer, request)

    def _frames(self, request: Request) -> list[tuple[int, float, np.ndarray]]:
        frames: list[tuple[int, float, np.ndarray]] = []
        for part in request.parts:
            if isinstance(part, ImagePart):
                frames.append((part.frame_index, part.t, part.image))
            elif isinstance(part, VideoPart):
                if not part.frame_indices:
                    raise ModelCallError(ErrorKind.BAD_REQUEST, "camera-flow: video part lists no frames")
                try:
                    when = dict(zip(part.frame_indices, part.timestamps, strict=True))
                    frames.extend((i, when[i], f) for i, f in iter_selected(part.path, part.frame_indices, half=True))
                except DataError as e:
                    raise ModelCallError(ErrorKind.BAD_REQUEST, str(e)) from e
        frames.sort(key=lambda x: (x[1], x[0]))
        return frames

    def _answer(self, request: Request) -> Response:
        t0 = time.perf_counter()
        frames = self._frames(request)
        if len(frames) < 2:
            raise ModelCallError(ErrorKind.BAD_REQUEST, "camera-flow: fewer than two frames in the request")
        direction, _ = classify_motion([f for _, _, f in frames])
        sid = request.metadata.get("sample_id")
        if sid not in self.samples:
            raise ModelCallError(ErrorKind.BAD_REQUEST, f"camera-flow: unknown sample {sid!r}")
        try:
            text = self.suite.constant_answer(self.samples[sid], direction)
        except ConfigError as e:
            raise ModelCallError(ErrorKind.UNSUPPORTED, f"camera-flow: {e}") from e
        return Response(text=text, latency_s=time.perf_counter() - t0, finish_reason="stop",
                        model_version="camera-flow", cost_usd=0.0)
