"""Trace-error taxonomy of one trial (Low-Frequency Trap, Table 7, with the issue's precise rules).

Event-level counts (so that ``matched + missed = N`` and ``matched + displaced + hallucinated = M``):

- ``matched``: pairs of the optimal matching within delta (K). Misidentified pairs are included.
- ``missed``: true events left unmatched (N - K), including those a displaced report points at.
- ``displaced``: unmatched reports that pair with an unmatched true event within ``2 * delta``
  (an optimal matching of the leftovers at the wider window): the right event, reported at the
  wrong time.
- ``hallucinated``: unmatched reports that are not displaced: no true event near them.
- ``misidentified``: matched pairs whose reported label (state or wall) is known and contradicts
  the true event's ``state_after``; a subset of ``matched``. Unlabelled reports are never counted.

Trial-level flags:

- ``wrong_accumulation``: the final count differs from the number of events the model itself
  reported (``y_hat != M`` with ``M > 0`` and a parsed ``y_hat``): the tally does not add up its own ledger.
- ``accidental_correctness``: a correct count with trace F1 < 0.80 (positive N only).

Merged events (one report standing for several true events) need explicit visible evidence
(Table 8 reports zero) and are not inferred here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vidaudit.score.matching import Matching, match_times

TAXONOMY_KEYS = ("matched", "missed", "hallucinated", "displaced", "misidentified", "wrong_accumulation",
                 "accidental_correctness")


@dataclass(frozen=True)
class Taxonomy:
    matched: int
    missed: int
    hallucinated: int
    displaced: int
    misidentified: int
    wrong_accumulation: int
    accidental_correctness: int

    def to_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in TAXONOMY_KEYS}


def _norm(label: str | None) -> str | None:
    return label.strip().lower() if isinstance(label, str) and label.strip() else None


def classify(matching: Matching, true_times: Sequence[float], reported_times: Sequence[float], delta: float, *,
             true_labels: Sequence[str | None] = (), reported_labels: Sequence[str | None] = (),
             predicted: int | None, correct: bool, f1: float | None, f1_faithful: float = 0.80) -> Taxonomy:
    """Classify the events of one trial given its optimal ``matching`` at window ``delta``."""
    um_true = matching.unmatched_true
    um_rep = matching.unmatched_reported
    displaced = 0
    if um_true and um_rep:
        wide = match_times([true_times[i] for i in um_true], [reported_times[j] for j in um_rep], 2 * delta)
        displaced = wide.k
    misidentified = 0
    for i, j in matching.pairs:
        got = _norm(reported_labels[j]) if j < len(reported_labels) else None
        want = _norm(true_labels[i]) if i < len(true_labels) else None
        if got is not None and want is not None and got != want:
            misidentified += 1
    m = matching.n_reported
    wrong_acc = int(predicted is not None and m > 0 and predicted != m)
    accidental = int(matching.n_true > 0 and correct and f1 is not None and f1 < f1_faithful - 1e-12)
    return Taxonomy(matched=matching.k, missed=matching.n_true - matching.k,
                    hallucinated=len(um_rep) - displaced, displaced=displaced, misidentified=misidentified,
                    wrong_accumulation=wrong_acc, accidental_correctness=accidental)


def sum_taxonomies(items: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Totals over trials (the event-level rows of Table 8 and the trial-level flags)."""
    return {k: int(sum(int(t.get(k, 0) or 0) for t in items)) for k in TAXONOMY_KEYS}
