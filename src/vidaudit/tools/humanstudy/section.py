"""The report's generic "Human study" section, built from ``RUN/human_study.json`` (no suite involved)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vidaudit.core.contract.report import Section, Table

if TYPE_CHECKING:
    from vidaudit.score.scored_run import Scored


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _kappa(ag: dict[str, Any]) -> str:
    if ag.get("kappa") is None:
        return "-"
    return f"{ag['kappa']:.3f} ({ag['method']})"


def _row(label: list[str], c: dict[str, Any]) -> list[str]:
    ag = c["agreement"]
    return [
        *label,
        f"{_pct(c['accuracy'])} ({c['n_correct']}/{c['n_answers']})",
        f"[{_pct(c['ci_low'])}, {_pct(c['ci_high'])}]",
        _kappa(ag),
        _pct(ag.get("unanimity")),
        str(ag.get("n_items", 0)),
    ]


COLUMNS = ["accuracy", "95% Wilson", "kappa", "unanimity", "items all answered"]


def report_sections(scored: Scored) -> list[Section]:
    """The report stage's hook (registry kind ``report_sections``): the section of an imported human study."""
    return [human_section(scored.human_study)] if scored.human_study is not None else []


def human_section(summary: dict[str, Any]) -> Section:
    rows = [_row([c["probe"], c["condition"]], c) for c in summary["cells"]]
    rows.append(_row(["all", "all"], summary["overall"]))
    ann = [
        [a, f"{_pct(v['accuracy'])} ({v['n_correct']}/{v['n_answers']})", str(v["answered"]), str(v["unanswered"])]
        for a, v in summary["per_annotator"].items()
    ]
    notes = []
    if summary.get("not_judged"):
        notes.append(
            f"{summary['not_judged']} free-text answer(s) were not judged (the run has no judge and the "
            "suite's parser cannot read them); they are in no accuracy above."
        )
    if summary.get("no_truth"):
        notes.append(
            f"{summary['no_truth']} data-quality answer(s) are about statements with no recorded truth; "
            "they count for agreement only."
        )
    return Section(
        id="human-study",
        title="Human study",
        lede=(
            f"Study {summary['study']} ({summary['kind']}): {summary['n_items']} item(s), "
            f"{len(summary['annotators'])} annotator(s): {', '.join(summary['annotators'])}. Accuracy pools every "
            "annotator's answers; agreement is over the items every annotator answered (Cohen's kappa for two "
            "annotators, Fleiss' for more; '-' where undefined)."
        ),
        tables=[
            Table(
                id="human-accuracy",
                title="Human accuracy and agreement per probe and condition (%)",
                key_columns=2,
                columns=["probe", "condition", *COLUMNS],
                rows=rows,
            ),
            Table(
                id="human-annotators",
                title="Annotators",
                key_columns=1,
                columns=["annotator", "accuracy", "answered", "unanswered"],
                rows=ann,
            ),
        ],
        notes=notes,
    )
