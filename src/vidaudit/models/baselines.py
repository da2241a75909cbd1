"""Baselines that need no weights or keys: the oracle (pipeline self-check), chance and constant.

The oracle and chance answer in the suite's own answer format (its ``Baselines`` role supplies the text), and the
constant answers its text verbatim, so that the same parser and scorer judge them as any VLM. The oracle and chance read the sample named in the request's public
metadata; chance draws from a generator seeded by the trial id.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from vidaudit.core.contract.roles import Baselines
from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import rng_from
from vidaudit.core.types import ErrorKind, ModelSpec, Request, Response, Sample
from vidaudit.models.base import Capabilities, ModelCallError

_LOCAL = Capabilities(
    native_video=True, images=True, max_images=None, default_native_fps=None, concurrency=8, local=True, synthetic=True
)


class SampleAnswerer:
    """A local model that answers the request's sample in the suite's own format: the baselines below, and the
    reference models suites build on it (counting's ``simulated``, stress's ``camera-flow``). ``sample`` finds the
    sample the request's public metadata names; ``respond`` is the answer, free and instant, stamped with
    ``version`` (None: the spec's label)."""

    capabilities = _LOCAL
    needs_samples = True
    needs_suite = True
    role = "model"
    version: str | None = None

    def __init__(
        self, spec: ModelSpec, *, samples: Mapping[str, Sample] | None = None, suite: Suite | None = None, **_: object
    ) -> None:
        if suite is None:
            raise ConfigError(f"{spec.label} needs the run's suite (it answers in the suite's format)")
        self.spec = spec
        self.samples = samples or {}
        self.suite = suite

    async def aclose(self) -> None:
        return None

    def sample(self, request: Request) -> Sample:
        sid = request.metadata.get("sample_id")
        if sid is None or sid not in self.samples:
            raise ModelCallError(ErrorKind.BAD_REQUEST, f"{self.spec.label}: unknown sample {sid!r}")
        return self.samples[sid]

    def respond(self, text: str, t0: float) -> Response:
        """The answer ``text``, timed from ``t0`` (``time.perf_counter()`` when the call began)."""
        return Response.computed(text, t0, self.version or self.spec.label)


class OracleAdapter(SampleAnswerer):
    """Answers from the ground truth: 100% by construction; a failure means the pipeline is broken."""

    role = "oracle"

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        return self.respond(Baselines.of(self.suite).oracle_answer(self.sample(request)), t0)


class ChanceAdapter(SampleAnswerer):
    """A uniform draw from the suite's answer space (``chance:OPTION`` narrows it, e.g. ``chance:0-12``)."""

    role = "chance"

    def __init__(self, spec: ModelSpec, **kw: object) -> None:
        super().__init__(spec, **kw)  # type: ignore[arg-type]
        probe = next(iter(self.samples.values()), None)
        if probe is not None:  # an option the suite cannot read fails now, not mid-run
            Baselines.of(self.suite).chance_answer(probe, rng_from("chance-probe"), spec.name)

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        rng = rng_from("chance", request.trial_id)
        return self.respond(Baselines.of(self.suite).chance_answer(self.sample(request), rng, self.spec.name), t0)


class ConstantAdapter(SampleAnswerer):
    """Always the same text (``constant:TEXT``), answered verbatim: ``constant:3``, ``constant:AGREE``.

    Verbatim, so the suite's own parser decides what TEXT means, exactly as it would for a model that
    wrote it (``constant:AGREE`` and ``constant:DISAGREE`` are the two trivial sycophancy policies;
    ``constant:C`` picks option C). TEXT cannot contain ``@`` (the spec's base-url separator).
    """

    role = "constant"

    def __init__(self, spec: ModelSpec, **kw: object) -> None:
        super().__init__(spec, **kw)  # type: ignore[arg-type]
        if not spec.name:
            raise ConfigError("constant needs the text to answer, e.g. constant:3 or constant:AGREE")

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        self.sample(request)
        return self.respond(self.spec.name, t0)
