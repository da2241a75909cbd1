"""The report's opening table: one row per model with the suite's main figure and its 95% interval.

Generic: a suite hands over, per (model, condition), the successes ``k`` over the planned ``n`` of
its main figure (counting: exact match over every planned trial, errors counted wrong; faithful:
A_faith over targets), and this module writes the table every report opens with. Models come in
the order they were run, references after them (``human``, then the ideal observers, blind
references, constant answers, ``oracle`` and ``chance`` last), so a reader meets the models under
test first. Intervals are Wilson's, as everywhere else in vidaudit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vidaudit.report.model import Table
from vidaudit.report.tables import MISSING

#: where a model's role puts its row (and its figures): models under test first, ``chance`` last
ROLE_ORDER = ("model", "human", "observer", "reference", "constant", "oracle", "chance")


def role_rank(role: str | None) -> int:
    """Sort key of a model role: unknown roles sit with the models under test."""
    return ROLE_ORDER.index(role) if role in ROLE_ORDER else 0


def ordered_models(models: Sequence[str], roles: Mapping[str, str]) -> list[str]:
    """``models`` in run order, references after the models under test (stable within a role)."""
    return sorted(dict.fromkeys(models), key=lambda m: role_rank(roles.get(m)))


def rate_cell(k: int | None, n: int | None, digits: int = 3) -> str:
    """``0.833 [0.436, 0.970] (5/6)``: the rate, its Wilson 95% interval and its counts; an em dash when n is 0."""
    from vidaudit.score.stats import wilson_interval

    if not n or k is None:
        return MISSING
    lo, hi = wilson_interval(int(k), int(n))
    return f"{k / n:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}] ({k}/{n})"


def headline_table(figure: str, counts: Mapping[tuple[str, str], tuple[int, int]], roles: Mapping[str, str],
                   *, note: str = "") -> Table:
    """One row per model, one column per condition: ``figure`` as ``rate [95% CI] (k/n)`` from ``counts``
    ((model, condition) -> (k, n)); models in run order with references last."""
    models = ordered_models([m for m, _ in counts], roles)
    conditions = list(dict.fromkeys(c for _, c in counts))
    rows = [[m, roles.get(m, "model"), *(rate_cell(*counts[(m, c)]) if (m, c) in counts else MISSING
                                         for c in conditions)] for m in models]
    caption = (f"{figure} per model and condition, with its Wilson 95% interval and k/n; references "
               f"(oracle, chance, observers, constant answers) after the models under test. {note}").strip()
    return Table(id="headline", title="Headline", columns=["model", "role", *conditions], rows=rows,
                 caption=caption, key_columns=2)


def headline_from_records(figure: str, records: Sequence, note: str = "") -> Table | None:
    """The generic headline: per (model, condition), records with ``correct`` True over all planned records
    (an errored or unparseable trial counts as wrong). None when there are no records."""
    counts: dict[tuple[str, str], list[int]] = {}
    roles: dict[str, str] = {}
    for r in records:
        c = counts.setdefault((r.model, r.condition), [0, 0])
        c[0] += r.correct is True
        c[1] += 1
        roles.setdefault(r.model, r.model_role)
    if not counts:
        return None
    return headline_table(figure, {key: (k, n) for key, (k, n) in counts.items()}, roles, note=note)
