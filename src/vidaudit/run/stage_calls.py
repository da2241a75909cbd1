"""Composite models' stage calls: content keys, stored records, and the ``StageCall`` the executor supplies.

A composite model (``vidaudit.models.base.CompositeAdapter``) makes several calls per sample, each
through ``await call(stage, adapter, request)``. Each such call:

- gets a content key: the sha256 of the canonical JSON (``surrogatepass`` UTF-8) of the stage
  name, the sub-adapter's ``ModelSpec`` (with its generation settings) and a fingerprint of the
  sub-request -- its system text, settings and metadata, and every part in order: text verbatim,
  an image as the sha256 of its pixel bytes with its dtype, shape, frame index and time, a video as
  its sha256 (its path when it has none), sampling fps, frame indices and timestamps. The request's
  ``trial_id`` is not part of it: two trials that send the same sub-request share the call. A
  sub-adapter whose answer depends on anything else (a seed drawn from the trial id) must get it
  through the request (``settings.seed`` or ``metadata``).
- is looked up in the store: an ok stage call with that key -- made by any trial, in any session --
  is returned without calling (a *cache hit*). Identical calls in flight at the same moment are made
  once: the second waits for the first and then looks again.
- otherwise calls ``adapter.generate(request)`` under the sub-adapter's own concurrency limit, with
  the same classification as a plain call (``ModelCallError`` kinds; anything else is unclassified),
  stores the call, ok or failed, the moment it ends, and re-raises a failure unchanged so that the
  trial's attempt fails and the one retry layer decides. On a retry or a resume, the stages that
  already succeeded are cache hits, never calls.
- starts no new call once the run is stopping (QUOTA, AUTH, budget, a bug): it raises
  ``StageInterrupted`` instead; the trial's attempt is then not stored at all (nothing of it failed)
  and the trial is run again on resume, its stored stages being hits.

What invalidates an entry: nothing. A changed prompt, sub-model, setting or input is a different key.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from vidaudit.core.types import ImagePart, ModelSpec, Request, Response, Status, TextPart, VideoPart
from vidaudit.models.base import ModelCallError, StageCall, StageInterrupted, is_composite
from vidaudit.run.retry import Clock, status_for
from vidaudit.run.store.records import StageCallRecord, StageRef

if TYPE_CHECKING:
    from vidaudit.run.store.writer import RunStore

__all__ = ["StageContext", "StageInterrupted", "StageRunner", "call_key", "request_fingerprint"]


# --------------------------------------------------------------------------- content keys


def _image_fingerprint(p: ImagePart) -> dict[str, Any]:
    arr = np.ascontiguousarray(p.image)
    return {
        "image": hashlib.sha256(arr.data).hexdigest(),
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "frame_index": int(p.frame_index),
        "t": float(p.t),
    }


def _video_fingerprint(p: VideoPart) -> dict[str, Any]:
    out: dict[str, Any] = {
        "video": p.sha256,
        "fps": float(p.fps),
        "frame_indices": [int(i) for i in p.frame_indices],
        "timestamps": [float(t) for t in p.timestamps],
    }
    if p.sha256 is None:
        out["path"] = p.path
    return out


def request_fingerprint(request: Request) -> dict[str, Any]:
    """What a sub-request sends, as JSON: text verbatim, pixels by sha256 (the trial id left out)."""
    parts: list[dict[str, Any]] = []
    for p in request.parts:
        if isinstance(p, TextPart):
            parts.append({"text": p.text})
        elif isinstance(p, ImagePart):
            parts.append(_image_fingerprint(p))
        elif isinstance(p, VideoPart):
            parts.append(_video_fingerprint(p))
        else:
            raise TypeError(f"cannot fingerprint request part {type(p).__name__}")
    fp = {
        "system": request.system,
        "settings": request.settings.model_dump(mode="json"),
        "parts": parts,
        "metadata": request.metadata,
    }
    _key_bytes(fp)  # metadata must be JSON: fail here, naming it, not later in the store
    return fp


def _key_bytes(obj: Any) -> bytes:
    """Canonical JSON as UTF-8, lone surrogates as their own 3-byte sequences (``surrogatepass``).

    Any str hashes, and distinctly: ``"\\ud83d\\ude00"`` (two lone surrogates) is not ``"\\U0001f600"``,
    which ASCII-escaped JSON would confuse.
    """
    try:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"a stage's sub-request must be JSON-serialisable (metadata included): {e}") from e
    return text.encode("utf-8", "surrogatepass")


def call_key(stage: str, spec: ModelSpec, fingerprint: dict[str, Any]) -> str:
    """sha256 of (stage name, sub-adapter spec, sub-request fingerprint)."""
    material = {"stage": stage, "model": spec.model_dump(mode="json"), "request": fingerprint}
    return hashlib.sha256(_key_bytes(material)).hexdigest()


# --------------------------------------------------------------------------- the executor's StageCall


@dataclass
class StageContext:
    """One trial attempt of a composite: what its stages did (filled in by ``StageRunner``)."""

    trial_id: str
    trial_attempt: int
    lane: Any = None  # the executor's own bookkeeping
    reservation: Any = None
    refs: list[StageRef] = field(default_factory=list)
    calls: int = 0
    hits: int = 0
    spent_tokens: int = 0
    spent_cost_usd: float = 0.0
    unknown_cost: bool = False  # an ok stage call reported no cost
    interrupted: str | None = None  # why a stage call was refused (the run is stopping)
    store_error: BaseException | None = None
    failed_stage: dict[int, str] = field(default_factory=dict)  # id(exception raised) -> stage name


MayStart = Callable[[StageContext], str | None]
Ended = Callable[[StageContext, str, Response | None, BaseException | None], None]


class StageRunner:
    """Makes and caches stage calls for one ``run_trials`` session.

    ``may_start(ctx)`` returns why no new call may start (None: go ahead); ``on_end(ctx, stage,
    response, error)`` runs synchronously the moment a call ends (spend the budget, react to a stop)
    before the call is stored. ``semaphores`` maps ``id(adapter)`` to its concurrency gate, shared with the
    executor's lanes so that an adapter used both alone and as a stage keeps one limit.
    """

    def __init__(
        self,
        store: RunStore,
        clock: Clock,
        *,
        may_start: MayStart,
        on_end: Ended,
        semaphores: dict[int, asyncio.Semaphore],
    ) -> None:
        self.store = store
        self.clock = clock
        self.may_start = may_start
        self.on_end = on_end
        self.semaphores = semaphores
        self._inflight: dict[str, asyncio.Event] = {}

    def caller(self, ctx: StageContext) -> StageCall:
        async def call(stage: str, adapter: Any, request: Request) -> Response:
            return await self.call(ctx, stage, adapter, request)

        return call

    def _semaphore(self, adapter: Any) -> asyncio.Semaphore:
        sem = self.semaphores.get(id(adapter))
        if sem is None:
            sem = self.semaphores[id(adapter)] = asyncio.Semaphore(max(1, adapter.capabilities.concurrency))
        return sem

    async def call(self, ctx: StageContext, stage: str, adapter: Any, request: Request) -> Response:
        if not isinstance(stage, str) or not stage:
            raise TypeError(f"a stage needs a non-empty name, got {stage!r}")
        if is_composite(adapter) or not callable(getattr(adapter, "generate", None)):
            raise TypeError(
                f"stage {stage!r}: {type(adapter).__name__} is not a plain ModelAdapter with "
                f"generate(); a composite's stages call plain adapters"
            )
        if not isinstance(request, Request):
            raise TypeError(f"stage {stage!r}: expected a Request, got {type(request).__name__}")
        if request.images:  # hashing pixels takes a while: keep the event loop free
            fp = await asyncio.to_thread(request_fingerprint, request)
        else:
            fp = request_fingerprint(request)
        key = call_key(stage, adapter.spec, fp)
        while (busy := self._inflight.get(key)) is not None:  # the same call in flight: wait, then look
            await busy.wait()
        done = self._inflight[key] = asyncio.Event()
        try:
            hit = await asyncio.to_thread(self.store.ok_stage_call, key)
            if hit is not None:
                assert hit.response is not None
                ctx.refs.append(StageRef(stage=stage, call_key=key, status=Status.OK, cached=True))
                ctx.hits += 1
                return hit.response
            return await self._make(ctx, stage, adapter, request, fp, key)
        finally:
            del self._inflight[key]
            done.set()

    async def _make(
        self, ctx: StageContext, stage: str, adapter: Any, request: Request, fp: dict[str, Any], key: str
    ) -> Response:
        if (why := self.may_start(ctx)) is not None:
            ctx.interrupted = why
            raise StageInterrupted(f"stage {stage!r} of trial {ctx.trial_id} not started: {why}")
        async with self._semaphore(adapter):
            if (why := self.may_start(ctx)) is not None:  # the run stopped while we queued
                ctx.interrupted = why
                raise StageInterrupted(f"stage {stage!r} of trial {ctx.trial_id} not started: {why}")
            response: Response | None = None
            error: BaseException | None = None
            started = self.clock.now()
            try:
                response = await adapter.generate(request)
                if not isinstance(response, Response):
                    raise TypeError(f"adapter returned {type(response).__name__}, expected a Response")
            except asyncio.CancelledError:
                raise
            except Exception as e:
                response, error = None, e
            ended = self.clock.now()
        ctx.calls += 1
        self.on_end(ctx, stage, response, error)
        kind = error.kind if isinstance(error, ModelCallError) else None
        if error is None:
            status, message = Status.OK, None
        else:
            status = status_for(kind)
            message = (
                error.message
                if isinstance(error, ModelCallError)
                else f"adapter raised unclassified {type(error).__name__}: {error}"
            )
        rec = StageCallRecord(
            trial_id=ctx.trial_id,
            stage=stage,
            trial_attempt=ctx.trial_attempt,
            call_key=key,
            model=adapter.spec,
            request=fp,
            status=status,
            error_kind=kind,
            error_message=message,
            response=response,
            started_at=started,
            ended_at=ended,
        )
        try:
            await asyncio.to_thread(self.store.append_stage_call, rec)
        except Exception as e:
            ctx.store_error = e
            raise
        ctx.refs.append(StageRef(stage=stage, call_key=key, status=status, cached=False))
        if error is not None:
            ctx.failed_stage[id(error)] = stage
            raise error
        assert response is not None
        return response
