"""``majority``: the faithful suite's label-prior reference, a built-in model that belongs to that suite.

Per level (target / sub-question), the majority gold label of the run's samples (a tie goes to Yes),
recomputed on the data loaded. It answers from the labels' prior, like the report's computed majority
row, but as trials (so it runs, stores and scores like any model); ``role = "reference"`` puts it in
the blind-references table. Registered through the suite package's ``PROVIDERS``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping

from vidaudit.sdk import Capabilities, ConfigError, ErrorKind, ModelCallError, ModelSpec, Request, Response, Sample


class MajorityAdapter:
    """The majority gold label per level of the run's samples (tie: Yes)."""

    capabilities = Capabilities(native_video=True, images=True, concurrency=8, local=True, synthetic=True)
    needs_samples = True
    role = "reference"

    def __init__(self, spec: ModelSpec, *, samples: Mapping[str, Sample] | None = None, **_: object) -> None:
        if spec.name:
            raise ConfigError(f"majority takes no option, got {spec.label!r}")
        self.spec = spec
        self.samples = dict(samples or {})
        votes: dict[str, Counter] = {}
        for s in self.samples.values():
            votes.setdefault(str(s.params.get("role", "item")), Counter())[str(s.answer)] += 1
        self.labels = {level: max(sorted(c), key=lambda k: (c[k], k == "Yes")) for level, c in votes.items()}

    async def aclose(self) -> None:
        return None

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        sid = request.metadata.get("sample_id")
        s = self.samples.get(sid) if sid is not None else None
        if s is None:
            raise ModelCallError(
                ErrorKind.BAD_REQUEST, f"majority: unknown sample {request.metadata.get('sample_id')!r}"
            )
        label = self.labels[str(s.params.get("role", "item"))]
        return Response(
            text=f"Answer: {label}",
            latency_s=time.perf_counter() - t0,
            finish_reason="stop",
            model_version="majority",
            cost_usd=0.0,
        )
