"""The counting suite's aggregation: report.json numbers, headline notes and the report sections.

Records arrive as typed ``ScoreRecord``s and are flattened (params + metrics + identifiers) for
:func:`~vidaudit.suites.counting.aggregate.aggregate`, which owns the denominators.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vidaudit.sdk import DataError, ScoreRecord, SuiteReport, headline_from_records
from vidaudit.suites.counting.aggregate import aggregate, paired_difference
from vidaudit.suites.counting.sections import counting_sections


def input_limit_notes(results: Mapping[str, Any], observers: set[str]) -> list[str]:
    """Where the ideal observer fails, the input itself cannot show the events: name those cells."""
    notes = []
    by_cond: dict[str, dict[str, list[str]]] = {}
    cells = [c for c in results.get("cells", []) if c["model"] in observers]
    for c in cells:
        if c.get("n") and c.get("accuracy") is not None and c["accuracy"] < 1.0:
            by_cond.setdefault(f"{c['model']} under {c['condition']}", {}).setdefault(c["domain"], []).append(
                f"N={c['n_events']} F={c['frequency_hz']} ({c['correct']}/{c['n']})"
            )
    for where, domains in sorted(by_cond.items()):
        n = sum(len(v) for v in domains.values())
        # one list per domain, "; " between domains: a reader (and the demo's terminal list) meets them one by one
        notes.append(
            f"The ideal observer ({where}: the pixel detector on exactly the frames sent) misses in {n} "
            f"cell(s), where the input cannot show the events — "
            + "; ".join(f"{d}: {', '.join(v)}" for d, v in domains.items())
        )
    if cells and not by_cond:
        notes.append("The ideal observer is correct in every cell under every condition run.")
    return notes


def paired_comparisons(records: list[dict[str, Any]], n_boot: int = 2000) -> list[dict[str, Any]]:
    """Each model's conditions against its first, and each condition's models against the first:
    EM difference on shared samples with a bootstrap interval clustered by source video."""
    models = list(dict.fromkeys(r["model"] for r in records))
    conds = list(dict.fromkeys(r["condition"] for r in records))
    pairs = [((m, conds[0]), (m, c)) for m in models for c in conds[1:]]
    pairs += [((models[0], c), (m, c)) for c in conds for m in models[1:]]
    out = []
    for a, b in pairs:
        try:
            out.append(paired_difference(records, a, b, n_boot=n_boot))
        except (DataError, ValueError):
            continue  # no shared ok samples for this pair
    return out


def counting_report(records: Sequence[ScoreRecord]) -> SuiteReport:
    flat = [r.flat() for r in records]
    results = aggregate(flat)
    results["paired_differences"] = paired_comparisons(flat)
    observers = {r.model for r in records if r.model_role == "observer"}
    notes = input_limit_notes(results, observers)
    results["notes"] = notes
    headline = headline_from_records(
        "Exact-match accuracy (EM: the count is right) over every planned trial",
        records,
        note="Errored and unparseable trials count as wrong.",
    )
    return SuiteReport(results=results, sections=counting_sections(results), notes=notes, headline=headline)
