"""Free-text human answers through the run's judge (``vidaudit run --judge SPEC``).

``judge_for_run(run_dir)`` returns a callable ``(suite, sample, text) -> TrialScore`` when the run was
made with a judge and its suite judges (``Suite.judge_prompt``), else None (answers the suite's parser
cannot read are then counted as "not judged"). An answer the suite does not send to a judge
(``judge_prompt`` is None) is scored by the suite's parser alone.

The judge sees exactly what it sees for a model's answer (the suite's judge prompt). Its verdicts are
kept in ``RUN/human_judgements.jsonl``, keyed by the sha256 of the judge's spec and the prompt, so a
re-import never calls the judge again for the same answer; a failed judge call is an error naming the
item, and nothing is written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from vidaudit.core.contract.records import TrialScore
from vidaudit.core.contract.suite import ScoreInput, Suite
from vidaudit.core.errors import ConfigError
from vidaudit.core.fileio import write_jsonl_atomic
from vidaudit.core.hashing import sha256_json
from vidaudit.core.registry import get_suite
from vidaudit.core.types import ModelSpec, Request, Sample, TextPart
from vidaudit.models.factory import make_adapter
from vidaudit.run.runconfig import RunConfig

Judge = Callable[[Suite, Sample, str], TrialScore]
VERDICTS = "human_judgements.jsonl"


def judge_for_run(run_dir: Path) -> Judge | None:
    """The run's judge of free-text answers; None when the run has none (or its suite judges nothing)."""
    rc = RunConfig.load(run_dir)
    stored = rc.options.get("judge")
    if not stored or not get_suite(rc.suite).capabilities.judges:
        return None
    spec = ModelSpec.model_validate(stored)
    path = Path(run_dir) / VERDICTS
    cache: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                cache[row["key"]] = row["verdict"]

    def judge(suite: Suite, sample: Sample, text: str) -> TrialScore:
        prompt = suite.judge_prompt(sample, text)
        if prompt is None:
            return suite.score(ScoreInput(sample, text, "ok"))
        key = sha256_json({"judge": spec.model_dump(mode="json"), "system": prompt.system, "text": prompt.text})
        if key not in cache:
            req = Request(
                trial_id=f"human-{key[:16]}",
                parts=(TextPart(prompt.text),),
                system=prompt.system,
                settings=spec.settings,
                metadata={"sample_id": sample.sample_id, "judging": True},
            )
            try:
                resp = asyncio.run(_call(spec, suite, sample, req, rc.model_options.get(spec.provider)))
            except Exception as e:  # noqa: BLE001 - any failure of the judge is reported with the item
                raise ConfigError(
                    f"the judge {spec.label} failed on a human answer to {sample.sample_id}: {e}; "
                    "nothing was imported (verdicts already given are kept); run the import "
                    "again"
                ) from e
            cache[key] = resp.text
            write_jsonl_atomic(path, ({"key": k, "verdict": v} for k, v in cache.items()))
        return suite.score(ScoreInput(sample, text, "ok", judgement=cache[key]))

    return judge


async def _call(spec: ModelSpec, suite: Suite, sample: Sample, req: Request, options: dict | None):
    adapter = make_adapter(spec, samples={sample.sample_id: sample}, suite=suite, options=options)
    try:
        return await adapter.generate(req)
    finally:
        await adapter.aclose()
