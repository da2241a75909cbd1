"""The counting suite's aggregation: report.json numbers, headline notes and the report sections.

Records arrive as typed ``ScoreRecord``s and are flattened (params + metrics + identifiers) for
:func:`~vidaudit.suites.counting.aggregate.aggregate`, which owns the denominators.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vidaudit.sdk import DataError, ScoreRecord, SuiteReport, headline_from_records
from vidaudit.suites.counting.aggregate import aggregate, paired_difference
from vidaudit.suites.counting.boundaries import format_value
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


def _below(x: float, boundary: Any) -> bool:
    """Whether the tested value ``x`` lies inside the prefix a boundary claims (a value, or "<first tested")."""
    if isinstance(boundary, str) and boundary.startswith("<"):
        return x < float(boundary[1:])
    return isinstance(boundary, (int, float)) and not isinstance(boundary, bool) and x < boundary


def grid_gap_notes(results: Mapping[str, Any]) -> list[str]:
    """Where a boundary's prefix passes over a grid value that another model or condition of the report tested and
    this one did not: N*(F) and F*(N) are over each run's own tested values (eq. 5-6), so two rows of the boundary
    table can claim the same prefix on different grids. One note per model and condition, naming each gap."""
    cells = [c for c in results.get("cells", []) if c["n_events"] > 0 and c["frequency_hz"] is not None and c["n"]]
    counts: dict[tuple[Any, float], set[int]] = {}  # (domain, F) -> every N tested there, by any run
    freqs: dict[tuple[Any, int], set[float]] = {}  # (domain, N) -> every F tested there
    own: dict[tuple[Any, Any], set[tuple[Any, int, float]]] = {}
    for c in cells:
        dom, n, f = c["domain"], c["n_events"], c["frequency_hz"]
        counts.setdefault((dom, f), set()).add(n)
        freqs.setdefault((dom, n), set()).add(f)
        own.setdefault((c["model"], c["condition"]), set()).add((dom, n, f))
    cb, fb = results.get("count_boundary", {}), results.get("frequency_boundary", {})
    notes = []
    for (model, cond), tested in own.items():
        gaps = []
        for (dom, f), ns in sorted(counts.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            value = cb.get(model, {}).get(cond, {}).get(str(dom), {}).get(format_value(f))
            missing = sorted(n for n in ns if (dom, n, f) not in tested and _below(n, value))
            if missing:
                gaps.append(f"{dom} N*(F={format_value(f)}) = {value} without N = {', '.join(map(str, missing))}")
        for (dom, n), fs in sorted(freqs.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            value = fb.get(model, {}).get(cond, {}).get(str(dom), {}).get(str(n))
            missing_f = sorted(f for f in fs if (dom, n, f) not in tested and _below(f, value))
            if missing_f:
                gaps.append(f"{dom} F*(N={n}) = {value} without F = {', '.join(map(format_value, missing_f))}")
        if gaps:
            notes.append(
                f"{model} under {cond}: boundaries over a smaller grid than the report's (each is over the run's own "
                f"tested cells, eq. 5-6; the values named were tested by another run): " + "; ".join(gaps)
            )
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
    notes = input_limit_notes(results, observers) + grid_gap_notes(results)
    results["notes"] = notes
    headline = headline_from_records(
        "Exact-match accuracy (EM: the count is right) over every planned trial",
        records,
        note="Errored and unparseable trials count as wrong.",
    )
    return SuiteReport(results=results, sections=counting_sections(results), notes=notes, headline=headline)
