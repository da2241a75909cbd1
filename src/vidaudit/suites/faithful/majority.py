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

from vidaudit.sdk import Baselines, ConfigError, ModelSpec, Request, Response, Sample, SampleAnswerer, Suite


class MajorityAdapter(SampleAnswerer):
    """The majority gold label per level of the run's samples (tie: Yes), in the suite's words for that value
    (``Baselines.constant_answer``); ``SampleAnswerer`` finds the request's sample and stamps the free answer."""

    role = "reference"
    version = "majority"

    def __init__(
        self, spec: ModelSpec, *, samples: Mapping[str, Sample] | None = None, suite: Suite | None = None, **_: object
    ) -> None:
        if spec.name:
            raise ConfigError(f"majority takes no option, got {spec.label!r}")
        super().__init__(spec, samples=dict(samples or {}), suite=suite)
        votes: dict[str, Counter] = {}
        for s in self.samples.values():
            votes.setdefault(str(s.params.get("role", "item")), Counter())[str(s.answer)] += 1
        self.labels = {level: max(sorted(c), key=lambda k: (c[k], k == "Yes")) for level, c in votes.items()}

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        s = self.sample(request)
        label = self.labels[str(s.params.get("role", "item"))]
        return self.respond(Baselines.of(self.suite).constant_answer(s, label), t0)
