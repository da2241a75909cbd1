"""D.6's two retrieval measurements, computed from a report's records: the clutter-failure rate and the drop-one-gold
re-answer.

Both compare two framework systems of one report that differ in one option, under the same condition, on
the targets both were planned on (a target is *right* when its trial completed, parsed and matches the gold):

- **clutter failures**: the filtered system (``retrieval=model`` or ``lexical``) against the same spec with
  ``retrieval=all`` (no filter, the full timeline). The rate is the share of targets where the no-filter
  system is wrong and the filtered one right (the paper's 12.4%: "the no-filter variant fails specifically
  because timeline clutter misleads the generator while the filtered variant succeeds"); the reverse share
  is reported beside it, since clutter is only one reading of such a difference.
- **drop one retrieved gold trajectory**: the system with ``drop_one=on`` (G answers with the first
  retrieved trajectory the question names removed; its reply header says ``dropped=...``) against the same
  spec without it. On the targets where the dropped trajectory is gold (it hits an entity the target's chain
  names, as D.6's retrieval precision reads it; data without chains: every target where something was
  dropped, labelled so), the target accuracy of both (the paper: 51.2% after the drop, near chance).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from vidaudit.sdk import ModelSpec, Sample, ScoreRecord
from vidaudit.suites.faithful.framework.query import denotes
from vidaudit.suites.faithful.framework.retrieval_eval import gold_entities
from vidaudit.suites.faithful.framework.spec import parse_spec

FILTERS = ("model", "lexical")


def options_of(model: str):
    """The framework options of an ``object-centric:...`` label (None: not one, or not parseable here)."""
    if not model.startswith("object-centric:"):
        return None
    try:
        return parse_spec(ModelSpec.parse(model))
    except Exception:  # noqa: BLE001 - a label this version cannot parse is simply not paired
        return None


def pairs(
    systems: Sequence[tuple[str, str]], key: str, variant: str, base: Sequence[str]
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """(base system, variant system) pairs of one condition whose specs differ only in ``key`` (variant: ``key``
    = ``variant``; base: one of ``base``)."""
    opts = {s: o for s in systems if (o := options_of(s[0])) is not None}
    out = []
    for v, ov in sorted(opts.items()):
        if getattr(ov, key) != variant:
            continue
        for b, ob in sorted(opts.items()):
            if b[1] == v[1] and b != v and getattr(ob, key) in base and replace(ov, **{key: getattr(ob, key)}) == ob:
                out.append((b, v))
    return out


def _right(arm: Mapping[str, ScoreRecord], sid: str) -> bool:
    r = arm.get(sid)
    return r is not None and r.status == "ok" and bool(r.correct)


def _targets(samples: Mapping[str, Sample], a: Mapping[str, ScoreRecord], b: Mapping[str, ScoreRecord]) -> list[str]:
    return sorted(
        sid for sid in set(a) & set(b) if (s := samples.get(sid)) is not None and s.params.get("role") == "target"
    )


def clutter_failures(
    arms: Mapping[tuple[str, str], Mapping[str, ScoreRecord]], samples: Mapping[str, Sample]
) -> list[dict[str, Any]]:
    out = []
    for base, var in pairs(list(arms), "retrieval", "all", FILTERS):
        ts = _targets(samples, arms[base], arms[var])
        if not ts:
            continue
        fails = sum(1 for t in ts if _right(arms[base], t) and not _right(arms[var], t))
        reverse = sum(1 for t in ts if _right(arms[var], t) and not _right(arms[base], t))
        out.append(
            {
                "filtered": base[0],
                "no_filter": var[0],
                "condition": base[1],
                "n_targets": len(ts),
                "clutter_failures": fails,
                "clutter_failure_rate": fails / len(ts),
                "filter_failures": reverse,
                "filter_failure_rate": reverse / len(ts),
                "rule": "targets where the no-filter system is wrong and the filtered one right / targets of both",
            }
        )
    return out


def _is_gold(dropped: list[dict], sample: Sample) -> bool:
    count = sample.params.get("question_form") in ("count", "identity") and sample.params.get("scope_names")
    gold = gold_entities(sample.params["scope_names"] if count else sample.params.get("chain_text") or [])
    return any(denotes(g, t) for g in gold for t in dropped)


def drop_one_gold(
    arms: Mapping[tuple[str, str], Mapping[str, ScoreRecord]], samples: Mapping[str, Sample], has_chains: bool
) -> list[dict[str, Any]]:
    out = []
    for base, var in pairs(list(arms), "drop_one", "on", ("off",)):
        ts = []
        for t in _targets(samples, arms[base], arms[var]):
            r = arms[var][t]
            dropped = (r.metrics or {}).get("dropped") or []
            if r.status == "ok" and dropped and (not has_chains or _is_gold(dropped, samples[t])):
                ts.append(t)
        n = len(ts)
        out.append(
            {
                "base": base[0],
                "dropped": var[0],
                "condition": base[1],
                "n_targets": n,
                "gold": "chain entities (D.6's rule)"
                if has_chains
                else "question-named (the data has no chains: not checked against gold)",
                "a_target_after_drop": sum(_right(arms[var], t) for t in ts) / n if n else None,
                "a_target_base": sum(_right(arms[base], t) for t in ts) / n if n else None,
            }
        )
    return out
