"""Blind references as built-in models: what a score means against a system that cannot see the video.

- ``question-only:SPEC``: the model SPEC sent the request's text only -- no video, no frames, no
  timestamp lines, no "the images above" preamble. With SPEC a fixed text model it is the paper's
  question-only reference (Llama-3.1-70B-Instruct there); with SPEC the model under test, "the same
  model with no video".
- ``caption-only:[captioner=SPEC2,]SPEC``: a composite of two stage calls: the captioner (default:
  SPEC) gets the condition's visual input and ``CAPTION_PROMPT`` (never the question, so one caption
  per video, cached by content across its questions), then SPEC gets the caption and the question
  text only.

The single centre frame is the condition ``frames#1`` (the frame on screen at half the duration),
not a wrapper. Each class has ``role = "reference"``: the faithful report lists their runs in its
blind-references table (with the faithful suite's own ``majority``, ``suites/faithful/majority.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec, Request, Response, Sample, TextPart
from vidaudit.models.base import StageCall, combine_stages, request_options
from vidaudit.models.factory import make_adapter

_TIMESTAMP = re.compile(r"^t=\d+(\.\d+)?s$")
_PREAMBLE = re.compile(r"^The images above are frames of one video[^\n]*\n", re.M)
CAPTION_PROMPT = (
    "Describe this video in detail: every object you see (colour, shape, any number or label on "
    "it), where it is, and everything that happens, in the order it happens, with times."
)


def _inner_spec(spec: ModelSpec, what: str) -> ModelSpec:
    rest = spec.name + (f"@{spec.base_url}" if spec.base_url else "")
    if not rest:
        raise ConfigError(f"{what} wraps a model: write {what}:PROVIDER:MODEL, e.g. {what}:openai:gpt-4o")
    inner = ModelSpec.parse(rest).model_copy(update={"settings": spec.settings})
    if inner.provider in ("question-only", "caption-only", "object-centric"):
        raise ConfigError(f"{spec.label}: {what} cannot wrap {inner.provider}")
    return inner


def text_only(request: Request) -> Request:
    """The request without its visual parts (and the text that only describes them)."""
    parts = tuple(
        TextPart(_PREAMBLE.sub("", p.text))
        for p in request.parts
        if isinstance(p, TextPart) and not _TIMESTAMP.match(p.text.strip())
    )
    return replace(request, parts=tuple(p for p in parts if p.text))


class QuestionOnlyAdapter:
    """SPEC sent the text of the request only."""

    needs_samples = True
    needs_suite = True
    role = "reference"

    def __init__(
        self,
        spec: ModelSpec,
        *,
        samples: Mapping[str, Sample] | None = None,
        suite: Suite | None = None,
        **options: object,
    ) -> None:
        self.spec = spec
        self.inner = make_adapter(_inner_spec(spec, "question-only"), samples=samples, suite=suite, options=options)
        self.capabilities = replace(self.inner.capabilities, native_video=True, max_images=None)

    def request_options(self) -> dict[str, object]:
        return request_options(self.inner)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def generate(self, request: Request) -> Response:
        return await self.inner.generate(text_only(request))


class CaptionOnlyAdapter:
    """A caption of the video (the captioner's stage), then SPEC on the caption and the question text."""

    composite = True
    needs_samples = True
    needs_suite = True
    role = "reference"

    def __init__(
        self, spec: ModelSpec, *, samples: Mapping[str, Sample] | None = None, suite: Suite | None = None, **_: object
    ) -> None:
        self.spec = spec
        m = re.match(r"captioner=([^,]+),(.+)$", spec.name + (f"@{spec.base_url}" if spec.base_url else ""))
        answerer = (
            _inner_spec(spec, "caption-only")
            if m is None
            else _inner_spec(ModelSpec.parse(f"x:{m.group(2)}", **spec.settings.model_dump()), "caption-only")
        )
        captioner = (
            answerer
            if m is None
            else _inner_spec(ModelSpec.parse(f"x:{m.group(1)}", **spec.settings.model_dump()), "caption-only")
        )
        self.answerer = make_adapter(answerer, samples=samples, suite=suite)
        self.captioner = (
            self.answerer if captioner == answerer else make_adapter(captioner, samples=samples, suite=suite)
        )
        self.capabilities = replace(self.captioner.capabilities, batch_size=1)

    async def aclose(self) -> None:
        await self.answerer.aclose()
        if self.captioner is not self.answerer:
            await self.captioner.aclose()

    async def run(self, request: Request, call: StageCall) -> Response:
        visual = tuple(p for p in request.parts if not isinstance(p, TextPart) or _TIMESTAMP.match(p.text.strip()))
        cap_req = Request(
            trial_id=request.trial_id,
            parts=(*visual, TextPart(CAPTION_PROMPT)),
            settings=request.settings,
            metadata={"stage": "caption"},
        )
        cap = await call("caption", self.captioner, cap_req)
        question = text_only(request)
        ans_req = replace(
            question, parts=(TextPart(f"A description of the video:\n{cap.text.strip()}\n"), *question.parts)
        )
        ans = await call("answer", self.answerer, ans_req)
        return combine_stages(ans.text, [cap, ans])
