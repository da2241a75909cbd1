"""A_faith of ``object-centric`` specs on a faithful dataset, in process, with no run directory.

For quick controls (identity linking on vs off, chunk lengths) and their tests: every sample goes
through the real composite (``ObjectCentricAdapter.run``) with a stage-call function that keeps
the extraction of each (video, chunk) in memory, as the run store does -- so specs that share
chunking share extraction, and the numbers are what ``vidaudit run`` + ``report`` would give
(A_faith: a target counts when it and every one of its sub-questions is answered right).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path

from vidaudit.sdk import ModelAdapter, ModelSpec, Request, Response, Sample, TextPart, VideoPart, load_samples
from vidaudit.suites.faithful.framework.composite import ObjectCentricAdapter
from vidaudit.suites.faithful.world import source_video_of

_ANSWER = re.compile(r"Answer:\s*(Yes|No)\b", re.I)


@dataclass(frozen=True)
class TargetResult:
    target: str  # the target's sample id
    cluster: str  # its source video
    form: str | None  # question_form ("order", "count", ...)
    right: bool
    faithful: bool


@dataclass(frozen=True)
class FaithScore:
    spec: str
    targets: int
    faithful: int
    target_right: int
    per_target: tuple[TargetResult, ...] = ()

    @property
    def a_faith(self) -> float:
        return self.faithful / self.targets if self.targets else 0.0

    @property
    def a_target(self) -> float:
        return self.target_right / self.targets if self.targets else 0.0


class _MemoCall:
    """``StageCall`` with an in-memory cache keyed by the stage, the sub-adapter and the request's content."""

    def __init__(self) -> None:
        self.cache: dict[str, Response] = {}

    async def __call__(self, stage: str, adapter: ModelAdapter, request: Request) -> Response:
        key = json.dumps(
            [
                stage,
                adapter.spec.label,
                request.metadata,
                [p.text if isinstance(p, TextPart) else getattr(p, "frame_index", None) for p in request.parts],
            ],
            sort_keys=True,
            default=str,
        )
        if key not in self.cache:
            self.cache[key] = await adapter.generate(request)
        return self.cache[key]


def _request(data: Path, s: Sample) -> Request:
    v = s.video
    video = VideoPart(
        path=str(data / v.path),
        sha256=v.sha256,
        fps=1.0,
        duration_s=v.duration_s,
        n_frames=v.n_frames,
        source_fps=v.fps,
        stream=v.stream,
    )
    return Request(trial_id=s.sample_id, parts=(video, TextPart(f"Question: {s.question}\nAnswer Yes or No.")))


async def _answers(
    adapter: ObjectCentricAdapter, data: Path, samples: list[Sample], call: _MemoCall
) -> dict[str, bool | None]:
    out: dict[str, bool | None] = {}
    for s in samples:
        r = await adapter.run(_request(data, s), call)
        m = _ANSWER.search(r.text)
        out[s.sample_id] = None if m is None else m.group(1).lower() == "yes"
    return out


def per_target(answers: dict[str, bool | None], samples: list[Sample]) -> list[TargetResult]:
    """Each target's outcome under the answers (right; faithful = right with every sub-question right)."""
    gold = {s.sample_id: s.answer.strip().lower() == "yes" for s in samples}
    out = []
    for s in samples:
        if s.params.get("role") != "target":
            continue
        ok = answers.get(s.sample_id) == gold[s.sample_id]
        faithful = ok and all(answers.get(x) == gold[x] for x in s.params["sub_sample_ids"])
        out.append(
            TargetResult(
                s.sample_id,
                source_video_of(s.params, s.group_id),
                s.params.get("question_form"),
                ok,
                faithful,
            )
        )
    return out


def score(answers: dict[str, bool | None], samples: list[Sample]) -> tuple[int, int, int]:
    """(targets, faithful targets, right targets) of the answers."""
    res = per_target(answers, samples)
    return len(res), sum(r.faithful for r in res), sum(r.right for r in res)


def evaluate(data: str | Path, specs: list[str]) -> dict[str, FaithScore]:
    """A_faith (and A_target) of each ``object-centric:...`` spec on the dataset at ``data``."""
    data = Path(data)
    samples = load_samples(data)
    call = _MemoCall()

    async def go() -> dict[str, FaithScore]:
        res = {}
        for spec in specs:
            adapter = ObjectCentricAdapter(ModelSpec.parse(spec))
            try:
                answers = await _answers(adapter, data, samples, call)
            finally:
                await adapter.aclose()
            outs = per_target(answers, samples)
            res[spec] = FaithScore(
                spec, len(outs), sum(o.faithful for o in outs), sum(o.right for o in outs), tuple(outs)
            )
        return res

    return asyncio.run(go())
