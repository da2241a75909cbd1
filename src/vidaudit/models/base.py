"""The adapter protocol: a model takes a ``Request`` and returns a ``Response`` or raises ``ModelCallError``.

Adapters never retry (the executor owns the one retry layer) and never resample frames: they send
exactly the parts of the request, in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from vidaudit.core.types import ErrorKind, ModelSpec, Request, Response


@dataclass(frozen=True)
class Capabilities:
    native_video: bool = False
    images: bool = True
    max_images: int | None = None
    max_request_bytes: int | None = None
    default_native_fps: float | None = None
    concurrency: int = 4
    batch_size: int = 1
    local: bool = False   # no network, no cost


class ModelCallError(Exception):
    """A classified failure of one call; ``message`` must never contain a secret."""

    def __init__(self, kind: ErrorKind, message: str, *, status_code: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{kind.value}: {message}")
        self.kind = kind
        self.message = message
        self.status_code = status_code
        self.retry_after = retry_after


@runtime_checkable
class ModelAdapter(Protocol):
    spec: ModelSpec
    capabilities: Capabilities

    async def generate(self, request: Request) -> Response: ...

    async def aclose(self) -> None: ...
