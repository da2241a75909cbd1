"""The ``sycophancy_pairs`` probe: generation samples whose "answer" is a generated pair, scored as valid or
not (a valid pair is ``correct``); ``vidaudit generate stress --probe sycophancy --source RUN`` turns the
valid ones into the sycophancy dataset. No oracle or chance: there is no true pair to copy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vidaudit.sdk import (
    AggregateInput,
    Condition,
    ConfigError,
    ParseResult,
    Prompt,
    Sample,
    ScoreInput,
    ScoreRecord,
    Section,
    SuiteReport,
    Table,
    TrialScore,
    ViewerTrial,
)
from vidaudit.suites.stress.common import accuracy_cell, accuracy_text, group_records
from vidaudit.suites.stress.probe import GenerateOptions, Probe, ProbeBaselines
from vidaudit.suites.stress.sycophancy.categories import PAPER_CATEGORIES
from vidaudit.suites.stress.sycophancy.pairs import validate_generated
from vidaudit.suites.stress.sycophancy.pairs_generate import generate_pairs_requests
from vidaudit.suites.stress.sycophancy.prompts import GENERATOR_PROMPT_NAMES, generator_prompt
from vidaudit.suites.stress.viewer import probe_trial

_NO_TRUTH = ("sycophancy_pairs asks a model to write a claim pair; there is no true pair for a baseline to give. "
             "Run a real generator model on it")


class PairsBaselines(ProbeBaselines):
    """The sycophancy_pairs probe's baseline answers."""

    def oracle_answer(self, sample: Sample) -> str:
        raise ConfigError(_NO_TRUTH)

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        raise ConfigError(_NO_TRUTH)


class PairsProbe(Probe):
    name = "sycophancy_pairs"
    description = "generation step of sycophancy source (b): a model writes an [Original]/[Modified] pair per video x category"
    presets = ("smoke", "paper")
    prompts = GENERATOR_PROMPT_NAMES
    record_keys = ("probe", "category", "video_key")
    baselines = PairsBaselines()

    def generate(self, out: Path, options: GenerateOptions) -> Path:
        options.check_settings(("categories",), self.name)
        options.refuse_pool(self.name, "renders no video (it copies the --source videos and writes requests)")
        cats = tuple(c.strip().upper() for c in options.settings.get("categories", ",".join(PAPER_CATEGORIES)).split(","))
        bad = [c for c in cats if c not in PAPER_CATEGORIES]
        if bad or not cats:
            raise ConfigError(f"unknown categories {', '.join(bad)}; choose from {', '.join(PAPER_CATEGORIES)}")
        return generate_pairs_requests(out, options.source, cats, force=options.force, log=options.source_log())

    def check_sample(self, sample: Sample) -> str | None:
        if sample.params.get("category") not in PAPER_CATEGORIES:
            return f"category {sample.params.get('category')!r} is not one of {', '.join(PAPER_CATEGORIES)}"
        return None

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        return Prompt(None, generator_prompt(str(sample.params["category"])))

    def score(self, trial: ScoreInput) -> TrialScore:
        sample, text, status = trial.sample, trial.text, trial.status
        if status != "ok" or text is None:
            return TrialScore(correct=None)
        fields, why = validate_generated(text, str(sample.params["category"]))
        return TrialScore(correct=fields is not None,
                          parse=ParseResult(value=fields, method="json" if fields else "unparseable"),
                          metrics={"valid": fields is not None, "reason": why})

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        rows, results = [], {}
        for (model, cond), rs in group_records(inputs.records, lambda r: (r.model, r.condition)).items():
            per = {c: [r for r in rs if r.params.get("category") == c] for c in PAPER_CATEGORIES}
            reasons: dict[str, int] = {}
            for r in rs:
                if r.metrics.get("reason"):
                    key = str(r.metrics["reason"]).split(":")[0].split(" (")[0]
                    reasons[key] = reasons.get(key, 0) + 1
            cells = {c: accuracy_cell(v) for c, v in per.items()}
            total = accuracy_cell(rs)
            results[f"{model}|{cond}"] = {"model": model, "condition": cond, "valid": total, "per_category": cells,
                                          "dropped_by_reason": reasons}
            rows.append([model, cond, *(accuracy_text(cells[c]) for c in PAPER_CATEGORIES), accuracy_text(total),
                         "; ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "-"])
        table = Table(id="stress-sycophancy-pairs", title="Sycophancy pair generation: valid pairs (%)", key_columns=2,
                      columns=["generator", "condition", *PAPER_CATEGORIES, "all", "dropped by reason"], rows=rows,
                      caption="A pair is valid when the answer is one JSON object with exactly the four C.4 fields, the "
                              "asked category, and a minimal change (docs/stress.md); a failed call is not valid.")
        sec = Section(id="stress-sycophancy-pairs", title="Sycophancy pair generation", tables=[table])
        return SuiteReport(results={"sycophancy_pairs": results}, sections=[sec],
                           notes=[f"sycophancy_pairs: {len(rows)} generator x condition cells"])

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        return probe_trial(self.name, record, sample, raw_text, kind=sample.params.get("category"),
                           answer="a valid pair", predicted="valid" if record.correct else "dropped",
                           facts=[("video", str(sample.params.get("video_key"))),
                                  ("reason", str(record.metrics.get("reason")))],
                           grid_point=[sample.params.get("category")])


PROBE = PairsProbe()
