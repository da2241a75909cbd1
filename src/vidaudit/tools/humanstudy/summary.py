"""The numbers of an imported study (``RUN/human_study.json``): accuracy and agreement per probe and condition.

- accuracy: over every scored answer (each annotator's answer to an item is one trial), pooled over
  annotators, with a 95% Wilson interval; also per annotator. Unanswered and not-judged items are
  counted beside it, never in it.
- agreement: over the items every annotator answered, on the answers themselves (the option chosen, or
  yes / no; free-text items are left out): Cohen's kappa for two annotators, Fleiss' for three or more,
  and unanimity (the share of those items where all gave the same answer). None where undefined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vidaudit.core.contract.records import ScoreRecord
from vidaudit.score.kappa import agreement
from vidaudit.score.stats import wilson_interval
from vidaudit.tools.humanstudy.answers import AnswerSheet, StudyManifest
from vidaudit.tools.humanstudy.scoring import Scoring

SUMMARY_SCHEMA_VERSION = 1


def accuracy(records: Sequence[ScoreRecord]) -> dict[str, Any]:
    n = len(records)
    k = sum(r.correct is True for r in records)
    lo, hi = wilson_interval(k, n) if n else (None, None)
    return {"n_answers": n, "n_correct": k, "accuracy": k / n if n else None, "ci_low": lo, "ci_high": hi}


def _agreement(manifest: StudyManifest, sheets: Sequence[AnswerSheet], item_ids: Sequence[str]) -> dict[str, Any]:
    rows = []
    for i in item_ids:
        if manifest.items[i].kind == "text":
            continue
        labels = [s.answers.get(i) for s in sheets]
        if all(x is not None for x in labels):
            rows.append(labels)
    out = agreement(rows)
    out["n_annotators"] = len(sheets)
    return out


def summarize(
    manifest: StudyManifest, sheets: Sequence[AnswerSheet], scoring: Scoring, files: Sequence[str]
) -> dict[str, Any]:
    strata: dict[tuple[str, str], list[str]] = {}
    for it in manifest.items.values():
        strata.setdefault((it.probe, it.condition), []).append(it.item_id)
    cells = []
    for (probe, condition), ids in sorted(strata.items()):
        recs = [r for r in scoring.records if r.metrics.get("item_id") in set(ids)]
        cells.append(
            {
                "probe": probe,
                "condition": condition,
                "n_items": len(ids),
                **accuracy(recs),
                "agreement": _agreement(manifest, sheets, ids),
            }
        )
    per_annotator = {}
    for s in sheets:
        recs = [r for r in scoring.records if r.metrics.get("annotator") == s.annotator]
        per_annotator[s.annotator] = {
            **accuracy(recs),
            "answered": len(s.answers),
            "unanswered": len(manifest.items) - len(s.answers),
        }
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "study": manifest.study,
        "kind": manifest.kind,
        "suite": manifest.suite,
        "manifest": str(manifest.path),
        "files": list(files),
        "annotators": [s.annotator for s in sheets],
        "n_items": len(manifest.items),
        "overall": {**accuracy(scoring.records), "agreement": _agreement(manifest, sheets, list(manifest.items))},
        "cells": cells,
        "per_annotator": per_annotator,
        "not_judged": len(scoring.not_judged),
        "no_truth": len(scoring.no_truth),
    }
