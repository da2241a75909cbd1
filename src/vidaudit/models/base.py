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
    synthetic: bool = False  # answers without a model (baselines): no tokens to estimate or budget


class ModelCallError(Exception):
    """A classified failure of one call; ``message`` must never contain a secret."""

    def __init__(self, kind: ErrorKind, message: str, *, status_code: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{kind.value}: {message}")
        self.kind = kind
        self.message = message
        self.status_code = status_code
        self.retry_after = retry_after


#: What kind of answerer a provider is; reports treat baselines apart from models by this, never by name.
ROLES = ("model", "oracle", "chance", "constant", "observer")


def role_of(adapter_or_class: object) -> str:
    """``role`` class attribute of an adapter (``"model"`` unless it is a baseline)."""
    return str(getattr(adapter_or_class, "role", "model"))


def request_options(adapter: object) -> dict[str, object]:
    """The adapter options that change what is sent (JPEG quality, image detail, ...): part of the trial id."""
    fn = getattr(adapter, "request_options", None)
    return dict(fn()) if callable(fn) else {}


@runtime_checkable
class ModelAdapter(Protocol):
    """``generate`` one request. Optional: a ``role`` class attribute (baselines), ``needs_samples`` /
    ``needs_suite`` (the factory passes the run's samples / suite), and ``request_options()`` naming
    every option that changes the request bytes (hashed into the trial id)."""

    spec: ModelSpec
    capabilities: Capabilities

    async def generate(self, request: Request) -> Response: ...

    async def aclose(self) -> None: ...
