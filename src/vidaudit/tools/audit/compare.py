"""``vidaudit compare``: models from several audits side by side, with paired differences on shared samples.

Per part (a suite's dataset, e.g. ``counting`` or ``camera_motion``), each (audit, model) gets its per-trial
accuracy over every planned trial (a failed call is wrong), read from the part's ``scored_run.jsonl`` through the
same check ``report`` makes (``score.scored_run.read_checked``: a file edited, cut short or older than its run is
refused with the fix, ``vidaudit score RUN``), with a 95% interval counted over the items' sources: the suite names
each record's source (``Suite.source_of``: the video by default, the scene a camera moves over six ways in stress
camera_motion, a faithful item's source video), and items of one source answer alike, so the interval is Wilson's
at the sources' effective size (``score.stats.cluster_wilson_interval``; Wilson's over items where every source
gives one item), as the suites' reports count them. Two entries that share (sample, condition) pairs get the
paired difference of their accuracies with the bootstrap resampling the same sources
(``score.stats.paired_bootstrap``), and a note where they share fewer than ``score.stats.MIN_SOURCES_VERDICT`` (6):
no test over sources reaches 5% with fewer, and a bootstrap over so few covers less than its 95%. A trial that
needs a judge the audit did not have is in no accuracy and no pair, and is counted beside the entry (``unjudged``):
the contract's one rule (``core.contract.records.counted``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from vidaudit.core.contract.records import unjudged_text
from vidaudit.core.contract.suite import Suite, source_unit, sources_text
from vidaudit.core.errors import ConfigError
from vidaudit.core.registry import get_suite
from vidaudit.score.scored_run import read_checked
from vidaudit.score.stats import MIN_SOURCES_VERDICT, paired_bootstrap, source_interval
from vidaudit.tools.audit.profile import load_profile

N_BOOT = 2000


#: (sample, condition) -> (1.0 correct / 0.0 otherwise, the item's source: ``Suite.source_of``)
Outcomes = dict[tuple[str, str], tuple[float, tuple[str, str]]]


def _outcomes(run_dir: Path, data_dir: Path, suite: Suite) -> tuple[str, dict[str, Outcomes], dict[str, int]]:
    """The checksum of the run's checked scored file; per model, its ``Outcomes``; and per model, how many of its
    trials need a judge (left out of the outcomes, counted apart). ``data_dir``: the part's dataset, where the audit
    keeps it, for the staleness check; ``suite``: the part's, which names each record's source."""
    header, trials = read_checked(run_dir, data_dir=data_dir)
    out: dict[str, Outcomes] = {}
    unjudged: dict[str, int] = {}
    for t in trials:
        r = t.record
        if r.needs_judge:
            unjudged[r.model] = unjudged.get(r.model, 0) + 1
            continue
        out.setdefault(r.model, {})[(r.sample_id, r.condition)] = (1.0 if r.correct else 0.0, suite.source_of(r))
    return header.sha256, out, unjudged


def _labels(sources: Sequence[Path]) -> list[str]:
    names = [Path(s).name if Path(s).is_dir() else Path(s).parent.name for s in sources]
    return [n if names.count(n) == 1 else f"{n}#{i + 1}" for i, n in enumerate(names)]


def compare_profiles(sources: Sequence[str | Path]) -> dict[str, Any]:
    """Every part's entries (audit, model) with accuracy and interval, and the paired differences of each two."""
    if not sources:
        raise ConfigError("vidaudit compare needs at least one audit dir or profile.json")
    loaded = [load_profile(s) for s in sources]
    labels = _labels([Path(s) for s in sources])
    parts: dict[str, dict[str, Any]] = {}
    for label, (profile, root) in zip(labels, loaded, strict=True):
        for part in profile.parts:
            block = parts.setdefault(
                part.name, {"part": part.name, "suite": part.suite, "entries": [], "paired": [], "_outcomes": {}}
            )
            scored, by_model, unjudged_of = _outcomes(root / part.run_dir, root / part.data_dir, get_suite(part.suite))
            current = part.scored_sha256 == scored  # the profile's figures were read from this very scored file
            if not current:
                block.setdefault("notes", []).append(
                    f"{label}: the profile's figures are older than the run's scores (scored again since the audit "
                    "wrote profile.json) and are left out; re-run the audit (it resumes) to refresh them"
                )
            for row in profile.rows:
                key = f"{label}:{row.model}"
                outcomes, unjudged = by_model.get(row.model, {}), unjudged_of.get(row.model, 0)
                k, n = int(sum(v for v, _ in outcomes.values())), len(outcomes)
                iv = _interval(outcomes)
                block["entries"].append(
                    {
                        "entry": key,
                        "audit": label,
                        "model": row.model,
                        "budget": profile.budget,
                        "dataset_key": part.dataset_key,
                        "k": k,
                        "n": n,
                        "unjudged": unjudged,
                        "accuracy": k / n if n else None,
                        **iv,
                        "figures": [f.model_dump(mode="json") for f in row.figures.get(part.name, [])]
                        if current
                        else [],
                    }
                )
                block["_outcomes"][key] = outcomes
    if sum(len(b["entries"]) for b in parts.values()) < 2 and len(parts) <= 1:
        raise ConfigError("vidaudit compare needs two models: pass two audits, or an audit of several models")
    for block in parts.values():
        outs = block.pop("_outcomes")
        for a, b in combinations([e["entry"] for e in block["entries"]], 2):
            shared = sorted(set(outs[a]) & set(outs[b]))
            if not shared:
                block["paired"].append({"a": a, "b": b, "n_pairs": 0, "note": "no shared (sample, condition)"})
                continue
            res = paired_bootstrap(
                [outs[a][k][0] for k in shared],
                [outs[b][k][0] for k in shared],
                [outs[a][k][1] for k in shared],
                n_boot=N_BOOT,
            )
            unit = source_unit(outs[a][k][1] for k in shared)
            pair = {"a": a, "b": b, "difference": "accuracy_b - accuracy_a", **res.to_dict(), "group_unit": unit}
            if res.n_groups < MIN_SOURCES_VERDICT:
                pair["note"] = (
                    f"too few {unit}s for a verdict ({res.n_groups} < {MIN_SOURCES_VERDICT}): no test over them "
                    "reaches 5%, and a bootstrap over so few covers less than its 95%"
                )
            block["paired"].append(pair)
    return {"sources": [str(s) for s in sources], "labels": labels, "parts": list(parts.values())}


