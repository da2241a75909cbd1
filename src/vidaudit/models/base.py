"""The adapter protocol: a model takes a ``Request`` and returns a ``Response`` or raises ``ModelCallError``.

Adapters never retry (the executor owns the one retry layer) and never resample frames: they send
exactly the parts of the request, in order.

A *composite* model (``CompositeAdapter``) is a model made of several calls per sample: a pipeline
(extract -> retrieve -> answer) or an answer followed by a judge. It has no ``generate``; the executor
calls ``run(request, call)`` and the composite makes each of its calls through ``call(stage, adapter,
sub_request)`` -- never by calling a sub-adapter itself -- so that every call is stored as a stage call,
cached by content and never repeated on retry or resume (see ``vidaudit.run.stage_calls``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol, runtime_checkable

from vidaudit.core.types import ErrorKind, ModelSpec, Request, Response, Usage


@dataclass(frozen=True)
class Capabilities:
    native_video: bool = False
    images: bool = True
    max_images: int | None = None
    max_request_bytes: int | None = None
    default_native_fps: float | None = None
    #: The highest sampling rate the backend accepts for native video (Gemini: 24); None: no limit.
    max_native_fps: float | None = None
    concurrency: int = 4
    batch_size: int = 1
    local: bool = False  # no network, no cost
    synthetic: bool = False  # answers without a model (baselines): no tokens to estimate or budget


def native_fps_problem(caps: Capabilities, fps: float, label: str, condition_id: str = "") -> str | None:
    """Why a backend cannot sample native video at ``fps`` (over ``max_native_fps``), or None.

    ``fps`` is the rate the request asks for: the condition's K, or the file's own rate for ``native@all``.
    The planner's ``check_servable`` and the adapters' own ``check_native_fps`` both use it.
    """
    limit = caps.max_native_fps
    if limit is None or 0 < fps <= limit:
        return None
    where = f" (condition {condition_id})" if condition_id else ""
    return (
        f"{label} samples native video at most at {limit:g} fps, but {fps:g} fps is asked{where}; "
        f"use native@K with K <= {limit:g}, or frames@K to send the frames as images"
    )


class ModelCallError(Exception):
    """A classified failure of one call; ``message`` must never contain a secret."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status_code: int | None = None,
        retry_after: float | None = None,
        response: Response | None = None,
    ) -> None:
        super().__init__(f"{kind.value}: {message}")
        self.kind = kind
        self.message = message
        self.status_code = status_code
        self.retry_after = retry_after
        #: what came back with a failure that was still paid for (TRUNCATED: usage, cost, finish reason)
        self.response = response


#: What kind of answerer a provider is; reports treat baselines apart from models by this, never by name.
ROLES = ("model", "oracle", "chance", "constant", "observer", "reference", "human")


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


# --------------------------------------------------------------------------- composite models


class StageInterrupted(Exception):
    """The run is stopping, so a composite's stage call was not started; let it propagate out of ``run``."""


StageCall = Callable[[str, ModelAdapter, Request], Awaitable[Response]]
"""``await call(stage, adapter, request) -> Response``: supplied by the executor to a composite's ``run``.

Returns the stored response of an identical earlier call (same stage name, sub-adapter spec and
sub-request content) without calling, else calls ``adapter.generate(request)``, stores the call the
moment it ends and returns its response; a failure is stored and re-raised unchanged
(``ModelCallError``), so that the composite's trial attempt fails and the retry layer decides.
"""


@runtime_checkable
class CompositeAdapter(Protocol):
    """A model made of several calls per sample; mark it with ``composite = True``.

    ``spec`` is the trial's model and must name everything that changes the result (its stage models
    and their settings, its prompts' version): the trial id hashes it, and an ok trial is never re-run.
    ``capabilities.concurrency`` bounds how many samples run at once (each sub-adapter's own
    ``capabilities.concurrency`` bounds its calls); ``batch_size`` must be 1. ``run`` may call any
    number of stages, sequentially or concurrently, must let ``ModelCallError`` (and
    ``StageInterrupted``) propagate unless it deliberately handles them, and builds its final
    ``Response`` -- by default with ``combine_stages``: usage and cost are the sums of its stages'.
    ``aclose`` closes the sub-adapters the composite owns.
    """

    composite: ClassVar[Literal[True]]
    spec: ModelSpec
    capabilities: Capabilities

    async def run(self, request: Request, call: StageCall) -> Response: ...

    async def aclose(self) -> None: ...


AnyAdapter = ModelAdapter | CompositeAdapter


def is_composite(adapter: object) -> bool:
    """True for an adapter marked ``composite = True`` that has a ``run`` method."""
    return getattr(adapter, "composite", False) is True and callable(getattr(adapter, "run", None))


def combine_stages(
    text: str,
    stages: Sequence[Response],
    *,
    finish_reason: str | None = None,
    model_version: str | None = None,
    cost_usd: float | None | Literal["sum"] = "sum",
    latency_s: float | None = None,
) -> Response:
    """A composite's final response: usage = sum of the stages' usage, cost = sum of their costs.

    The summed cost is None (unknown) if any stage reported none. ``latency_s`` defaults to the sum
    of the stages' latencies (pass the wall time for stages run concurrently). ``finish_reason`` and
    ``model_version`` default to the last stage's.
    """
    usage = Usage()
    for r in stages:
        usage = usage + r.usage
    if cost_usd == "sum":
        costs = [r.cost_usd for r in stages]
        cost_usd = None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None))
    last = stages[-1] if stages else None
    if last is not None:
        finish_reason = last.finish_reason if finish_reason is None else finish_reason
        model_version = last.model_version if model_version is None else model_version
    return Response(
        text=text,
        usage=usage,
        latency_s=sum(r.latency_s for r in stages) if latency_s is None else latency_s,
        finish_reason=finish_reason,
        model_version=model_version,
        cost_usd=cost_usd,
    )
