"""From score records to report.json numbers: targets rebuilt with their sub-questions per model x condition.

A *system* is one (model, condition). Its targets are the target samples it has a record for (every
planned target, errored or not); each target's sub-questions come from the manifest
(``sub_sample_ids``), so a sub-question without a record under that system (never planned, e.g.
``--limit``) is counted wrong and named (``missing_sub_trials``); a target without a record whose
sub-questions have records is planned too, wrong and counted (``missing_target_trials``). Sub-question
records that no planned target lists belong to no target and are only counted (``orphan_sub_trials``).
Clusters are ``params["source_video_id"]`` (for the STRAND release: the source video parsed from the
file name, or the file with ``--cluster-by file``).

``results["metrics"][model][condition]`` holds the headline ``a_target``, ``a_sub``, ``a_faith`` and
``a_cons`` as plain numbers; ``results["budget"]`` every system's calls, frames and tokens per question
and per stage, H.12's accounting, tokens per frame and latency split, and the comparisons of framework and
end-to-end runs matched by frames, calls or tokens; ``results["interventions"]`` D.6's clutter-failure rate and
drop-one-gold re-answer (``framework.interventions``); ``results["detail"]`` the same with counts and intervals, the probe-type
split, balanced accuracy, completion and parse failures, and the invariants (a failed invariant
raises: it would be a bug).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import vidaudit.suites.faithful.metrics as M
from vidaudit.sdk import DataError, Sample, ScoreRecord, seed_from
from vidaudit.suites.faithful.framework.budget import budgets
from vidaudit.suites.faithful.framework.interventions import clutter_failures, drop_one_gold, options_of
from vidaudit.suites.faithful.framework.retrieval_eval import gold_entities, summarise
from vidaudit.suites.faithful.framework.spec import VARIANT_TITLES, variant_of
from vidaudit.suites.faithful.scoring import gold_of, written_of
from vidaudit.suites.faithful.world import source_video_of

REFERENCE_KINDS = {"majority": "majority", "question-only": "question_only", "caption-only": "caption_only"}
NOT_RUN = {
    "question_only": "not run: add --model question-only:SPEC (the text of each item only)",
    "caption_only": "not run: add --model caption-only:[captioner=SPEC2,]SPEC",
    "centre_frame": "not run: add --condition frames#1 (the frame at half the duration) for a model",
}
CAPABILITY_KEYS = ("facts", "probe_types", "domains", "world_records")


def _right(r: ScoreRecord | None) -> bool:
    return r is not None and r.status == "ok" and r.correct is True


def _cluster(s: Sample) -> str:
    return source_video_of(s.params, s.group_id)


def outcomes_for(
    arm: Mapping[str, ScoreRecord], samples: Mapping[str, Sample]
) -> tuple[list[M.TargetOutcome], dict[str, int]]:
    """Target outcomes of one system (its records by sample id) and the counts of missing and orphan trials.

    A target is planned under the system when the system has a record for it or for one of its sub-questions
    (a responses file that lost the target's line but kept its sub-questions' asked that group): a planned
    target without a record of its own is wrong and counted (``missing_target_trials``), as a planned
    sub-question without one is (``missing_sub_trials``). Leaving it out shrank the denominator: 11 of 11
    targets right, where the same file missing one sub-question line scored 11 of 12."""
    outs: list[M.TargetOutcome] = []
    missing = missing_targets = 0
    planned_targets = set()
    for sid in arm:
        s = samples.get(sid)
        if s is None:
            raise DataError(f"record for {sid!r} has no sample in the manifest; score against the run's dataset")
        role = s.params.get("role")
        if role == "target":
            planned_targets.add(sid)
        elif role == "sub":
            owner = samples.get(str(s.params.get("target_sample_id")))
            if owner is not None and owner.params.get("role") == "target":
                planned_targets.add(owner.sample_id)
    for sid in planned_targets:
        s = samples[sid]
        rec = arm.get(sid)
        missing_targets += rec is None
        subs = []
        for sub_id in s.params.get("sub_sample_ids") or []:
            sub = samples.get(sub_id)
            if sub is None:
                raise DataError(f"target {sid} lists sub-question {sub_id!r}, which the manifest lacks")
            r = arm.get(sub_id)
            missing += r is None
            subs.append(M.SubOutcome(gold_of(sub), _right(r), sub.params.get("probe_type"), written_of(sub)))
        outs.append(M.TargetOutcome(sid, _cluster(s), gold_of(s), _right(rec), tuple(subs), written_of(s)))
    listed = {sub_id for sid in planned_targets for sub_id in samples[sid].params.get("sub_sample_ids") or []}
    orphans = sum(1 for sid in arm if samples[sid].params.get("role") == "sub" and sid not in listed)
    outs.sort(key=lambda o: o.target)
    return outs, {"missing_sub_trials": missing, "missing_target_trials": missing_targets, "orphan_sub_trials": orphans}


def _trials(rs: Sequence[ScoreRecord]) -> dict[str, Any]:
    ok = [r for r in rs if r.status == "ok"]
    by_status = Counter(r.status for r in rs if r.status != "ok")
    unparse = sum(1 for r in ok if r.parse is not None and r.parse.method == "unparseable")
    tokens: Counter[str] = Counter()
    for r in rs:
        for k, v in r.usage.items():
            tokens[k] += int(v)
    return {
        "n_trials": len(rs),
        "n_ok": len(ok),
        "n_errored": dict(sorted(by_status.items())),
        "completion": len(ok) / len(rs) if rs else None,
        "n_unparseable": unparse,
        "parse_failure_rate": unparse / len(ok) if ok else None,
        "n_invalid_gold": sum(1 for r in ok if r.metrics.get("gold_valid") is False),
        "tokens": dict(sorted(tokens.items())),
        "cost_usd": sum(r.cost_usd or 0.0 for r in rs),
        "n_cost_unknown": sum(r.cost_usd is None for r in rs),
    }


def capabilities(samples: Sequence[Sample]) -> dict[str, bool]:
    """An analysis is available only if every sample's data supports it (the release supports none)."""
    caps = [s.params.get("capabilities") or {} for s in samples]
    return {k: bool(caps) and all(bool(c.get(k)) for c in caps) for k in CAPABILITY_KEYS}


