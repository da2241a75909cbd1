"""The ideal observer: the suite's pixel observer run on exactly the frames (or video) a condition supplies.

It measures what the input makes recoverable: with every frame it is near-perfect; at 1 fps its
failures are those the input alone explains. It reads only pixels and the request's public metadata,
never the answer, and answers in the suite's format.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from vidaudit.core.contract.roles import Baselines
from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import ErrorKind, ImagePart, ModelSpec, Request, Response, VideoPart
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.video.decode import iter_selected


def observed_frames(request: Request, who: str, *, half: bool = True) -> list[tuple[int, float, np.ndarray]]:
    """(source frame index, time, RGB) of every frame a request shows, in request order: its images, and
    the listed frames of its video parts (decoded at half size unless ``half`` is False). What a pixel
    observer may look at."""
    frames: list[tuple[int, float, np.ndarray]] = []
    for part in request.parts:
        if isinstance(part, ImagePart):
            frames.append((part.frame_index, part.t, part.image))
        elif isinstance(part, VideoPart):
            if not part.frame_indices:
                raise ModelCallError(ErrorKind.BAD_REQUEST, f"{who}: video part lists no frames")
            try:
                when = dict(zip(part.frame_indices, part.timestamps, strict=True))
                frames.extend(
                    (i, when[i], f)
                    for i, f in iter_selected(part.path, part.frame_indices, half=half, stream=part.stream)
                )
            except DataError as e:
                raise ModelCallError(ErrorKind.BAD_REQUEST, str(e)) from e
    return frames


class IdealObserverAdapter:
    capabilities = Capabilities(
        native_video=True, images=True, default_native_fps=None, concurrency=2, local=True, synthetic=True
    )
    needs_suite = True
    role = "observer"

    def __init__(
        self, spec: ModelSpec, *, suite: Suite | None = None, full_size: bool | str = False, **_: object
    ) -> None:
        if suite is None:
            raise ConfigError("the ideal observer needs the run's suite (it runs the suite's pixel observer)")
        self.spec = spec
        self.suite = suite
        if isinstance(full_size, str):
            if full_size.lower() not in ("true", "false", "1", "0"):
                raise ConfigError(f"ideal-observer.full_size must be true or false, got {full_size!r}")
            full_size = full_size.lower() in ("true", "1")
        #: decode native video parts at full size (default: half size, faster; thin lines may fade)
        self.full_size = bool(full_size)

    def request_options(self) -> dict[str, object]:
        return {"full_size": True} if self.full_size else {}

    async def aclose(self) -> None:
        return None

    async def generate(self, request: Request) -> Response:
        return await asyncio.to_thread(self._answer, request)

    def _answer(self, request: Request) -> Response:
        t0 = time.perf_counter()
        frames = observed_frames(request, "ideal observer", half=not self.full_size)
        if not frames:
            raise ModelCallError(ErrorKind.BAD_REQUEST, "ideal observer: no frames in the request")
        try:
            text = Baselines.of(self.suite).observe(frames, request.metadata)
        except ConfigError as e:
            raise ModelCallError(ErrorKind.UNSUPPORTED, f"ideal observer: {e}") from e
        return Response.computed(text, t0, "pixel-observer")
