"""Baselines that need no weights or keys: the oracle (pipeline self-check), chance and constant.

They answer in the same text format as a VLM so that the same parser and scorer judge them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import rng_from
from vidaudit.core.types import ModelSpec, Request, Response, Sample
from vidaudit.models.base import Capabilities, ModelCallError
from vidaudit.models.ledger import ledger_text
from vidaudit.core.types import ErrorKind

_LOCAL = Capabilities(native_video=True, images=True, max_images=None, default_native_fps=None, concurrency=8,
                      local=True)


class _Local:
    capabilities = _LOCAL

    def __init__(self, spec: ModelSpec, **_: object) -> None:
        self.spec = spec

    async def aclose(self) -> None:
        return None

    def _respond(self, text: str, t0: float) -> Response:
        return Response(text=text, latency_s=time.perf_counter() - t0, finish_reason="stop",
                        model_version=self.spec.label, cost_usd=0.0)


class OracleAdapter(_Local):
    """Answers from the trace: 100% by construction; a failure means the pipeline is broken."""

    needs_samples = True

    def __init__(self, spec: ModelSpec, *, samples: Mapping[str, Sample] | None = None, **kw: object) -> None:
        super().__init__(spec)
        if samples is None:
            raise ConfigError("the oracle needs the run's samples (it reads their traces)")
        self.samples = samples

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        sid = request.metadata.get("sample_id")
        if sid not in self.samples:
            raise ModelCallError(ErrorKind.BAD_REQUEST, f"oracle: unknown sample {sid!r}")
        s = self.samples[sid]
        events = [(e.t, e.state_after) for e in s.trace.events]
        return self._respond(ledger_text(s.params.get("domain"), events, int(s.answer)), t0)


class ChanceAdapter(_Local):
    """A uniform count over [low, high] (default the grid's 0..12), seeded per trial."""

    def __init__(self, spec: ModelSpec, **kw: object) -> None:
        super().__init__(spec)
        lo, _, hi = (spec.name or "0-12").partition("-")
        try:
            self.low, self.high = int(lo), int(hi or lo)
        except ValueError as e:
            raise ConfigError(f"chance takes a range like chance:0-12, got {spec.label!r}") from e
        if self.low > self.high:
            raise ConfigError(f"chance range {self.low}-{self.high} is empty")

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        k = int(rng_from("chance", request.trial_id).integers(self.low, self.high + 1))
        return self._respond(f"\\boxed{{{k}}}", t0)


class ConstantAdapter(_Local):
    """Always answers K (``constant:K``): the majority-class style baseline."""

    def __init__(self, spec: ModelSpec, **kw: object) -> None:
        super().__init__(spec)
        try:
            self.k = int(spec.name)
        except ValueError as e:
            raise ConfigError(f"constant needs an integer, e.g. constant:3, got {spec.label!r}") from e

    async def generate(self, request: Request) -> Response:
        return self._respond(f"\\boxed{{{self.k}}}", time.perf_counter())
