"""Trace-error taxonomy of one trial (Low-Frequency Trap, Tables 7-8, appendix C.16 and F.5).

Event-level counts (so that ``matched + missed = N`` and ``matched + displaced + hallucinated = M``,
the arithmetic of Table 8, where matched + missed = true events):

- ``matched``: pairs of the optimal matching within delta (K). Misidentified pairs are included.
- ``missed``: true events left unmatched (N - K), including those a displaced report stands for.
- ``displaced``: unmatched reports that are *order-aligned* with an unmatched true event (Table 8:
  "A displaced event is an order-aligned timestamp outside the tolerance"; Table 7: "A report
  corresponds to the appropriate event in the sequence but falls outside the timestamp
  tolerance"). The alignment, exactly: the K matched pairs, taken in time order on each side,
  cut both sequences into K + 1 gaps (before the first pair, between consecutive pairs, after
  the last). Inside one gap the unmatched reports and the unmatched true events are paired in
  order (the i-th paired report with the i-th paired true event, never crossing each other or a
  matched pair), as many pairs as the shorter side holds, choosing among such order-preserving
  pairings the one with the smallest total deviation (C.15's tie rule for the matching itself).
  Each paired report is displaced, however far it is: its place in the sequence says which
  event it reports. No distance limit is applied, because the paper states none.
- ``hallucinated``: unmatched reports that are not displaced: no unmatched true event is left at
  their place in the sequence ("A reported event has no aligned true event").
- ``misidentified``: matched pairs whose reported label (state or wall) is known and contradicts
  the true event's ``state_after``; a subset of ``matched``. Unlabelled reports are never counted.

Trial-level flags (positive N only):

- ``wrong_accumulation``: the paper's: an incorrect final count (unparseable included) with trace
  F1 >= 0.80 (Table 8: "Wrong accumulation counts videos with an incorrect final answer and trace
  F1 >= 0.80"; F.5). These are exactly the RFR trials.
- ``ledger_mismatch``: a broader, vidaudit-only figure: a parsed final count that differs from the
  number of events the model itself reported (``y_hat != M`` with ``M > 0``), whatever the F1: the
  tally does not add up the model's own ledger. Not a paper category.
- ``accidental_correctness``: a correct count with trace F1 < 0.80 (the ACR trials).

Merged events (one report standing for several true events) need explicit visible evidence
(Table 8 reports zero) and are not inferred here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from vidaudit.suites.counting.matching import Matching
from vidaudit.suites.counting.metrics import F1_FAITHFUL

TAXONOMY_KEYS = (
    "matched",
    "missed",
    "hallucinated",
    "displaced",
    "misidentified",
    "wrong_accumulation",
    "ledger_mismatch",
    "accidental_correctness",
)


@dataclass(frozen=True)
class Taxonomy:
    matched: int
    missed: int
    hallucinated: int
    displaced: int
    misidentified: int
    wrong_accumulation: int
    ledger_mismatch: int
    accidental_correctness: int
    #: (true index, reported index) of each displaced report and the true event it is aligned with
    displaced_pairs: tuple[tuple[int, int], ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, int]:
        d = self.__dict__
        return {k: d[k] for k in TAXONOMY_KEYS}


_new_object = object.__new__
_set_attr = object.__setattr__


def _taxonomy(*values: Any) -> Taxonomy:
    """``Taxonomy(*values)`` (every field, in order) without the frozen ``__init__``'s nine
    ``object.__setattr__`` calls: the same object, made once per scored trial."""
    tax = _new_object(Taxonomy)
    _set_attr(tax, "__dict__", dict(zip(_FIELDS, values, strict=True)))
    return tax


_FIELDS = (*TAXONOMY_KEYS, "displaced_pairs")


def _norm(label: str | None) -> str | None:
    return label.strip().lower() if isinstance(label, str) and label.strip() else None


def _align_gap(t: Sequence[float], r: Sequence[float]) -> list[tuple[int, int]]:
    """Order-preserving pairing of ``min(len(t), len(r))`` pairs with the least total deviation.

    Both sides sorted by time. With ``a = len(short)`` and ``b = len(long)``, the i-th short item
    can only pair with long items ``i .. i + b - a``, so the DP is O(a * (b - a + 1)).
    """
    swap = len(t) > len(r)
    short, long_ = (r, t) if swap else (t, r)
    a, b = len(short), len(long_)
    if a == 0:
        return []
    slack = b - a
    inf = float("inf")
    # cost[i][s]: best total deviation pairing short[:i+1], the i-th short item with long[i + s]
    cost = [[inf] * (slack + 1) for _ in range(a)]
    back = [[0] * (slack + 1) for _ in range(a)]
    for s in range(slack + 1):
        cost[0][s] = abs(short[0] - long_[s])
    for i in range(1, a):
        best, arg = inf, 0
        prev = cost[i - 1]
        for s in range(slack + 1):
            if prev[s] < best:  # the previous item may sit at any offset <= s (strictly earlier long item)
                best, arg = prev[s], s
            cost[i][s] = best + abs(short[i] - long_[i + s])
            back[i][s] = arg
    s = min(range(slack + 1), key=lambda x: (cost[a - 1][x], x))
    pairs = []
    for i in range(a - 1, -1, -1):
        pairs.append((i, i + s))
        s = back[i][s]
    pairs.reverse()
    return [(j, i) for i, j in pairs] if swap else pairs


def order_aligned(
    matching: Matching, true_times: Sequence[float], reported_times: Sequence[float]
) -> list[tuple[int, int]]:
    """(true index, reported index) of the displaced reports: the gap alignment of the module docstring."""
    n, m, k = matching.n_true, matching.n_reported, matching.k
    if k == min(n, m):
        return []
    t_order = sorted(range(n), key=lambda i: (true_times[i], i))
    r_order = sorted(range(m), key=lambda j: (reported_times[j], j))
    t_rank = {i: p for p, i in enumerate(t_order)}
    r_rank = {j: p for p, j in enumerate(r_order)}
    # anchors: matched ranks, each side sorted on its own (so a crossing tie of the solver cannot tangle gaps)
    ta = sorted(t_rank[i] for i, _ in matching.pairs)
    ra = sorted(r_rank[j] for _, j in matching.pairs)
    out: list[tuple[int, int]] = []
    t_lo = r_lo = 0
    for g in range(k + 1):
        t_hi = ta[g] if g < k else n
        r_hi = ra[g] if g < k else m
        gt = t_order[t_lo:t_hi]
        gr = r_order[r_lo:r_hi]
        if gt and gr:
            local = _align_gap([float(true_times[i]) for i in gt], [float(reported_times[j]) for j in gr])
            out.extend((gt[i], gr[j]) for i, j in local)
        t_lo, r_lo = t_hi + 1, r_hi + 1
    return sorted(out)


def classify(
    matching: Matching,
    true_times: Sequence[float],
    reported_times: Sequence[float],
    delta: float,
    *,
    true_labels: Sequence[str | None] = (),
    reported_labels: Sequence[str | None] = (),
    predicted: int | None,
    correct: bool,
    f1: float | None,
    f1_faithful: float = F1_FAITHFUL,
) -> Taxonomy:
    """Classify the events of one trial given its optimal ``matching`` at window ``delta``.

    ``delta`` is the window the matching used; displacement needs no second window (see the
    module docstring), so it only documents the call.
    """
    del delta
    counts, displaced_pairs = taxonomy_counts(
        matching,
        true_times,
        reported_times,
        true_labels=true_labels,
        reported_labels=reported_labels,
        predicted=predicted,
        correct=correct,
        f1=f1,
        f1_faithful=f1_faithful,
    )
    return _taxonomy(*counts.values(), displaced_pairs)


_SECOND = itemgetter(1)


def taxonomy_counts(
    matching: Matching,
    true_times: Sequence[float],
    reported_times: Sequence[float],
    *,
    true_labels: Sequence[str | None] = (),
    reported_labels: Sequence[str | None] = (),
    predicted: int | None,
    correct: bool,
    f1: float | None,
    f1_faithful: float = F1_FAITHFUL,
) -> tuple[dict[str, int], tuple[tuple[int, int], ...]]:
    """What :func:`classify` finds, as ``Taxonomy.to_dict()`` gives it (``TAXONOMY_KEYS`` in order) and the
    displaced pairs: the scorer's record needs no Taxonomy object."""
    pairs = matching.pairs
    n, m, k = matching.n_true, matching.n_reported, len(pairs)
    displaced_pairs = order_aligned(matching, true_times, reported_times) if k != min(n, m) else []
    misidentified = 0
    n_rl, n_tl = len(reported_labels), len(true_labels)
    if pairs and n_rl and n_tl:
        got = [reported_labels[j] if j < n_rl else None for _, j in pairs]
        want = [true_labels[i] if i < n_tl else None for i, _ in pairs]
        if got != want:  # equal labels normalise equal: the usual match
            for g, w in zip(got, want, strict=True):
                if g is None or w is None or g == w:
                    continue
                g, w = _norm(g), _norm(w)
                if g is not None and w is not None and g != w:
                    misidentified += 1
    positive = n > 0 and f1 is not None
    faithful = positive and f1 >= f1_faithful - 1e-12  # type: ignore[operator]
    ledger = int(predicted is not None and m > 0 and predicted != m)
    used = set(map(_SECOND, pairs))
    n_unmatched_reported = m - (
        len(used) if not used or (min(used) >= 0 and max(used) < m) else len({j for j in used if 0 <= j < m})
    )  # = len(unmatched_reported)
    return (
        {
            "matched": k,
            "missed": n - k,
            "hallucinated": n_unmatched_reported - len(displaced_pairs),
            "displaced": len(displaced_pairs),
            "misidentified": misidentified,
            "wrong_accumulation": int(faithful and not correct),
            "ledger_mismatch": ledger,
            "accidental_correctness": int(positive and correct and not faithful),
        },
        tuple(displaced_pairs),
    )


def sum_taxonomies(items: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Totals over trials (the event-level rows of Table 8 and the trial-level flags)."""
    return {k: int(sum(int(t.get(k, 0) or 0) for t in items)) for k in TAXONOMY_KEYS}
