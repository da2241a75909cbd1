"""``camera-flow``: the physical-limit reference for camera-motion questions (a local observer).

It reads only the frames it is sent (images, or the listed frames of a video part) and classifies the
camera's motion with :func:`vidaudit.video.motion.classify_motion`. The answer text comes from the suite's
``constant_answer``, so the suite's own strict parser scores it like any model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import numpy as np

from vidaudit.sdk import (
    Baselines,
    Capabilities,
    ConfigError,
    ErrorKind,
    ModelCallError,
    ModelSpec,
    Request,
    Response,
    Sample,
    classify_motion,
    observed_frames,
)


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
        return sorted(observed_frames(request, "camera-flow"), key=lambda x: (x[1], x[0]))

    def _answer(self, request: Request) -> Response:
        t0 = time.perf_counter()
        frames = self._frames(request)
        if len(frames) < 2:
            raise ModelCallError(ErrorKind.BAD_REQUEST, "camera-flow: fewer than two frames in the request")
        direction, _ = classify_motion([f for _, _, f in frames])
        sid = request.metadata.get("sample_id")
        if sid is None or sid not in self.samples:
            raise ModelCallError(ErrorKind.BAD_REQUEST, f"camera-flow: unknown sample {sid!r}")
        try:
            text = Baselines.of(self.suite).constant_answer(self.samples[sid], direction)
        except ConfigError as e:
            raise ModelCallError(ErrorKind.UNSUPPORTED, f"camera-flow: {e}") from e
        return Response(text=text, latency_s=time.perf_counter() - t0, finish_reason="stop",
                        model_version="camera-flow", cost_usd=0.0)