def _balance(outs: Sequence[M.TargetOutcome]) -> dict[str, Any]:
    """Yes/No counts of the items' own answers per level. The Yes share is over the Yes/No answers (as the
    release counts: 497 of 1003), and an item kept as wrong counts by its own answer: a policy that makes
    an item never right does not change what its answer is (the share printed 44.1% under keep-as-wrong
    when such items counted as neither Yes nor No but stayed in the denominator)."""

    def block(items: list[M.TargetOutcome] | list[M.SubOutcome]) -> dict[str, Any]:
        labels = [x.label for x in items]
        y, n = labels.count(M.YES), labels.count(M.NO)
        return {
            "n": len(labels),
            "yes": y,
            "no": n,
            "invalid": len(labels) - y - n,
            "kept_as_wrong": sum(x.gold is None and x.label is not None for x in items),
            "yes_share": y / (y + n) if y + n else None,
        }

    out = {"target": block(list(outs)), "sub": block([s for o in outs for s in o.subs])}
    for p in sorted({s.probe_type or "unknown" for o in outs for s in o.subs}):
        out[f"sub_{p}"] = block([s for o in outs for s in o.subs if (s.probe_type or "unknown") == p])
    return out


def reference_kind(model: str, condition: str, role: str) -> str | None:
    """Which blind reference a system is: a ``role == "reference"`` model (by its provider), or a model
    under ``frames#1`` (the single centre frame); None for any other system."""
    if role == "reference":
        return REFERENCE_KINDS.get(model.split(":", 1)[0], model.split(":", 1)[0])
    if condition.split("/", 1)[0] == "frames#1" and role in ("model", "observer"):
        return "centre_frame"
    return None


