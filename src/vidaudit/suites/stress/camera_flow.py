"""``camera-flow``: the physical-limit reference for camera-motion questions (a local observer).

It reads only the frames it is sent (images, or the listed frames of a video part) and classifies the
camera's motion with :func:`vidaudit.video.motion.classify_motion`. The answer text comes from the suite's
``constant_answer``, so the suite's own strict parser scores it like any model.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from vidaudit.sdk import (
    Baselines,
    Capabilities,
    ConfigError,
    ErrorKind,
    ModelCallError,
    Request,
    Response,
    SampleAnswerer,
    classify_motion,
    observed_frames,
)


class CameraFlowAdapter(SampleAnswerer):
    """The ``camera-flow`` provider: role ``observer``; answers in the suite's format via ``constant_answer``."""

    capabilities = Capabilities(
        native_video=True, images=True, default_native_fps=None, concurrency=2, local=True, synthetic=True
    )
    role = "observer"
    version = "camera-flow"

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
        sample = self.sample(request)
        try:
            text = Baselines.of(self.suite).constant_answer(sample, direction)
        except ConfigError as e:
            raise ModelCallError(ErrorKind.UNSUPPORTED, f"camera-flow: {e}") from e
        return self.respond(text, t0)
