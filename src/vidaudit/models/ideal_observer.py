"""The ideal observer: the pixel detector run on exactly the frames (or video) a condition supplies.

It measures what the input makes recoverable: with every frame it is near-perfect; at 1 fps its
failures are those the input alone explains. It reads the domain from the request's public
metadata, never the answer, and answers in a VLM's format (ledger with timestamps, ``\\boxed{}``).
"""

from __future__ import annotations

import asyncio
import time

from vidaudit.core.errors import DataError
from vidaudit.core.types import ErrorKind, ImagePart, ModelSpec, Request, Response, VideoPart
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.models.ledger import ledger_text
from vidaudit.suites.counting.detector import detect_events
from vidaudit.video.io import iter_selected


class IdealObserverAdapter:
    capabilities = Capabilities(native_video=True, images=True, default_native_fps=None, concurrency=2, local=True)

    def __init__(self, spec: ModelSpec, **_: object) -> None:
        self.spec = spec

    async def aclose(self) -> None:
        return None

    async def generate(self, request: Request) -> Response:
        return await asyncio.to_thread(self._answer, request)

    def _answer(self, request: Request) -> Response:
        t0 = time.perf_counter()
        domain = request.metadata.get("domain")
        if not domain:
            raise ModelCallError(ErrorKind.BAD_REQUEST, "ideal observer: the request carries no domain metadata")
        frames = []
        for part in request.parts:
            if isinstance(part, ImagePart):
                frames.append((part.frame_index, part.t, part.image))
            elif isinstance(part, VideoPart):
                if not part.frame_indices:
                    raise ModelCallError(ErrorKind.BAD_REQUEST, "ideal observer: video part lists no frames")
                try:
                    when = dict(zip(part.frame_indices, part.timestamps, strict=True))
                    frames.extend((i, when[i], f) for i, f in iter_selected(part.path, part.frame_indices, half=True))
                except DataError as e:
                    raise ModelCallError(ErrorKind.BAD_REQUEST, str(e)) from e
        if not frames:
            raise ModelCallError(ErrorKind.BAD_REQUEST, "ideal observer: no frames in the request")
        found = detect_events(domain, frames)
        text = ledger_text(domain, [(d.t, d.label) for d in found])
        return Response(text=text, latency_s=time.perf_counter() - t0, finish_reason="stop",
                        model_version="pixel-detector", cost_usd=0.0)
