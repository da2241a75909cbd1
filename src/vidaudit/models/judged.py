"""A model whose answers a judge reads: ``vidaudit run ... --judge SPEC``.

Some answers cannot be scored by a parser (a free description, a one-sentence summary, "is anything
odd in this video?"): the suite asks a judge model instead, with a prompt of its own
(``Suite.judge_prompt``). The run wraps every model in ``JudgedAdapter``, a composite of two stage
calls per trial -- ``answer`` (the model, with exactly the request it would get alone) and ``judge``
(a text-only request to the judge) -- so that judge calls are stored, cached by content, costed and
resumed like any other call, and a failed judge call fails the trial's attempt (retried; the answer
is a cache hit). The final response is the model's own answer; the score stage reads the judge's
verdict from the stored ``judge`` stage and hands it to ``Suite.score`` as ``ScoreInput.judgement``.

The judge's identity (spec and settings) and the suite's ``judge_version`` are part of every judged
trial's id (``request_options``), so a different judge or judge prompt makes new trials rather than
mixing verdicts. Composite models cannot be judged this way (a stage calls plain adapters only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ErrorKind, ModelSpec, Request, Response, Sample, TextPart
from vidaudit.models.base import ModelCallError, StageCall, combine_stages, is_composite, request_options

ANSWER_STAGE = "answer"
JUDGE_STAGE = "judge"


class JudgedAdapter:
    """``answer`` by the model, then -- where the suite asks for one -- a ``judge`` call on that answer."""

    composite: ClassVar[Literal[True]] = True

    def __init__(self, inner: Any, judge: Any, *, suite: Suite, samples: Mapping[str, Sample]) -> None:
        if is_composite(inner):
            raise ConfigError(
                f"--judge cannot wrap the composite model {inner.spec.label}: its stages already "
                "call plain adapters; judge its answers with a separate run"
            )
        if is_composite(judge):
            raise ConfigError(f"the judge {judge.spec.label} is a composite model; a judge must be a plain model")
        self.inner = inner
        self.judge = judge
        self.suite = suite
        self.samples = samples
        self.spec: ModelSpec = inner.spec
        self.capabilities = inner.capabilities
        self.role = getattr(inner, "role", "model")

    def request_options(self) -> dict[str, object]:
        return {
            **request_options(self.inner),
            "judge": {
                "spec": self.judge.spec.model_dump(mode="json"),
                "options": request_options(self.judge),
                "prompt_version": self.suite.judge_version,
            },
        }

    def _sample(self, request: Request) -> Sample:
        sid = request.metadata.get("sample_id")
        if sid is None or sid not in self.samples:
            raise ModelCallError(ErrorKind.BAD_REQUEST, f"judged {self.spec.label}: unknown sample {sid!r}")
        return self.samples[sid]

    async def run(self, request: Request, call: StageCall) -> Response:
        answer = await call(ANSWER_STAGE, self.inner, request)
        prompt = self.suite.judge_prompt(self._sample(request), answer.text)
        if prompt is None:
            return answer
        jreq = Request(
            trial_id=request.trial_id,
            parts=(TextPart(prompt.text),),
            system=prompt.system,
            settings=self.judge.spec.settings,
            metadata={"sample_id": request.metadata.get("sample_id"), "judging": True},
        )
        verdict = await call(JUDGE_STAGE, self.judge, jreq)
        out = combine_stages(
            answer.text, [answer, verdict], finish_reason=answer.finish_reason, model_version=answer.model_version
        )
        return out.model_copy(update={"frames_sent": answer.frames_sent, "frames_estimated": answer.frames_estimated})

    async def aclose(self) -> None:
        await self.inner.aclose()
