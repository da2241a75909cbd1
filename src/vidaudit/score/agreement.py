"""How far two judges agree (``vidaudit judge-agreement A B``): Cohen's kappa and the confusion matrix.

A is a run directory made with ``--judge``; B is another such run (a different judge over the same
answers) or a file of human labels. A judged trial's *label* is its verdict as the suite recorded it
(``parse.value`` of a record whose parse method is ``judged``: ``true`` / ``false``, ``1.0`` / ``0.5`` /
``0.0``); a verdict the suite could not read is the label ``unparseable`` (a judge that answers prose
disagrees with one that does not). Trials that were not judged (parsed answers, runs without a judge)
have no label and are counted apart.

- Two runs: trials are matched by (sample, model, condition) -- their trial ids differ, since the judge
  is part of the id. A matched pair whose answer texts differ is not the same answer judged twice: it is
  counted (``answers_differ``) and left out.
- Human labels: a JSON object ``{ITEM: LABEL}`` (or ``{"labels": {ITEM: LABEL}}``) or a CSV file with the
  header ``item,label``. ITEM is ``SAMPLE_ID|MODEL|CONDITION``, or a bare ``SAMPLE_ID`` where the run has
  exactly one judged trial of that sample. LABEL is ``true`` / ``false``, a number (``1``, ``0.5``), or any
  other text (compared trimmed and lower-cased).

Labels are normalised before comparison (booleans to ``true`` / ``false``, numbers to ``float`` repr, so
``1`` = ``1.0``). It is an error (``DataError``, naming both sides) when no item is labelled on both
sides, or when the two sides' label sets share no label (e.g. true/false against 0/0.5/1: not the same
question). ``by`` splits the comparison by a record parameter (e.g. ``task``), each group checked alone.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.core.errors import DataError
from vidaudit.core.untrusted import distinct_keys
from vidaudit.score.kappa import cohen_kappa
from vidaudit.score.stage import score_store

UNPARSEABLE = "unparseable"
Key = tuple[str, str, str]


def normalise_label(value: Any) -> str:
    """A label as compared: ``true``/``false``, a float's repr, or trimmed lower-case text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(float(value)):
            raise DataError(f"label {value!r} is not a finite number")
        return repr(float(value))
    text = str(value).strip().lower()
    try:
        x = float(text)
    except ValueError:
        return text
    return repr(x) if math.isfinite(x) else text


@dataclass
class RunLabels:
    """The labelled trials of one run, keyed by (sample, model, condition)."""

    source: str
    labels: dict[Key, str] = field(default_factory=dict)
    answers: dict[Key, str | None] = field(default_factory=dict)
    groups: dict[Key, str] = field(default_factory=dict)
    unlabelled: Counter[str] = field(default_factory=Counter)


def run_labels(run_dir: str | Path, *, by: str | None = None) -> RunLabels:
    """The judge's labels of every judged trial of a run (scored afresh from its store; no model is called)."""
    scored = score_store(run_dir)
    out = RunLabels(source=str(run_dir))
    for r in scored.records:
        method = r.parse.method if r.parse is not None else None
        if method == "judged":
            label = normalise_label(r.parse.value)  # type: ignore[union-attr]
        elif method == "judge_unparseable":
            label = UNPARSEABLE
        else:
            out.unlabelled[method or r.status] += 1
            continue
        key = (r.sample_id, r.model, r.condition)
        if key in out.labels:
            raise DataError(
                f"{run_dir}: two judged trials of sample {r.sample_id}, model {r.model}, condition "
                f"{r.condition}; judge-agreement needs one per (sample, model, condition)"
            )
        out.labels[key] = label
        out.answers[key] = scored.raw_text.get(r.trial_id)
        out.groups[key] = str(r.params.get(by)) if by else "all"
    if not out.labels:
        raise DataError(
            f"{run_dir} has no judged trials ({dict(out.unlabelled) or 'no trials'}); run it with "
            "--judge SPEC on a suite that judges"
        )
    return out