def _reference(
    outs: Sequence[M.TargetOutcome], caps: dict[str, bool], runs: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    labels = M.majority_labels(outs)
    maj = M.constant_outcomes(outs, labels["target"], labels["sub"])
    acc = M.accuracies(maj, seed=seed_from("faithful-majority"))
    inv = M.invariants(acc, maj)
    _assert(inv, "the majority reference")
    block = {
        "labels": labels,
        **acc,
        "invariants": inv,
        "sub_by_probe": M.sub_by_probe(maj) if caps["probe_types"] else "not available: no probe types",
        "rule": "the majority gold label of the loaded data at each level (a tie goes to Yes), "
        "recomputed here, never copied from the paper",
    }
    out: dict[str, Any] = {"majority": block, "chance_expectation": M.chance_expectation(outs)}
    for kind, why in NOT_RUN.items():
        mine = [r for r in runs if r["kind"] == kind]
        out[kind] = mine if mine else why
    out["runs"] = list(runs)
    return out


def _assert(checks: Sequence[dict[str, Any]], who: str) -> None:
    bad = [c for c in checks if not c["holds"]]
    if bad:
        raise DataError(
            f"invariant broken for {who}: " + "; ".join(f"{c['name']} ({c['lhs']} vs {c['rhs']})" for c in bad)
        )


def retrieval_precision_recall(
    arms: Mapping[tuple[str, str], Mapping[str, ScoreRecord]], samples: Mapping[str, Sample]
) -> dict[str, dict[str, Any]]:
    """Per object-centric system: retrieval precision/recall of its target trials against the gold chains
    (``framework.retrieval_eval``); systems whose replies carry no retrieval header are absent."""
    out: dict[str, dict[str, Any]] = {}
    for (model, cond), arm in sorted(arms.items()):
        pairs = []
        for sid, r in arm.items():
            s = samples.get(sid)
            if s is None or s.params.get("role") != "target" or r.status != "ok" or "retrieved" not in r.metrics:
                continue
            # the entities its chain facts name (the ball too, for a pass); a count turns on every agent, an
            # identity on every agent its descriptions may denote (compose.scope)
            count = s.params.get("question_form") in ("count", "identity") and s.params.get("scope_names")
            gold = s.params["scope_names"] if count else s.params.get("chain_text") or []
            pairs.append((r.metrics["retrieved"], gold_entities(gold)))
        if pairs:
            out[f"{model} / {cond}"] = {"model": model, "condition": cond, **summarise(pairs)}
    return out


def paper_variants(models: Sequence[str]) -> dict[str, str]:
    """Each framework model's name in the paper (Table 7's variants A, B, C), however its spec was written."""
    out = {}
    for m in sorted(models):
        o = options_of(m)
        if o is not None and (v := variant_of(o)) is not None:
            out[m] = VARIANT_TITLES[v]
    return out


def not_available(caps: dict[str, bool]) -> dict[str, str]:
    out: dict[str, str] = {}
    if not caps["probe_types"]:
        out["sub_by_probe_type"] = "not available: the data has no probe types (single fact / ordering)"
    if not caps["facts"]:
        out["retrieval_precision_recall"] = "not available: the data has no fact chains (gold trajectories)"
        out["order_dependence"] = "not available: the data has no facts or ordering pairs"
    if not caps["domains"]:
        out["per_domain"] = "not available: the data names no domains"
    return out


def aggregate(
    records: Sequence[ScoreRecord],
    samples: Mapping[str, Sample],
    *,
    n_boot: int = M.N_BOOT_PAIRED,
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The faithful suite's report.json numbers (see the module docstring); ``usage``: the run store's
    per-stage usage, for the budget table (``framework.budget``)."""
    arms: dict[tuple[str, str], dict[str, ScoreRecord]] = defaultdict(dict)
    roles: dict[str, str] = {}
    for r in records:
        arm = arms[(r.model, r.condition)]
        if r.sample_id in arm:
            raise DataError(f"sample {r.sample_id!r} is scored twice for {r.model} / {r.condition}")
        arm[r.sample_id] = r
        roles.setdefault(r.model, r.model_role)
    used = [samples[sid] for arm in arms.values() for sid in arm if sid in samples]
    caps = capabilities(used)
    metrics: dict[str, dict[str, Any]] = defaultdict(dict)
    detail: dict[str, dict[str, Any]] = defaultdict(dict)
    outs_by: dict[tuple[str, str], list[M.TargetOutcome]] = {}
    all_targets: dict[str, M.TargetOutcome] = {}
    for (model, cond), arm in arms.items():
        outs, counts = outcomes_for(arm, samples)
        outs_by[(model, cond)] = outs
        for o in outs:
            all_targets.setdefault(o.target, o)
        acc = M.accuracies(outs, seed=seed_from("faithful-cons", model, cond))
        inv = M.invariants(acc, outs)
        _assert(inv, f"{model} / {cond}")
        metrics[model][cond] = {k: acc[k]["value"] for k in ("a_target", "a_sub", "a_faith", "a_cons")}
        detail[model][cond] = {
            "role": roles.get(model, "model"),
            "n_targets": len(outs),
            "n_subs": sum(len(o.subs) for o in outs),
            **acc,
            "sub_by_probe": M.sub_by_probe(outs) if caps["probe_types"] else "not available: no probe types",
            "balanced": M.balanced(outs),
            "trials": _trials(list(arm.values())),
            **counts,
            "invariants": inv,
        }
    evaluated = sorted(all_targets.values(), key=lambda o: o.target)
    runs = [
        {
            "kind": kind,
            "model": model,
            "condition": cond,
            **{k: detail[model][cond][k] for k in ("a_target", "a_sub", "a_faith", "a_cons")},
        }
        for (model, cond) in sorted(outs_by)
        if (kind := reference_kind(model, cond, roles.get(model, "model"))) is not None
    ]
    retrieval = retrieval_precision_recall(arms, samples) if caps["facts"] else {}
    interventions = {
        "clutter": clutter_failures(arms, samples),
        "drop_one_gold": drop_one_gold(arms, samples, caps["facts"]),
    }
    systems = sorted(outs_by)
    paired = []
    for a, b in combinations(systems, 2):
        for metric in ("a_target", "a_faith"):
            try:
                paired.append(
                    M.paired_difference(
                        outs_by[a], outs_by[b], metric, labels=(" / ".join(a), " / ".join(b)), n_boot=n_boot
                    )
                )
            except ValueError:
                continue  # no shared target
    target_samples = [s for s in samples.values() if s.params.get("role") == "target"]
    return {
        "n_records": len(records),
        "dataset": {
            "n_targets_in_manifest": len(target_samples),
            "n_subs_in_manifest": sum(1 for s in samples.values() if s.params.get("role") == "sub"),
            "n_targets_evaluated": len(evaluated),
            "n_videos": len({o.cluster for o in evaluated}),
            "balance": _balance(evaluated),
            "capabilities": caps,
        },
        "metrics": {m: dict(v) for m, v in metrics.items()},
        "detail": {m: dict(v) for m, v in detail.items()},
        "references": _reference(evaluated, caps, runs) if evaluated else {},
        "retrieval": retrieval,
        "interventions": interventions,
        "variants": paper_variants(list(metrics)),
        "paired_differences": paired,
        "budget": budgets(
            usage,
            {k: len({samples[sid].params.get("video_id") for sid in arm if sid in samples}) for k, arm in arms.items()},
            memory={
                k: [
                    int(r.metrics["memory_tokens"])
                    for r in arm.values()
                    if r.status == "ok" and "memory_tokens" in (r.metrics or {})
                ]
                for k, arm in arms.items()
            },
        ),
        "not_available": not_available(caps),
        "rules": {
            "errors": "wrong (every planned trial counts)",
            "tie_threshold_points": M.TIE_POINTS,
            "n_boot_paired": n_boot,
            "n_boot_a_cons": M.N_BOOT_CONS,
            "cluster": "source_video_id",
            "a_sub": "pooled over all sub-questions",
            "a_cons": "reference only; not comparable across models",
        },
    }
