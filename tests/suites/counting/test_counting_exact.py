"""The paper's exact views: errors in every EM, the four Part B regions, per-N accuracy, Table 2's boundary."""

from __future__ import annotations

import json

import pytest

from vidaudit.core.contract.records import ParseResult, ScoreRecord
from vidaudit.core.contract.report import LineFigure, Section, Table
from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.suites.counting.aggregate import aggregate, count_bins, max_count_boundary, paired_difference
from vidaudit.suites.counting.scoring import score_trial
from vidaudit.suites.counting.sections_exact import (
    exact_sections,
    max_count_boundary_table,
    per_n_figure,
    per_n_table,
    regions_table,
)

WALLS = ("left", "right")


def sample(domain: str, n: int, f: float | None, seed: int) -> Sample:
    step = 1 / f if f else 1.5
    times = [2.0 + i * step for i in range(n)]
    events = tuple(Event(t=t, frame=int(t * 30), type="e", state_after=None, count=i + 1) for i, t in enumerate(times))
    params = {"domain": domain, "n_events": n, "frequency_hz": f, "seed": seed}
    if f is None:
        params["source"] = "repcount"
    return Sample(
        sample_id=f"{domain}-N{n}-F{f}-s{seed}",
        suite="counting",
        params=params,
        question="?",
        answer=n,
        trace=Trace(events=events),
        video=VideoRef(
            path="v.mp4",
            sha256=f"vid-{domain}-{n}-{f}-{seed}",
            fps=30.0,
            width=8,
            height=8,
            n_frames=720,
            duration_s=24.0,
        ),
    )


def ledger(s: Sample, count: int) -> str:
    lines = [f"- {e.t:.2f}s event, running count {e.count}" for e in s.trace.events]
    return "\n".join(lines + [f"Final answer: \\boxed{{{count}}}"])


def record(s: Sample, good: bool | None, model: str = "m", cond: str = "base", status: str = "ok") -> dict:
    """A flat record as report_run.record_for makes it; ``good`` None with status ok: unparseable."""
    n = s.answer
    text = None if status != "ok" else ("no idea" if good is None else ledger(s, n if good else n + 1))
    r = score_trial(s, text, status).to_dict()
    r.update(
        model=model,
        condition=cond,
        domain=s.params["domain"],
        n_events=n,
        frequency_hz=s.params["frequency_hz"],
        status=status,
        usage={},
        cost_usd=None,
        trial_id=f"t-{s.sample_id}-{cond}",
        suite="counting",
        model_role="model",
        seed=s.params["seed"],
    )
    return r


# --------------------------------------------------------------------------- regions (Table 1 Part B)


@pytest.fixture(scope="module")
def region_records() -> list[dict]:
    """LCLF always right, HCLF right on seeds 0-1, LCHF on seed 0, HCHF never; N = 0 right on seeds 0-2.
    One state-machine LCLF trial failed (api_error)."""
    out = []
    for dom in ("bounce_ball", "state_machine"):
        for seed in range(4):
            out.append(record(sample(dom, 0, 1.0, seed), seed < 3))
        for n in (1, 3, 5):
            for f in (1.0, 2.0, 2.5, 4.0):
                for seed in range(4):
                    low_n, low_f = n <= 3, f <= 2.0
                    good = {
                        (True, True): True,
                        (False, True): seed < 2,
                        (True, False): seed == 0,
                        (False, False): False,
                    }[(low_n, low_f)]
                    if dom == "state_machine" and (n, f, seed) == (1, 1.0, 0):
                        out.append(record(sample(dom, n, f, seed), None, status="api_error"))
                    else:
                        out.append(record(sample(dom, n, f, seed), good))
    return out


