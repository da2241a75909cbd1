"""The paper's four accuracies (§4.3) and their checks, over targets with their sub-questions.

For targets q = 1..N (every planned target), with m_q sub-questions each, a trial is *right* when it
completed (status ok), parsed, and matches a valid gold answer; anything else (an API error, a
refusal, a timeout, a trial never attempted, an unparseable answer, an invalid gold kept as wrong,
a sub-question whose trial is missing) is wrong. Then:

- ``A_target`` = (1/N) sum_q right_q
- ``A_sub``    = sum_q sum_j right_qj / sum_q m_q  (pooled over all sub-questions)
- ``A_faith``  = (1/N) sum_q right_q * prod_j right_qj  (primary; 0 for a model that answers nothing)
- ``A_cons``   = (1/|C|) sum_{q in C} (1/m_q) sum_j right_qj,  C = {q : right_q}; undefined (None) when C
  is empty; a reference only, not comparable across models (C depends on the model)

A target with no sub-questions (m_q = 0) has the empty product 1 and consistency 1 (vacuous); such
targets are counted (``n_vacuous``). Every rate carries a Wilson 95% interval; A_cons, a mean of
fractions, carries a percentile interval from a bootstrap over source videos. The three rates also carry
an interval over source videos (``video_ci_low``/``video_ci_high``, ``n_videos``: Wilson's at the videos'
effective size, ``score.stats.cluster_wilson_interval``): targets of one video are correlated, so the Wilson
interval over targets (which treats them as independent) is too narrow when a model's errors cluster by
video. With a single source video there is no video-level interval (None, as for A_cons): nothing between
videos can be measured. Asserted on every
report: A_faith <= A_target and A_faith <= A_target * A_cons (and, with C empty, A_faith = 0). Not
asserted: A_faith <= A_sub, which can fail (one faithful target with one sub, one wrong target with
nine wrong subs: A_faith 0.5, A_sub 0.1).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from vidaudit.sdk import (
    MIN_SOURCES_VERDICT,
    cluster_wilson_interval,
    paired_bootstrap,
    seed_from,
    wilson_interval,
)

YES, NO = "Yes", "No"
#: differences smaller than this (in accuracy points) are reported as ties (paper H.10)
TIE_POINTS = 2.0
N_BOOT_PAIRED = 10_000
N_BOOT_CONS = 2_000
#: resamples of the video-level bootstrap of A_cons (``video_interval``)
N_BOOT_VIDEO = 2_000
EPS = 1e-12
#: fewest source videos behind a paired verdict (``score.stats.MIN_SOURCES_VERDICT``: no test over videos as the
#: units reaches 5% two-sided with fewer)
MIN_VIDEOS_VERDICT = MIN_SOURCES_VERDICT


@dataclass(frozen=True)
class SubOutcome:
    gold: str | None  # "Yes", "No", or None when the gold answer is invalid
    right: bool
    probe_type: str | None = None
    written: str | None = None  # the answer as the data writes it, when Yes/No (also for an item kept as wrong)

    @property
    def label(self) -> str | None:
        """The item's own Yes/No answer, whatever a policy decided about it (what label balance counts)."""
        return self.written or self.gold


@dataclass(frozen=True)
class TargetOutcome:
    target: str  # the target's sample id
    cluster: Hashable  # source video: the bootstrap's resampling unit
    gold: str | None
    right: bool
    subs: tuple[SubOutcome, ...] = ()
    written: str | None = None  # as SubOutcome.written

    @property
    def label(self) -> str | None:
        return self.written or self.gold

    @property
    def faithful(self) -> bool:
        return self.right and all(s.right for s in self.subs)

    @property
    def consistency(self) -> float:
        return sum(s.right for s in self.subs) / len(self.subs) if self.subs else 1.0


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson_interval(k, n)
    return {
        "value": k / n if n else None,
        "k": int(k),
        "n": int(n),
        "ci_low": lo if n else None,
        "ci_high": hi if n else None,
    }


