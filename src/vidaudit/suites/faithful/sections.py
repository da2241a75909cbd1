"""The faithful report's sections, built from what :func:`aggregate.aggregate` returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vidaudit.sdk import MISSING, GridFigure, Section, Table, fmt, headline_table
from vidaudit.suites.faithful.sections_budget import BUDGET_LEDE, budget_tables

ACC_LEDE = (
    "A_faith (primary) credits a target only when its answer and every one of its sub-questions are right; "
    "it is over all N planned targets, so a model that answers nothing scores 0. A_target is over the same "
    "targets, A_sub pooled over all their sub-questions. A_cons, the mean share of right sub-questions over "
    "the targets a model got right, is a reference only: its denominator depends on the model, so it is not "
    "comparable across models. Errored, unparseable and missing trials count as wrong. Intervals: Wilson 95% "
    "and, for A_faith, an interval over source videos beside it (Wilson's at the videos' effective size), which "
    "is the one to read when targets of one video succeed or fail together (A_cons: bootstrap over source videos)."
)
PROBE_LEDE = "A_sub split by probe type: sub-questions about one fact and sub-questions about the order of two events."
BALANCE_LEDE = (
    "The share of Yes answers at each level of the evaluated data, and each model's balanced accuracy "
    "(the mean of its recall on Yes items and on No items), to check that raw accuracy is not an "
    "answer-prior effect."
)
RETRIEVAL_LEDE = (
    "For the object-centric framework's runs: the trajectories its retriever passed to the answerer, "
    "against the entities each target's chain facts name (D.6). A trajectory hits an entity when its "
    "known attributes agree with the entity's name; precision over retrieved trajectories, recall over "
    "gold entities, as means over targets (macro) and pooled (micro)."
)
REF_LEDE = (
    "Blind references recomputed on the data loaded (never copied from the paper): the majority class per "
    "level, and the expectation of uniform Yes/No guessing; then every run of a blind reference model (majority, "
    "question-only:SPEC, caption-only:SPEC) and every model under frames#1 (the single centre frame)."
)
INV_LEDE = (
    "Checked on every report (a failure stops the report): A_faith <= A_target and A_faith <= A_target x "
    "A_cons. A_faith <= A_sub is not a theorem and is not checked."
)
PAIRED_LEDE = (
    "Differences between two systems (model x condition) on the targets both were planned on, with a "
    "paired bootstrap over source videos (10,000 resamples, 95% percentile interval). Differences under "
    "2.0 points are reported as ties; on fewer than 6 source videos there is no verdict (too few videos: with "
    "videos as the units no test reaches 5%), and one video has no interval."
)
ERR_LEDE = "Planned trials (targets and sub-questions), completion, failed calls, unparseable answers and usage."


def _pct(x: Any) -> str:
    return MISSING if x is None else f"{100 * x:.1f}"


def _rate(block: Any) -> str:
    if not isinstance(block, Mapping) or block.get("value") is None:
        return MISSING
    s = f"{_pct(block['value'])} [{_pct(block.get('ci_low'))}, {_pct(block.get('ci_high'))}]"
    if "k" in block:
        s += f" ({block['k']}/{block['n']})"
    return s


def _systems(results: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for model, conds in (results.get("detail") or {}).items():
        for cond, d in conds.items():
            out.append((model, cond, d))
    return out


def _video(block: Any) -> str:
    if isinstance(block, Mapping) and block.get("n_videos") == 1:
        return f"{MISSING} (1 video)"
    if not isinstance(block, Mapping) or block.get("video_ci_low") is None:
        return MISSING
    return f"[{_pct(block['video_ci_low'])}, {_pct(block['video_ci_high'])}] ({block['n_videos']} videos)"


def accuracy_table(results: Mapping[str, Any]) -> Table:
    rows = [
        [
            m,
            c,
            _rate(d["a_faith"]),
            _video(d["a_faith"]),
            _rate(d["a_target"]),
            _rate(d["a_sub"]),
            _rate(d["a_cons"])
            + (
                f" (|C|={d['a_cons']['n_correct_targets']})" if d["a_cons"].get("value") is not None else " (undefined)"
            ),
            str(d["n_targets"]),
            str(d["n_subs"]),
        ]
        for m, c, d in _systems(results)
    ]
    return Table(
        id="faithful-accuracy",
        title="Accuracies (%)",
        key_columns=2,
        columns=[
            "model",
            "condition",
            "A_faith",
            "A_faith by video",
            "A_target",
            "A_sub",
            "A_cons (ref.)",
            "targets",
            "subs",
        ],
        rows=rows,
        caption="value [Wilson 95% interval] (k/n); by video: the 95% interval counted over source videos "
        "(Wilson's at their effective size: targets of one video are correlated)",
    )


def faith_figure(results: Mapping[str, Any]) -> GridFigure | None:
    metrics = results.get("metrics") or {}
    models = sorted(metrics)
    conds = sorted({c for m in models for c in metrics[m]})
    if not models or not conds:
        return None
    vals = [[(metrics[m].get(c) or {}).get("a_faith") for c in conds] for m in models]
    notes = [[fmt(v, 3) for v in row] for row in vals]
    return GridFigure(
        id="faithful-a-faith",
        title="A_faith by model and condition",
        row_label="model",
        col_label="condition",
        rows=models,
        cols=conds,
        values=vals,
        annotations=notes,
        value_label="A_faith",
    )


def probe_table(results: Mapping[str, Any]) -> Table:
    rows = []
    for m, c, d in _systems(results):
        split = d.get("sub_by_probe")
        if isinstance(split, Mapping):
            rows.append(
                [m, c, _rate(split.get("single_fact")), _rate(split.get("ordering")), _rate(split.get("identity"))]
            )
        else:
            rows.append([m, c, str(split), str(split), str(split)])
    return Table(
        id="faithful-probe",
        title="Sub-question accuracy by probe type (%)",
        key_columns=2,
        columns=["model", "condition", "single fact", "ordering", "identity"],
        rows=rows,
    )


def balance_tables(results: Mapping[str, Any]) -> list[Table]:
    bal = (results.get("dataset") or {}).get("balance") or {}
    rows = [
        [
            level,
            str(b["n"]),
            str(b["yes"]),
            str(b["no"]),
            str(b["invalid"]),
            str(b.get("kept_as_wrong", 0)),
            _pct(b["yes_share"]),
        ]
        for level, b in bal.items()
    ]
    t1 = Table(
        id="faithful-balance",
        title="Yes/No balance of the evaluated data",
        key_columns=1,
        columns=["level", "items", "Yes", "No", "not Yes/No", "kept as wrong", "Yes share (%)"],
        rows=rows,
        caption="Yes share = Yes / (Yes + No) over the items' own answers; an item kept as wrong "
        "(--on-invalid keep-as-wrong) counts by its answer and is never right",
    )
    rows2 = []
    for m, c, d in _systems(results):
        b = d["balanced"]
        rows2.append(
            [
                m,
                c,
                _pct(d["a_target"]["value"]),
                _pct(b["target"]["value"]),
                _pct(d["a_sub"]["value"]),
                _pct(b["sub"]["value"]),
            ]
        )
    t2 = Table(
        id="faithful-balanced-accuracy",
        title="Raw and balanced accuracy (%)",
        key_columns=2,
        columns=["model", "condition", "A_target", "balanced (target)", "A_sub", "balanced (sub)"],
        rows=rows2,
    )
    return [t1, t2]


#: a reference row's four rates, in the references table's column order
_REFERENCE_RATES = ("a_target", "a_sub", "a_faith", "a_cons")


def _reference_row(label: str, rates: Mapping[str, Any]) -> list[str]:
    """One row of the references table: its label, then each of ``_REFERENCE_RATES`` with its interval and k/n (the
    majority reference and every reference run are laid out alike)."""
    return [label, *(_rate(rates[k]) for k in _REFERENCE_RATES)]


def reference_table(results: Mapping[str, Any]) -> Table:
    refs = results.get("references") or {}
    rows = []
    maj = refs.get("majority")
    if isinstance(maj, Mapping):
        lab = maj["labels"]
        rows.append(_reference_row(f"majority (target {lab['target']}, sub {lab['sub']})", maj))
    ch = refs.get("chance_expectation")
    if isinstance(ch, Mapping):
        rows.append(
            [
                "uniform Yes/No (expectation)",
                _pct(ch.get("a_target")),
                _pct(ch.get("a_sub")),
                _pct(ch.get("a_faith")),
                MISSING,
            ]
        )
    labels = {
        "majority": "majority (run)",
        "question_only": "question only",
        "caption_only": "caption only",
        "centre_frame": "single centre frame",
    }
    for run in refs.get("runs") or []:
        rows.append(_reference_row(f"{labels.get(run['kind'], run['kind'])}: {run['model']} / {run['condition']}", run))
    for key in ("question_only", "caption_only", "centre_frame"):
        if isinstance(refs.get(key), str):
            rows.append([labels[key], refs[key], MISSING, MISSING, MISSING])
    return Table(
        id="faithful-references",
        title="Blind references (%)",
        key_columns=1,
        columns=["reference", "A_target", "A_sub", "A_faith", "A_cons"],
        rows=rows,
    )


def retrieval_table(results: Mapping[str, Any]) -> Table:
    rows = [
        [
            v["model"],
            v["condition"],
            str(v["n_targets"]),
            _pct(v["precision_macro"]),
            _pct(v["recall_macro"]),
            _pct(v["precision_micro"]),
            _pct(v["recall_micro"]),
            fmt(v["mean_retrieved"]),
        ]
        for v in (results.get("retrieval") or {}).values()
    ]
    return Table(
        id="faithful-retrieval",
        title="Retrieval precision and recall against the gold chains (%)",
        key_columns=2,
        columns=[
            "model",
            "condition",
            "targets",
            "precision (macro)",
            "recall (macro)",
            "precision (micro)",
            "recall (micro)",
            "trajectories retrieved",
        ],
        rows=rows,
    )


INTERVENTION_LEDE = (
    "D.6's two retrieval measurements, each comparing two framework runs of this report that differ in "
    "one option under one condition, on the targets both ran: the clutter-failure rate (no filter, "
    "retrieval=all, wrong where the filtered run is right; the paper: 12.4%) and the drop-one-gold "
    "re-answer (drop_one=on: target accuracy on the targets whose dropped trajectory is gold; the "
    "paper: 51.2%)."
)


def intervention_tables(results: Mapping[str, Any]) -> list[Table]:
    iv = results.get("interventions") or {}
    t1 = Table(
        id="faithful-clutter",
        title="Clutter failures: no filter against the filtered retriever",
        key_columns=3,
        columns=["filtered", "no filter", "condition", "targets", "clutter failures (%)", "filter failures (%)"],
        rows=[
            [
                c["filtered"],
                c["no_filter"],
                c["condition"],
                str(c["n_targets"]),
                f"{_pct(c['clutter_failure_rate'])} ({c['clutter_failures']})",
                f"{_pct(c['filter_failure_rate'])} ({c['filter_failures']})",
            ]
            for c in iv.get("clutter") or []
        ],
        caption="clutter failure: the no-filter run wrong, the filtered run right; filter failure: the reverse",
    )
    t2 = Table(
        id="faithful-drop-one",
        title="Drop one retrieved gold trajectory and re-answer",
        key_columns=3,
        columns=[
            "base",
            "with drop_one=on",
            "condition",
            "targets with a gold drop",
            "A_target after the drop",
            "A_target without it",
            "gold",
        ],
        rows=[
            [
                d["base"],
                d["dropped"],
                d["condition"],
                str(d["n_targets"]),
                _pct(d["a_target_after_drop"]),
                _pct(d["a_target_base"]),
                d["gold"],
            ]
            for d in iv.get("drop_one_gold") or []
        ],
    )
    return [t1, t2]


def invariant_table(results: Mapping[str, Any]) -> Table:
    rows = [
        [m, c, chk["name"], fmt(chk["lhs"]), fmt(chk["rhs"]), "holds" if chk["holds"] else "BROKEN"]
        for m, c, d in _systems(results)
        for chk in d["invariants"]
    ]
    return Table(
        id="faithful-invariants",
        title="Invariants",
        key_columns=3,
        columns=["model", "condition", "check", "left", "right", "result"],
        rows=rows,
    )


def paired_table(results: Mapping[str, Any]) -> Table:
    rows = [
        [
            p["a"],
            p["b"],
            p["metric"],
            f"{p['points']:+.1f}",
            f"[{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}]" if p["n_groups"] > 1 else MISSING,
            str(p["n_pairs"]),
            str(p["n_groups"]),
            p["verdict"],
        ]
        for p in results.get("paired_differences") or []
    ]
    return Table(
        id="faithful-paired",
        title="Paired differences (points, b - a)",
        key_columns=3,
        columns=["a", "b", "metric", "difference", "95% interval", "targets", "videos", "verdict"],
        rows=rows,
    )


def errors_table(results: Mapping[str, Any]) -> Table:
    rows = []
    for m, c, d in _systems(results):
        t = d["trials"]
        errs = ", ".join(f"{k} {v}" for k, v in t["n_errored"].items()) or "none"
        rows.append(
            [
                m,
                c,
                str(t["n_trials"]),
                _pct(t["completion"]),
                errs,
                str(t["n_unparseable"]),
                _pct(t["parse_failure_rate"]),
                str(d["missing_target_trials"]),
                str(d["missing_sub_trials"]),
                str(d["orphan_sub_trials"]),
                str(t["n_invalid_gold"]),
                str(sum(t["tokens"].values())),
                f"{t['cost_usd']:.4f}",
            ]
        )
    return Table(
        id="faithful-errors",
        title="Trials, errors and parse failures",
        key_columns=2,
        columns=[
            "model",
            "condition",
            "trials",
            "completion (%)",
            "errored",
            "unparseable",
            "parse failures (%)",
            "missing targets",
            "missing subs",
            "orphan subs",
            "invalid gold",
            "tokens",
            "cost (USD)",
        ],
        rows=rows,
    )


def faithful_sections(results: Mapping[str, Any]) -> list[Section]:
    fig = faith_figure(results)
    na = results.get("not_available") or {}
    return [
        Section(
            id="accuracies",
            title="Faithful accuracy",
            lede=ACC_LEDE,
            figures=[fig] if fig else [],
            tables=[accuracy_table(results)],
            notes=[f"{m} is the paper's {v}" for m, v in (results.get("variants") or {}).items()],
        ),
        Section(
            id="probe-types", title="Single-fact and ordering probes", lede=PROBE_LEDE, tables=[probe_table(results)]
        ),
        Section(
            id="balance", title="Label balance and balanced accuracy", lede=BALANCE_LEDE, tables=balance_tables(results)
        ),
        Section(id="references", title="Blind references", lede=REF_LEDE, tables=[reference_table(results)]),
        *(
            [
                Section(
                    id="retrieval",
                    title="Retrieval against the gold chains",
                    lede=RETRIEVAL_LEDE,
                    tables=[retrieval_table(results)],
                )
            ]
            if results.get("retrieval")
            else []
        ),
        *(
            [
                Section(
                    id="interventions",
                    title="Retrieval interventions (D.6)",
                    lede=INTERVENTION_LEDE,
                    tables=intervention_tables(results),
                )
            ]
            if any((results.get("interventions") or {}).values())
            else []
        ),
        Section(id="invariants", title="Invariants", lede=INV_LEDE, tables=[invariant_table(results)]),
        Section(id="paired", title="Paired differences", lede=PAIRED_LEDE, tables=[paired_table(results)]),
        Section(id="budget", title="Budget: calls, frames and tokens", lede=BUDGET_LEDE, tables=budget_tables(results)),
        Section(id="errors", title="Errors, parse failures and usage", lede=ERR_LEDE, tables=[errors_table(results)]),
        Section(
            id="not-available",
            title="Analyses not available on this data",
            lede="What the data lacks is reported as not available, never estimated.",
            notes=[f"{k}: {v}" for k, v in na.items()],
        ),
    ]


def faithful_headline(results: Mapping[str, Any]):
    """The report's opening table: A_faith (a target right with every sub-question right) per model and
    condition, with its Wilson interval; references last."""
    detail = results.get("detail") or {}
    counts = {
        (m, c): (d["a_faith"]["k"], d["a_faith"]["n"])
        for m, conds in detail.items()
        for c, d in conds.items()
        if isinstance(d.get("a_faith"), Mapping)
    }
    roles = {m: next(iter(conds.values())).get("role", "model") for m, conds in detail.items() if conds}
    if not counts:
        return None
    return headline_table(
        "Faithful accuracy (A_faith: the target and every sub-question right)",
        counts,
        roles,
        note="A_target, A_sub and A_cons are in the accuracies table below.",
    )


def headline_notes(results: Mapping[str, Any]) -> list[str]:
    notes = []
    for model, conds in (results.get("metrics") or {}).items():
        for cond, m in conds.items():
            notes.append(
                f"{model} under {cond}: A_faith {_pct(m['a_faith'])}%, A_target {_pct(m['a_target'])}%, "
                f"A_sub {_pct(m['a_sub'])}%, A_cons {_pct(m['a_cons'])}% (reference only)."
            )
    n_manifest = (results.get("dataset") or {}).get("n_targets_in_manifest")
    for model, cond, d in _systems(results):
        if isinstance(n_manifest, int) and d["n_targets"] < n_manifest:
            notes.append(
                f"{model} under {cond} has trials for {d['n_targets']} of the manifest's {n_manifest} targets: its "
                f"accuracies are over those {d['n_targets']} only (the others were not planned, or their lines are "
                "absent from the responses), so compare it with another system on shared targets (paired differences)."
            )
    for model, cond, d in _systems(results):
        vacuous = (d.get("a_cons") or {}).get("n_vacuous") or 0
        if vacuous:
            notes.append(
                f"{model} under {cond}: {vacuous} of the {d['a_cons']['n_correct_targets']} targets it answered right "
                "have no sub-questions; A_faith credits them (the empty product) and A_cons counts each as fully "
                "consistent, with nothing checked beyond the target answer."
            )
    maj = (results.get("references") or {}).get("majority")
    if isinstance(maj, Mapping):
        notes.append(
            f"Majority-class reference on this data: A_faith {_pct(maj['a_faith']['value'])}%, A_target "
            f"{_pct(maj['a_target']['value'])}%, A_sub {_pct(maj['a_sub']['value'])}%."
        )
    return notes