def test_all_four_regions(region_records: list[dict]) -> None:
    """Table 1: "Part B groups the N x F surface into four operating regions" and "Part B uses N <= 3,
    N >= 5, F <= 2.0, and F >= 2.5 Hz"; "Final EM includes no-event controls": the N = 0 controls
    (nominal F = 1.0 Hz) enter LCLF's em, and em_positive leaves them out."""
    reg = aggregate(region_records)["regions"]["m"]["base"]
    assert {
        "low_count_low_frequency",
        "high_count_low_frequency",
        "low_count_high_frequency",
        "high_count_high_frequency",
    } <= set(reg)
    bb = {k: reg[k]["bounce_ball"] for k in reg}
    lclf = bb["low_count_low_frequency"]
    assert (lclf["n"], lclf["n_controls"], lclf["n_em_positive"]) == (20, 4, 16)
    assert lclf["em"] == pytest.approx(19 / 20) and lclf["em_positive"] == 1.0
    assert bb["high_count_low_frequency"]["em"] == 0.5 == bb["high_count_low_frequency"]["em_positive"]
    assert bb["low_count_high_frequency"]["em"] == 0.25 and bb["low_count_high_frequency"]["n_controls"] == 0
    assert bb["high_count_high_frequency"]["em"] == 0.0
    for key in ("em", "precision", "recall", "f1", "vor", "acr", "rfr"):
        assert all(bb[r][key] is not None for r in bb)
    assert bb["high_count_low_frequency"]["rfr"] == 0.5 and bb["high_count_low_frequency"]["f1"] == 1.0
    assert bb["low_count_high_frequency"]["rfr"] == 0.75 and bb["low_count_low_frequency"]["acr"] == 0.0
    # the marginal regions stay, with the controls in em where N <= 3 or F <= 2.0 holds
    assert bb["low_count"]["n_controls"] == 4 and bb["high_frequency"]["n_controls"] == 0


def test_errored_trials_are_wrong_in_every_em(region_records: list[dict]) -> None:
    """An errored trial stays in the denominator: EM is over every planned trial, with the completion
    rate beside it (papers/README: defects to avoid include "errored trials dropped from the
    denominator"; section 3.3: "Unparseable final answers are incorrect")."""
    rep = aggregate(region_records)
    sm = rep["regions"]["m"]["base"]["low_count_low_frequency"]["state_machine"]
    assert sm["n"] == 20 and sm["n_ok"] == 19 and sm["completion"] == pytest.approx(0.95)
    assert sm["em"] == pytest.approx(18 / 20) and sm["em_positive"] == pytest.approx(15 / 16)
    assert sm["em_ok"] == pytest.approx(18 / 19)
    assert sm["n_positive"] == 15  # trace means only over ok positive trials with a trace
    cell = next(c for c in rep["cells"] if (c["domain"], c["n_events"], c["frequency_hz"]) == ("state_machine", 1, 1.0))
    assert (cell["n"], cell["n_ok"], cell["correct"], cell["accuracy"]) == (4, 3, 3, 0.75)
    tm = rep["trace_metrics"]["m"]["base"]["state_machine"]
    assert tm["n"] == 52 and tm["n_ok"] == 51 and tm["completion"] == pytest.approx(51 / 52)
    assert rep["per_n"]["m"]["base"]["state_machine"]["1"]["n"] == 16
    assert rep["per_n"]["m"]["base"]["state_machine"]["1"]["accuracy"] == pytest.approx((0.75 + 1 + 0.25 + 0.25) / 4)
    assert rep["tolerance"]["m"]["base"]["rate_relative"]["n"] == 104
    assert rep["errors"]["m"]["base"]["completion"] == pytest.approx(103 / 104)
    json.dumps(rep, allow_nan=False)


def test_boundaries_follow_the_cells_errors_count_as_wrong() -> None:
    """Eq. 5 uses the cell accuracy of eq. 1 (correct / S renderings): 7 right and 3 failed calls is
    7/10 < 0.80, not 7/7."""
    recs = []
    for seed in range(10):
        recs.append(record(sample("bounce_ball", 1, 0.5, seed), True, status="ok" if seed < 7 else "api_error"))
        recs.append(record(sample("bounce_ball", 1, 1.0, seed), True, status="ok" if seed < 8 else "timeout"))
        recs.append(record(sample("bounce_ball", 2, 1.0, seed), seed < 5))
    rep = aggregate(recs)
    assert rep["count_boundary"]["m"]["base"]["bounce_ball"] == {"0.5": "<1", "1.0": 1}
    assert rep["frequency_boundary"]["m"]["base"]["bounce_ball"]["1"] == "<0.5"
    assert rep["boundary_rules"]["errors"] == "wrong"