def read_human_labels(path: str | Path) -> dict[str, str]:
    """``{item: label}`` from a JSON or CSV labels file (see the module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read the labels file {path}: {e}") from None
    raw: dict[str, Any]
    if path.suffix.lower() == ".csv":
        rows = list(csv.reader(io.StringIO(text)))
        if not rows or [c.strip().lower() for c in rows[0][:2]] != ["item", "label"]:
            raise DataError(f"{path}: a labels CSV starts with the header 'item,label'")
        raw = {}
        for i, row in enumerate(rows[1:], start=2):
            if not row or not any(c.strip() for c in row):
                continue
            if len(row) < 2 or not row[0].strip():
                raise DataError(f"{path} line {i}: expected 'item,label', got {row!r}")
            if row[0].strip() in raw:
                raise DataError(f"{path} line {i}: item {row[0].strip()!r} is labelled twice")
            raw[row[0].strip()] = row[1]
    else:
        try:
            obj = json.loads(text, object_pairs_hook=distinct_keys)
        except DataError as e:
            raise DataError(f"{path}: {e}") from None
        except ValueError as e:
            raise DataError(
                f"{path} is not JSON ({e}); a labels file is {{ITEM: LABEL}} or a CSV with 'item,label'"
            ) from None
        if isinstance(obj, dict) and isinstance(obj.get("labels"), dict):
            obj = obj["labels"]
        if not isinstance(obj, dict):
            raise DataError(f'{path}: a labels file is a JSON object {{ITEM: LABEL}} (or {{"labels": {{...}}}})')
        raw = obj
    out = {}
    for item, label in raw.items():
        if not isinstance(label, (str, int, float, bool)) or (isinstance(label, str) and not label.strip()):
            raise DataError(f"{path}: item {item!r} has label {label!r}; a label is true/false, a number or text")
        out[str(item)] = normalise_label(label)
    if not out:
        raise DataError(f"{path} holds no labels")
    return out


def human_as_run(run: RunLabels, human: dict[str, str], source: str) -> tuple[RunLabels, list[str]]:
    """Human labels keyed like ``run``'s trials, and the items that name no judged trial of it."""
    by_sample: dict[str, list[Key]] = {}
    for key in run.labels:
        by_sample.setdefault(key[0], []).append(key)
    out = RunLabels(source=source)
    unknown = []
    for item, label in human.items():
        parts = item.split("|")
        if len(parts) == 3:
            full: Key = (parts[0], parts[1], parts[2])
            keys = [full] if full in run.labels else []
        else:
            keys = by_sample.get(item, [])
            if len(keys) > 1:
                raise DataError(
                    f"{source}: item {item!r} names sample {item} of which {run.source} has "
                    f"{len(keys)} judged trials; write it as SAMPLE_ID|MODEL|CONDITION "
                    f"(e.g. {'|'.join(keys[0])})"
                )
        if not keys:
            unknown.append(item)
            continue
        key = keys[0]
        if key in out.labels:
            raise DataError(f"{source}: the trial {'|'.join(key)} is labelled twice")
        out.labels[key] = label
        out.groups[key] = run.groups[key]
    return out, unknown


def compare_labels(
    pairs: list[tuple[str, str]], a_name: str = "A", b_name: str = "B", group: str = "all"
) -> dict[str, Any]:
    """Kappa, observed agreement and the confusion matrix of (A label, B label) pairs; disjoint label sets refused."""
    la, lb = [p[0] for p in pairs], [p[1] for p in pairs]
    sa, sb = set(la), set(lb)
    if not sa & sb:
        raise DataError(
            f"the label sets of {a_name} and {b_name} share no label{'' if group == 'all' else ' in ' + group}"
            f": {sorted(sa)} against {sorted(sb)}; they do not answer the same question (compare "
            "judges of the same verdict field)"
        )
    labels = sorted(sa | sb)
    confusion = {x: {y: 0 for y in labels} for x in labels}
    for x, y in pairs:
        confusion[x][y] += 1
    n = len(pairs)
    return {
        "n": n,
        "labels": labels,
        "kappa": cohen_kappa(la, lb),
        "observed_agreement": sum(x == y for x, y in pairs) / n,
        "confusion": confusion,
    }


