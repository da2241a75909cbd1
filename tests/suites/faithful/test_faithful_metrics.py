"""Metric definitions on hand-made cases, and the invariants on random ones (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.suites.faithful import metrics as M
from vidaudit.suites.faithful.metrics import SubOutcome as S
from vidaudit.suites.faithful.metrics import TargetOutcome as T


def _t(
    name: str,
    right: bool,
    subs: list[bool],
    gold: str = "Yes",
    cluster: str = "v1",
    probes: list[str | None] | None = None,
) -> T:
    probes = probes or [None] * len(subs)
    return T(name, cluster, gold, right, tuple(S("Yes", r, p) for r, p in zip(subs, probes, strict=True)))


def test_the_four_accuracies_on_a_hand_made_case() -> None:
    outs = [
        _t("q1", True, [True, True]),  # faithful
        _t("q2", True, [True, False, False]),  # right target, one sub of three
        _t("q3", False, [True, True]),  # wrong target, right subs
        _t("q4", False, []),
    ]  # wrong target without subs
    acc = M.accuracies(outs)
    assert acc["a_target"]["value"] == 2 / 4 and acc["a_target"]["k"] == 2 and acc["a_target"]["n"] == 4
    assert acc["a_sub"]["value"] == 5 / 7  # pooled over all sub-questions, not per target
    assert acc["a_faith"]["value"] == 1 / 4  # over all targets
    assert acc["a_cons"]["value"] == pytest.approx((1 + 1 / 3) / 2)  # over the right targets only
    assert acc["a_cons"]["n_correct_targets"] == 2 and acc["a_cons"]["comparable_across_models"] is False
    for k in ("a_target", "a_sub", "a_faith"):
        assert acc[k]["ci_low"] <= acc[k]["value"] <= acc[k]["ci_high"]
    assert all(c["holds"] for c in M.invariants(acc, outs))


def test_a_model_that_answers_nothing_scores_zero_and_a_cons_is_undefined() -> None:
    outs = [_t(f"q{i}", False, [False, False]) for i in range(5)]
    acc = M.accuracies(outs)
    assert acc["a_faith"]["value"] == 0.0 and acc["a_target"]["value"] == 0.0
    assert acc["a_cons"]["value"] is None and "undefined" in acc["a_cons"]["note"]
    checks = M.invariants(acc, outs)
    assert all(c["holds"] for c in checks)
    assert any(c["name"].startswith("a_faith == 0") for c in checks)


def test_a_faith_can_exceed_a_sub_so_that_is_not_an_invariant() -> None:
    outs = [_t("q1", True, [True]), _t("q2", False, [False] * 9)]
    acc = M.accuracies(outs)
    assert acc["a_faith"]["value"] == 0.5 and acc["a_sub"]["value"] == 0.1
    assert all(c["holds"] for c in M.invariants(acc, outs))
    assert not any("a_sub" in c["name"] for c in M.invariants(acc, outs))


def test_a_target_without_sub_questions_is_vacuously_consistent() -> None:
    outs = [_t("q1", True, []), _t("q2", True, [False])]
    acc = M.accuracies(outs)
    assert acc["a_faith"]["value"] == 0.5 and acc["a_cons"]["value"] == 0.5 and acc["a_cons"]["n_vacuous"] == 1
    assert all(c["holds"] for c in M.invariants(acc, outs))


def test_invariants_catch_an_impossible_report() -> None:
    outs = [_t("q1", True, [True])]
    acc = M.accuracies(outs)
    acc["a_faith"] = M.rate(1, 1)
    acc["a_target"] = M.rate(0, 1)
    assert not M.invariants(acc, outs)[0]["holds"]


def test_probe_split_and_balanced_accuracy() -> None:
    outs = [
        T("q1", "v", "Yes", True, (S("Yes", True, "single_fact"), S("No", False, "ordering"))),
        T("q2", "v", "No", False, (S("No", True, "single_fact"), S("Yes", True, "ordering"))),
    ]
    split = M.sub_by_probe(outs)
    assert split["single_fact"]["value"] == 1.0 and split["ordering"]["value"] == 0.5
    bal = M.balanced(outs)
    assert bal["target"]["value"] == 0.5 and bal["target"]["recall_yes"] == 1.0 and bal["target"]["recall_no"] == 0.0
    assert bal["sub"]["value"] == pytest.approx((1.0 + 0.5) / 2)
    assert M.balanced_accuracy([("Yes", True)])["value"] is None  # one class only: undefined


def test_majority_reference_is_recomputed_from_the_loaded_labels() -> None:
    outs = [
        T("q1", "v", "Yes", False, (S("No", False), S("No", False), S("Yes", False))),
        T("q2", "v", "Yes", False, (S("No", False),)),
        T("q3", "v", "No", False, (S("No", False),)),
    ]
    labels = M.majority_labels(outs)
    assert labels == {"target": "Yes", "sub": "No"}
    maj = M.accuracies(M.constant_outcomes(outs, labels["target"], labels["sub"]))
    assert maj["a_target"]["value"] == 2 / 3 and maj["a_sub"]["value"] == 4 / 5
    assert maj["a_faith"]["value"] == 1 / 3  # only q2 has every answer equal to the majority
    invalid = [T("q", "v", None, False, (S(None, False),))]  # invalid gold is never right, even for a constant
    assert M.accuracies(M.constant_outcomes(invalid, "Yes", "Yes"))["a_target"]["value"] == 0.0


def test_chance_expectation() -> None:
    outs = [_t("q1", False, [False] * 4), _t("q2", False, [False] * 2)]
    exp = M.chance_expectation(outs)
    assert exp["a_target"] == 0.5 and exp["a_sub"] == 0.5
    assert exp["a_faith"] == pytest.approx((0.5**5 + 0.5**3) / 2)


def test_paired_differences_report_ties_under_two_points() -> None:
    a = [_t(f"q{i}", i % 2 == 0, [True], cluster=f"v{i % 5}") for i in range(100)]
    b_same = [_t(f"q{i}", (i % 2 == 0) if i != 1 else True, [True], cluster=f"v{i % 5}") for i in range(100)]
    d = M.paired_difference(a, b_same, "a_target", labels=("A", "B"), n_boot=500)
    assert d["points"] == pytest.approx(1.0) and d["verdict"] == "tie" and d["n_groups"] == 5
    b_better = [_t(f"q{i}", True, [True], cluster=f"v{i % 5}") for i in range(100)]
    d = M.paired_difference(a, b_better, "a_faith", labels=("A", "B"), n_boot=500)
    # 5 videos, B better in each: a sign flip per video reaches 2 * 0.5^5 = 6.25% at best, so no verdict
    assert d["points"] == pytest.approx(50.0) and d["verdict"] == "too few videos (5 < 6)" and d["n_groups"] == 5
    a6 = [_t(f"q{i}", i % 2 == 0, [True], cluster=f"v{i % 6}") for i in range(120)]
    b6 = [_t(f"q{i}", True, [True], cluster=f"v{i % 6}") for i in range(120)]
    d = M.paired_difference(a6, b6, "a_faith", labels=("A", "B"), n_boot=500)
    assert d["points"] == pytest.approx(50.0) and d["verdict"] == "B higher" and d["ci_low"] > 0
    with pytest.raises(ValueError):
        M.paired_difference(a, [_t("other", True, [])], "a_target")


_sub = st.builds(S, st.sampled_from(["Yes", "No", None]), st.booleans(), st.sampled_from(["single_fact", "ordering"]))
_target = st.builds(
    T,
    st.uuids().map(str),
    st.sampled_from(["v1", "v2", "v3"]),
    st.sampled_from(["Yes", "No"]),
    st.booleans(),
    st.lists(_sub, max_size=6).map(tuple),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_target, min_size=1, max_size=25))
def test_invariants_hold_on_any_outcomes(outs) -> None:
    acc = M.accuracies(outs, seed=1)
    assert all(c["holds"] for c in M.invariants(acc, outs))
    assert acc["a_faith"]["value"] <= acc["a_target"]["value"]
    if acc["a_cons"]["value"] is not None:
        assert acc["a_faith"]["value"] <= acc["a_target"]["value"] * acc["a_cons"]["value"] + 1e-12
    else:
        assert acc["a_faith"]["value"] == 0.0
    # A_faith by its definition: the share of targets right with every sub-question right
    assert acc["a_faith"]["k"] == sum(o.right and all(s.right for s in o.subs) for o in outs)


def test_the_video_level_interval_widens_when_a_video_succeeds_or_fails_together() -> None:
    # 10 videos x 8 targets; five videos entirely faithful, five entirely not: A_faith 50% either way, but the
    # effective sample is 10 videos, not 80 targets
    clustered = [_t(f"v{v}q{i}", v < 5, [v < 5], cluster=f"v{v}") for v in range(10) for i in range(8)]
    mixed = [_t(f"v{v}q{i}", i % 2 == 0, [i % 2 == 0], cluster=f"v{v}") for v in range(10) for i in range(8)]
    a, b = M.a_faith(clustered), M.a_faith(mixed)
    assert a["value"] == b["value"] == 0.5 and a["ci_low"] == b["ci_low"]  # Wilson cannot tell them apart
    assert a["n_videos"] == b["n_videos"] == 10
    wide, narrow = a["video_ci_high"] - a["video_ci_low"], b["video_ci_high"] - b["video_ci_low"]
    assert wide > a["ci_high"] - a["ci_low"] + 0.1  # wider than Wilson by more than 10 points
    # every video at 50%: no spread between videos, so the targets count as independent (Wilson over all 80);
    # the percentile bootstrap gave a zero-width [50.0, 50.0] here
    assert (b["video_ci_low"], b["video_ci_high"]) == (b["ci_low"], b["ci_high"]) and narrow > 0.2
    assert a["video_ci_low"] <= 0.5 <= a["video_ci_high"]
    assert M.a_faith(clustered) == a  # the same numbers each time
    sub = M.a_sub(clustered)
    assert sub["video_ci_high"] - sub["video_ci_low"] > sub["ci_high"] - sub["ci_low"]
    assert M.a_faith([])["video_ci_low"] is None


def test_one_video_has_no_video_interval_and_no_paired_verdict() -> None:
    """Six targets of one video, one of them wrong under A: the bootstrap over that one video resampled it to
    itself, a zero-width interval ([0.833, 0.833]) read as "B higher" on a one-target difference."""
    a = [_t(f"q{i}", i != 0, [True], cluster="v0") for i in range(6)]
    b = [_t(f"q{i}", True, [True], cluster="v0") for i in range(6)]
    acc = M.accuracies(a)
    for key in ("a_target", "a_sub", "a_faith"):
        assert acc[key]["n_videos"] == 1 and acc[key]["video_ci_low"] is None and acc[key]["video_ci_high"] is None
        assert acc[key]["ci_low"] is not None  # Wilson over the items stays
    assert acc["a_cons"]["value"] == 1.0 and acc["a_cons"]["ci_low"] is None and acc["a_cons"]["ci_high"] is None
    for metric in ("a_target", "a_faith"):
        d = M.paired_difference(a, b, metric, labels=("A", "B"), n_boot=500)
        assert d["points"] == pytest.approx(100 / 6) and d["n_groups"] == 1
        assert d["verdict"] == "too few videos (1 < 6)"


@given(
    st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.lists(st.booleans(), max_size=3)), min_size=1, max_size=30)
)
@settings(max_examples=60, deadline=None)
def test_the_video_interval_is_a_proper_interval_for_any_outcomes(rows) -> None:
    outs = [_t(f"q{i}", r, subs, cluster=f"v{v}") for i, (v, r, subs) in enumerate(rows)]
    acc = M.accuracies(outs)
    for key in ("a_target", "a_faith", "a_sub"):
        block = acc[key]
        if block["n"]:
            assert block["n_videos"] == len({o.cluster for o in outs if key != "a_sub" or o.subs})
            if block["n_videos"] == 1:  # one video resamples to itself: no interval
                assert block["video_ci_low"] is None and block["video_ci_high"] is None
                continue
            assert 0.0 <= block["video_ci_low"] <= block["video_ci_high"] <= 1.0
            if len({o.cluster for o in outs}) == 1 or block["value"] in (0.0, 1.0):
                pass
            else:
                assert block["video_ci_low"] < block["video_ci_high"] or all(
                    M.accuracies([o for o in outs if o.cluster == c])[key]["value"] in (None, block["value"])
                    for c in {o.cluster for o in outs}
                )


def test_the_audit_profile_carries_the_interval_over_videos() -> None:
    """``vidaudit audit``'s profile put Wilson's interval over targets beside A_faith, the one the report says not
    to read for claims about a model when targets of one video succeed or fail together."""
    from vidaudit.core.contract.profile import AuditPart
    from vidaudit.suites.faithful.audit import profile_figures

    clustered = [_t(f"v{v}q{i}", v < 5, [v < 5], cluster=f"v{v}") for v in range(10) for i in range(8)]
    one_video = [_t(f"q{i}", i % 2 == 0, [True], cluster="v0") for i in range(6)]
    detail = {"m": {"c": M.accuracies(clustered)}, "one": {"c": M.accuracies(one_video)}}
    part = AuditPart(name="faithful", preset="smoke", conditions=("c",))
    figs = {f.name: f for f in profile_figures(part, {"detail": detail}).by_model["m"]}
    acc = detail["m"]["c"]["a_faith"]
    faith = next(f for name, f in figs.items() if name.lower().startswith("a_faith"))
    assert (
        (faith.ci_low, faith.ci_high) == (acc["video_ci_low"], acc["video_ci_high"]) != (acc["ci_low"], acc["ci_high"])
    )
    assert faith.note == "interval over 10 source videos"
    lone = next(f for f in profile_figures(part, {"detail": detail}).by_model["one"] if f.name == faith.name)
    assert lone.note == "one source video: the interval speaks for that video only"