def test_count_bins_and_paired_difference_count_errors_as_wrong() -> None:
    recs = [record(sample("real:squat", n, None, 0), True, cond="a") for n in (1, 2, 3)]
    recs += [
        record(sample("real:squat", 1, None, 0), None, cond="b", status="refused"),
        record(sample("real:squat", 2, None, 0), True, cond="b"),
        record(sample("real:squat", 3, None, 0), True, cond="b", status="pending"),
    ]
    bins = count_bins(recs)["m"]
    b12 = bins["b"]["1-2"]
    assert (b12["n"], b12["n_ok"], b12["completion"], b12["correct"], b12["accuracy"]) == (2, 1, 0.5, 1, 0.5)
    assert b12["ci_low"] < 0.5 < b12["ci_high"]
    assert bins["b"]["3-4"]["accuracy"] == 0.0
    d = paired_difference(recs, ("m", "a"), ("m", "b"), n_boot=200)
    assert d["n_pairs"] == 3 and d["estimate"] == pytest.approx(-2 / 3)
    assert (d["n_not_ok_a"], d["n_not_ok_b"]) == (0, 2)


# --------------------------------------------------------------------------- per N (Figures 4, 6-8)


def test_per_n_is_the_mean_of_cell_accuracies_over_f() -> None:
    """Figure 4: "Final-answer exact match averaged over frequencies": the mean over F of the cell
    accuracies b(N, F) of eq. 1, not the pooled ratio (they differ when cells differ in size)."""
    recs = [record(sample("bounce_ball", 2, 0.5, s), True) for s in range(10)]
    recs += [record(sample("bounce_ball", 2, 1.0, s), False) for s in range(5)]
    recs += [record(sample("bounce_ball", 0, 1.0, s), s < 2) for s in range(4)]
    recs += [record(sample("real:squat", 2, None, 0), True)]  # real videos are in count_bins, not per_n
    pn = aggregate(recs)["per_n"]["m"]["base"]
    two = pn["bounce_ball"]["2"]
    assert two["accuracy"] == 0.5 and two["pooled_accuracy"] == pytest.approx(10 / 15)
    assert (two["n"], two["correct"], two["n_frequencies"], two["frequencies_hz"]) == (15, 10, 2, [0.5, 1.0])
    assert pn["bounce_ball"]["0"]["accuracy"] == 0.5 and pn["bounce_ball"]["0"]["frequencies_hz"] == [1.0]
    assert "real:squat" not in pn


def test_per_n_builders(region_records: list[dict]) -> None:
    rep = aggregate(region_records)
    t = per_n_table(rep)
    assert isinstance(t, Table) and t.columns == ["model", "condition", "domain", "N=0", "N=1", "N=3", "N=5"]
    assert t.rows[0] == ["m", "base", "bounce_ball", "0.750", "0.625", "0.625", "0.250"]
    figs = per_n_figure(rep)
    assert len(figs) == 1 and isinstance(figs[0], LineFigure)
    f = figs[0]
    assert f.x == [0.0, 1.0, 3.0, 5.0] and f.group == ["m", "base"]
    assert [s.name for s in f.series] == ["bounce_ball", "state_machine", "τ = 0.80"]
    assert f.series[0].y == [0.75, 0.625, 0.625, 0.25]
    assert all(lo <= y <= hi for lo, y, hi in zip(f.series[0].low, f.series[0].y, f.series[0].high, strict=True))
    by_cond = per_n_figure(rep, by="condition")
    assert [fig.group for fig in by_cond] == [["m", "bounce_ball"], ["m", "state_machine"]]
    assert [s.name for s in by_cond[0].series] == ["base", "τ = 0.80"]
    assert [s.name for s in per_n_figure(rep, tau_line=False)[0].series] == ["bounce_ball", "state_machine"]


# --------------------------------------------------------------------------- Table 2


def test_max_count_boundary_is_over_every_frequency_and_domain() -> None:
    """Table 2: "The maximum count boundary is the largest reliable contiguous positive-count prefix
    observed at any tested frequency and domain." Section 4: "Bounce Ball reaches N = 10 only at
    0.5 Hz", "Blinking has no reliable positive-count region", "State Machine is reliable through
    N = 12 at 0.5 and 1.0 Hz" -> Gemini's 12."""
    cb = {
        "gemini": {
            "native": {
                "bounce_ball": {"0.5": 10, "1.0": "<1", "4.0": "<1"},
                "blinking": {"0.5": "<1", "1.0": "<1"},
                "state_machine": {"0.5": 12, "1.0": 12, "1.5": 2, "2.0": 1},
            }
        }
    }
    got = max_count_boundary(cb)["gemini"]["native"]
    assert got["bounce_ball"] == {"value": 10, "frequencies_hz": [0.5]}
    assert got["blinking"] == {"value": "<1", "frequencies_hz": [0.5, 1.0]}
    assert got["state_machine"] == {"value": 12, "frequencies_hz": [0.5, 1.0]}
    assert got["all"] == {"value": 12, "domains": ["state_machine"]}
    assert max_count_boundary({"m": {"c": {"d": {"0.5": "<1"}}}})["m"]["c"]["all"] == {"value": "<1", "domains": ["d"]}