def judge_agreement(a: str | Path, b: str | Path, *, by: str | None = None) -> dict[str, Any]:
    """Cohen's kappa and the confusion matrix (rows: A's label, columns: B's) of A and B (see the module doc)."""
    a, b = Path(a), Path(b)
    if not a.is_dir():
        raise DataError(f"A ({a}) must be a run directory made with --judge; B may be a run or a labels file")
    ra = run_labels(a, by=by)
    unknown: list[str] = []
    if b.is_dir():
        rb = run_labels(b, by=by)
        kind = "runs"
    elif b.is_file():
        rb, unknown = human_as_run(ra, read_human_labels(b), str(b))
        kind = "labels"
    else:
        raise DataError(f"B ({b}) is neither a run directory nor a labels file")
    shared = sorted(set(ra.labels) & set(rb.labels))
    differ = [k for k in shared if kind == "runs" and ra.answers.get(k) != rb.answers.get(k)]
    matched = [k for k in shared if k not in set(differ)]
    if not matched:
        why = f" ({len(differ)} matched trials have different answers)" if differ else ""
        raise DataError(
            f"no trial is labelled by both {a} ({len(ra.labels)} judged, e.g. {'|'.join(next(iter(ra.labels)))}) "
            f"and {b} ({len(rb.labels)} labelled){why}; trials are matched by sample, model and "
            "condition" + (", labels by SAMPLE_ID or SAMPLE_ID|MODEL|CONDITION" if kind == "labels" else "")
        )
    groups: dict[str, list[tuple[str, str]]] = {}
    for k in matched:
        groups.setdefault(ra.groups[k], []).append((ra.labels[k], rb.labels[k]))
    result: dict[str, Any] = {
        "a": str(a),
        "b": str(b),
        "b_kind": kind,
        "by": by,
        "matched": len(matched),
        "only_in_a": len(set(ra.labels) - set(rb.labels)),
        "only_in_b": len(set(rb.labels) - set(ra.labels)) + len(unknown),
        "unknown_items": unknown[:20],
        "answers_differ": len(differ),
        "unlabelled_a": dict(ra.unlabelled),
        "unlabelled_b": dict(rb.unlabelled),
        "groups": {g: compare_labels(ps, str(a), str(b), g) for g, ps in sorted(groups.items())},
        "items": [{"item": "|".join(k), "a": ra.labels[k], "b": rb.labels[k]} for k in matched],
    }
    if by:
        result["overall"] = compare_labels([p for ps in groups.values() for p in ps], str(a), str(b), "all")
    else:
        result["overall"] = result["groups"]["all"]
    return result


# --------------------------------------------------------------------------- the terminal's lines


def _kappa(x: float | None) -> str:
    return "undefined (one label throughout)" if x is None else f"{x:.3f}"


def matrix_lines(cmp: dict[str, Any]) -> list[str]:
    labels = cmp["labels"]
    width = max(12, *(len(x) + 2 for x in labels))
    head = "A \\ B".ljust(width) + "".join(x.rjust(width) for x in labels)
    return [head] + [x.ljust(width) + "".join(str(cmp["confusion"][x][y]).rjust(width) for y in labels) for x in labels]


def agreement_lines(res: dict[str, Any]) -> list[str]:
    lines = [
        f"A: {res['a']}",
        f"B: {res['b']} ({'a judged run' if res['b_kind'] == 'runs' else 'labels file'})",
        f"matched {res['matched']}; only in A {res['only_in_a']}; only in B {res['only_in_b']}; "
        f"answers differ (left out) {res['answers_differ']}",
    ]
    for name, cmp in res["groups"].items():
        title = "all" if name == "all" and not res["by"] else f"{res['by']} = {name}"
        lines += [
            "",
            f"[{title}] n = {cmp['n']}, Cohen's kappa = {_kappa(cmp['kappa'])}, observed agreement = "
            f"{100 * cmp['observed_agreement']:.1f}%",
            *matrix_lines(cmp),
        ]
    if res["by"]:
        o = res["overall"]
        lines += ["", f"[overall] n = {o['n']}, Cohen's kappa = {_kappa(o['kappa'])}"]
    return lines