def _interval(outcomes: Outcomes) -> dict[str, Any]:
    """The entry's 95% interval over its items' sources (``cluster_wilson_interval``), what it counted
    (``ci_unit``: "item" where every source gives one item, else the sources' unit, "scene", "video", ...), how
    many sources and the design effect (1.0: Wilson's over items). No items: no interval."""
    values = list(outcomes.values())
    if not values:
        return {"ci_low": None, "ci_high": None, "ci_unit": "item", "n_sources": 0, "design_effect": None}
    return source_interval([v == 1.0 for v, _ in values], [src for _, src in values])


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def compare_lines(res: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for block in res["parts"]:
        lines.append(f"== {block['part']} ({block['suite']})")
        lines += [f"  note: {n}" for n in block.get("notes", [])]
        for e in block["entries"]:
            ci = "" if e["ci_low"] is None else f" [{_pct(e['ci_low'])}, {_pct(e['ci_high'])}]"
            over = f", interval over {sources_text(e['n_sources'], e['ci_unit'])}" if e["ci_low"] is not None else ""
            beside = f"; {unjudged_text(e['unjudged'])}" if e.get("unjudged") else ""
            lines.append(
                f"  {e['entry']:32s} {_pct(e['accuracy'])}{ci} ({e['k']}/{e['n']} trials{over}, "
                f"{e['budget']} budget, data {e['dataset_key'][:12]}{beside})"
            )
        for p in block["paired"]:
            if not p.get("n_pairs"):
                lines.append(f"  {p['b']} - {p['a']}: {p.get('note')}")
                continue
            lines.append(
                f"  {p['b']} - {p['a']}: {100 * p['estimate']:+.1f} points "
                f"[{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}] over {p['n_pairs']} paired trials "
                f"in {sources_text(p['n_groups'], p.get('group_unit', 'video'))}"
                + (f"; {p['note']}" if p.get("note") else "")
            )
    return lines