def test_max_count_boundary_in_aggregate_and_table(region_records: list[dict]) -> None:
    rep = aggregate(region_records)
    # bounce ball: N = 1, 3 right at F <= 2.0 and N = 5 at 50%: boundary 3 at 1.0 and 2.0 Hz; state machine
    # fails N = 1 at 1.0 Hz (3/4 after the failed call) and reaches 3 at 2.0 Hz only
    mcb = rep["max_count_boundary"]["m"]["base"]
    assert mcb["bounce_ball"] == {"value": 3, "frequencies_hz": [1.0, 2.0]}
    assert mcb["state_machine"] == {"value": 3, "frequencies_hz": [2.0]}
    assert mcb["all"] == {"value": 3, "domains": ["bounce_ball", "state_machine"]}
    assert rep["max_count_boundary_wilson"]["m"]["base"]["all"]["value"] == "<1"
    t = max_count_boundary_table(rep)
    assert t.columns == ["model", "condition", "bounce_ball EM", "state_machine EM", "max count boundary", "reached in"]
    em_bb = rep["trace_metrics"]["m"]["base"]["bounce_ball"]["em"]
    assert t.rows == [
        [
            "m",
            "base",
            f"{em_bb:.3f}",
            f"{rep['trace_metrics']['m']['base']['state_machine']['em']:.3f}",
            "3",
            "bounce_ball, state_machine",
        ]
    ]


def test_regions_table(region_records: list[dict]) -> None:
    t = regions_table(aggregate(region_records))
    assert t.columns[:6] == ["model", "condition", "region", "domain", "EM (with N=0)", "EM (N≥1)"]
    regions = list(dict.fromkeys(r[2] for r in t.rows))
    assert regions[:4] == [
        "LCLF (N ≤ 3, F ≤ 2.0)",
        "HCLF (N ≥ 5, F ≤ 2.0)",
        "LCHF (N ≤ 3, F ≥ 2.5)",
        "HCHF (N ≥ 5, F ≥ 2.5)",
    ]
    row = next(r for r in t.rows if r[2].startswith("LCLF") and r[3] == "bounce_ball")
    assert row[4:7] == ["0.950", "1.000", "1.000"]
    macro = next(r for r in t.rows if r[2].startswith("LCLF") and r[3] == "macro")
    assert macro[4] == "0.925"
    secs = exact_sections(aggregate(region_records))
    assert [s.id for s in secs] == ["per-n", "max-count-boundary", "regions"] and all(
        isinstance(s, Section) for s in secs
    )


# --------------------------------------------------------------------------- record shapes


def test_flat_score_records_with_extra_keys_aggregate_the_same(region_records: list[dict]) -> None:
    """ScoreRecord.flat() records (params, metrics, then the record's own fields, plus predicted and
    parse_span) aggregate exactly like report_run's; failed trials carry no metrics at all."""
    flat = []
    for r in region_records:
        ok = r["status"] == "ok"
        metrics = (
            {
                k: v
                for k, v in r.items()
                if k not in ("model", "condition", "usage", "cost_usd", "trial_id", "suite", "model_role", "seed")
            }
            if ok
            else {}
        )
        rec = ScoreRecord(
            trial_id=r["trial_id"],
            sample_id=r["sample_id"],
            suite="counting",
            model="m",
            condition="base",
            group_id=r["group_id"],
            status=r["status"],
            correct=r["correct"] if ok else None,
            parse=ParseResult(
                value=r["predicted_count"],
                method=r["parse_method"],
                span=tuple(r["parse_span"]) if r["parse_span"] else None,
            )
            if ok
            else None,
            params={
                "domain": r["domain"],
                "n_events": r["n_events"],
                "frequency_hz": r["frequency_hz"],
                "seed": r["seed"],
            },
            metrics=metrics,
        )
        flat.append(rec.flat())
    a, b = aggregate(region_records), aggregate(flat)
    for key in (
        "cells",
        "regions",
        "per_n",
        "trace_metrics",
        "max_count_boundary",
        "count_boundary",
        "taxonomy",
        "tolerance",
    ):
        assert a[key] == b[key], key
