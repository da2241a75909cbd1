"""The report's opening table: one row per model with the suite's main figure and its 95% interval.

Generic: a suite hands over, per (model, condition), the successes ``k`` over the planned ``n`` of
its main figure (counting: exact match over every planned trial, errors counted wrong; faithful:
A_faith over targets), and this module writes the table every report opens with. Trials that need a judge
the run did not have are in no ``n`` and are counted in the cell beside the figure ("18 unjudged, need
--judge"): the contract's one rule (``core.contract.records.counted``). Models come in
the order they were run, references after them (``human``, then the ideal observers, blind
references, constant answers, ``oracle`` and ``chance`` last), so a reader meets the models under
test first. Intervals are Wilson's, as everywhere else in vidaudit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from vidaudit.core.contract.records import ScoreRecord, counted, unjudged_text
from vidaudit.core.contract.report import Report, Table
from vidaudit.report.tables import MISSING
from vidaudit.score.stats import wilson_interval
from vidaudit.score.terminal import headline_text

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
    if not n or k is None:
        return MISSING
    lo, hi = wilson_interval(int(k), int(n))
    return f"{k / n:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}] ({k}/{n})"


def _cell(k: int, n: int, unjudged: int) -> str:
    """The figure and, beside it, the trials left out because they need a judge."""
    text = rate_cell(k, n)
    return f"{text}; {unjudged_text(unjudged)}" if unjudged else text


def headline_table(
    figure: str,
    counts: Mapping[tuple[str, str], tuple[int, int]],
    roles: Mapping[str, str],
    *,
    note: str = "",
    unjudged: Mapping[tuple[str, str], int] | None = None,
) -> Table:
    """One row per model, one column per condition: ``figure`` as ``rate [95% CI] (k/n)`` from ``counts``
    ((model, condition) -> (k, n)); models in run order with references last. ``unjudged``: (model,
    condition) -> trials left out of n because they need a judge, said in the cell beside the figure."""
    unjudged = unjudged or {}
    models = ordered_models([m for m, _ in counts], roles)
    conditions = list(dict.fromkeys(c for _, c in counts))
    rows = [
        [
            m,
            roles.get(m, "model"),
            *(_cell(*counts[(m, c)], unjudged.get((m, c), 0)) if (m, c) in counts else MISSING for c in conditions),
        ]
        for m in models
    ]
    if any(unjudged.values()):
        note = (
            f"{note} Answers only a judge can score, in a run without one (vidaudit run --judge SPEC), are in "
            "no denominator: each cell counts them beside its figure."
        ).strip()
    caption = (
        f"{figure} per model and condition, with its Wilson 95% interval and k/n; references "
        f"(oracle, chance, observers, constant answers) after the models under test. {note}"
    ).strip()
    return Table(
        id="headline",
        title="Headline",
        columns=["model", "role", *conditions],
        rows=rows,
        caption=caption,
        key_columns=2,
    )


def headline_from_records(figure: str, records: Sequence[ScoreRecord], note: str = "") -> Table | None:
    """The generic headline: per (model, condition), records with ``correct`` True over all planned records
    (an errored or unparseable trial counts as wrong; one that needs a judge the run did not have is left out
    and counted beside the figure). None when there are no records."""
    groups: dict[tuple[str, str], list[ScoreRecord]] = {}
    roles: dict[str, str] = {}
    for r in records:
        groups.setdefault((r.model, r.condition), []).append(r)
        roles.setdefault(r.model, r.model_role)
    if not groups:
        return None
    tallies = {key: counted(rs) for key, rs in groups.items()}
    return headline_table(
        figure,
        {key: (t.k, t.n) for key, t in tallies.items()},
        roles,
        note=note,
        unjudged={key: t.unjudged for key, t in tallies.items() if t.unjudged},
    )


def headline_figures(report_json: Path) -> str:
    """The report's headline table (report.json ``headline``) as the plain text `report` and `demo` end with on
    stdout (read back from the file written, so what is printed is what was stored)."""
    report = Report.model_validate_json(Path(report_json).read_text(encoding="utf-8"))
    return headline_text(report.headline) if report.headline is not None else "no headline table in the report"