def video_interval(
    values: Sequence[float], clusters: Sequence[Hashable], *, n_boot: int = N_BOOT_VIDEO, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of mean(values) from a bootstrap that resamples whole source videos (the
    project's clustered bootstrap, ``score.stats.paired_bootstrap``, against a zero arm): the ratio of the
    resampled videos' sums to their sizes, so items of one video stay together."""
    res = paired_bootstrap([0.0] * len(values), list(values), list(clusters), n_boot=n_boot, seed=seed)
    return res.ci_low, res.ci_high


def _with_video_interval(
    block: dict[str, Any], outcomes: Sequence[bool], clusters: Sequence[Hashable]
) -> dict[str, Any]:
    """``block`` with the rate's interval over source videos: Wilson's at the videos' effective size
    (``score.stats.cluster_wilson_interval``, as the stress probes count shared sources), never narrower than
    Wilson's over the items. A percentile bootstrap over videos gave a zero-width interval whenever every video
    had the same rate (40 of 80 targets, 4 of 8 on each of 10 videos: [50.0, 50.0]) and covered 48-50% at two
    videos (benchmarks/cluster_coverage.py)."""
    n_videos = len(set(clusters))
    if n_videos < 2:  # one video: nothing between videos to measure, so no claim about the model beyond it
        return {**block, "video_ci_low": None, "video_ci_high": None, "n_videos": n_videos}
    iv = cluster_wilson_interval(outcomes, clusters)
    return {**block, "video_ci_low": iv.ci_low, "video_ci_high": iv.ci_high, "n_videos": n_videos}


def a_target(outs: Sequence[TargetOutcome]) -> dict[str, Any]:
    return _with_video_interval(
        rate(sum(o.right for o in outs), len(outs)), [o.right for o in outs], [o.cluster for o in outs]
    )


def a_sub(outs: Sequence[TargetOutcome]) -> dict[str, Any]:
    subs = [(s.right, o.cluster) for o in outs for s in o.subs]
    return _with_video_interval(rate(sum(r for r, _ in subs), len(subs)), [r for r, _ in subs], [c for _, c in subs])


def a_faith(outs: Sequence[TargetOutcome]) -> dict[str, Any]:
    return _with_video_interval(
        rate(sum(o.faithful for o in outs), len(outs)), [o.faithful for o in outs], [o.cluster for o in outs]
    )


def a_cons(outs: Sequence[TargetOutcome], *, n_boot: int = N_BOOT_CONS, seed: int = 0) -> dict[str, Any]:
    c = [o for o in outs if o.right]
    base = {"n_correct_targets": len(c), "n_vacuous": sum(not o.subs for o in c), "comparable_across_models": False}
    if not c:
        return {
            "value": None,
            "ci_low": None,
            "ci_high": None,
            **base,
            "note": "undefined: no target is answered correctly",
        }
    value = sum(o.consistency for o in c) / len(c)
    if len({o.cluster for o in c}) < 2:  # one video: no between-video variation to resample
        return {"value": value, "ci_low": None, "ci_high": None, **base}
    lo, hi = video_interval([o.consistency for o in c], [o.cluster for o in c], n_boot=n_boot, seed=seed)
    return {"value": value, "ci_low": lo, "ci_high": hi, **base}


def sub_by_probe(outs: Sequence[TargetOutcome]) -> dict[str, dict[str, Any]]:
    """A_sub per probe type (``unknown`` collects sub-questions without one)."""
    groups: dict[str, list[bool]] = {}
    for o in outs:
        for s in o.subs:
            groups.setdefault(s.probe_type or "unknown", []).append(s.right)
    return {k: rate(sum(v), len(v)) for k, v in sorted(groups.items())}


def balanced_accuracy(items: Sequence[tuple[str | None, bool]]) -> dict[str, Any]:
    """Mean of the recalls on Yes-gold and No-gold items (items with invalid gold are left out and counted)."""
    yes = [r for g, r in items if g == YES]
    no = [r for g, r in items if g == NO]
    out: dict[str, Any] = {
        "n_yes": len(yes),
        "n_no": len(no),
        "n_invalid_gold": sum(g is None for g, _ in items),
        "recall_yes": sum(yes) / len(yes) if yes else None,
        "recall_no": sum(no) / len(no) if no else None,
    }
    out["value"] = (out["recall_yes"] + out["recall_no"]) / 2 if yes and no else None
    return out


def balanced(outs: Sequence[TargetOutcome]) -> dict[str, dict[str, Any]]:
    return {
        "target": balanced_accuracy([(o.gold, o.right) for o in outs]),
        "sub": balanced_accuracy([(s.gold, s.right) for o in outs for s in o.subs]),
    }


def accuracies(outs: Sequence[TargetOutcome], *, seed: int = 0) -> dict[str, Any]:
    return {
        "a_target": a_target(outs),
        "a_sub": a_sub(outs),
        "a_faith": a_faith(outs),
        "a_cons": a_cons(outs, seed=seed),
    }


def invariants(acc: dict[str, Any], outs: Sequence[TargetOutcome]) -> list[dict[str, Any]]:
    """The checks asserted on every report (see the module docstring); each with both sides and ``holds``."""
    t, f, c = acc["a_target"], acc["a_faith"], acc["a_cons"]
    n = len(outs)
    checks = [{"name": "a_faith <= a_target", "lhs": f["value"], "rhs": t["value"], "holds": f["k"] <= t["k"]}]
    if c["value"] is None:
        checks.append(
            {"name": "a_faith == 0 when no target is right", "lhs": f["value"], "rhs": 0.0, "holds": f["k"] == 0}
        )
    else:
        rhs = t["value"] * c["value"]
        checks.append(
            {"name": "a_faith <= a_target * a_cons", "lhs": f["value"], "rhs": rhs, "holds": f["value"] <= rhs + EPS}
        )
    all_subs = sum(all(s.right for s in o.subs) for o in outs)
    checks.append(
        {
            "name": "a_faith <= share of targets with every sub-question right",
            "lhs": f["value"],
            "rhs": all_subs / n if n else None,
            "holds": f["k"] <= all_subs,
        }
    )
    return checks


# --------------------------------------------------------------------------- references


def majority_labels(outs: Sequence[TargetOutcome]) -> dict[str, str]:
    """The majority gold label per level of the loaded data (a tie goes to Yes)."""

    def major(golds: list[str | None]) -> str:
        return YES if golds.count(YES) >= golds.count(NO) else NO

    return {"target": major([o.gold for o in outs]), "sub": major([s.gold for o in outs for s in o.subs])}


def constant_outcomes(outs: Sequence[TargetOutcome], target_label: str, sub_label: str) -> list[TargetOutcome]:
    """What a model answering ``target_label`` to every target and ``sub_label`` to every sub-question scores."""
    return [
        TargetOutcome(
            o.target,
            o.cluster,
            o.gold,
            o.gold is not None and o.gold == target_label,
            tuple(SubOutcome(s.gold, s.gold is not None and s.gold == sub_label, s.probe_type) for s in o.subs),
        )
        for o in outs
    ]


def chance_expectation(outs: Sequence[TargetOutcome]) -> dict[str, float | None]:
    """Expected accuracies of uniform Yes/No answers (an invalid gold is never right)."""
    if not outs:
        return {"a_target": None, "a_sub": None, "a_faith": None}
    valid_t = [o.gold is not None for o in outs]
    subs = [s for o in outs for s in o.subs]
    return {
        "a_target": 0.5 * sum(valid_t) / len(outs),
        "a_sub": 0.5 * sum(s.gold is not None for s in subs) / len(subs) if subs else None,
        "a_faith": sum(
            0.5 ** (1 + len(o.subs)) if o.gold is not None and all(s.gold is not None for s in o.subs) else 0.0
            for o in outs
        )
        / len(outs),
    }


# --------------------------------------------------------------------------- paired differences


def paired_difference(
    a: Sequence[TargetOutcome],
    b: Sequence[TargetOutcome],
    metric: str,
    *,
    labels: tuple[str, str] = ("a", "b"),
    n_boot: int = N_BOOT_PAIRED,
) -> dict[str, Any]:
    """metric(b) - metric(a) over the targets both systems were planned on, bootstrapped by source video.

    ``metric`` is ``a_target`` (target right) or ``a_faith`` (target and every sub-question right).
    A difference under ``TIE_POINTS`` points is a tie; otherwise, on fewer than ``MIN_VIDEOS_VERDICT``
    source videos, "too few videos" (one video's resamples are all that video: the interval had zero width
    and a one-target difference on one video read as "b higher"); else the verdict says which is higher
    when the 95% interval excludes 0, and "not significant" when it does not.
    """
    if metric not in ("a_target", "a_faith"):
        raise ValueError(f"paired differences are on a_target or a_faith, not {metric!r}")
    ia, ib = {o.target: o for o in a}, {o.target: o for o in b}
    shared = sorted(set(ia) & set(ib))
    if not shared:
        raise ValueError("the two systems share no target")

    def x(o: TargetOutcome) -> float:
        return float(o.right if metric == "a_target" else o.faithful)

    res = paired_bootstrap(
        [x(ia[t]) for t in shared],
        [x(ib[t]) for t in shared],
        [ia[t].cluster for t in shared],
        n_boot=n_boot,
        seed=seed_from("faithful-paired", metric, *labels),
    )
    points = 100.0 * res.estimate
    if abs(points) < TIE_POINTS:
        verdict = "tie"
    elif res.n_groups < MIN_VIDEOS_VERDICT:
        verdict = f"too few videos ({res.n_groups} < {MIN_VIDEOS_VERDICT})"
    elif res.ci_low > 0:
        verdict = f"{labels[1]} higher"
    elif res.ci_high < 0:
        verdict = f"{labels[0]} higher"
    else:
        verdict = "not significant"
    return {
        "metric": metric,
        "a": labels[0],
        "b": labels[1],
        "difference": f"{metric}(b) - {metric}(a)",
        "points": points,
        "verdict": verdict,
        "tie_threshold_points": TIE_POINTS,
        **res.to_dict(),
        "n_only_a": len(set(ia) - set(ib)),
        "n_only_b": len(set(ib) - set(ia)),
    }
