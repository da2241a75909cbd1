"""Counting-suite aggregates built from real score_trial records on hand-made Samples."""

from __future__ import annotations

import json

import pytest

from vidaudit.core.errors import DataError
from vidaudit.core.types import Event, Sample, Trace, VideoRef
from vidaudit.suites.counting.aggregate import aggregate, count_bin, count_bins, paired_difference
from vidaudit.suites.counting.scoring import score_trial

WALLS = ("left", "right")


def sample(domain: str, n: int, f: float, seed: int) -> Sample:
    times = [2.0 + i / f for i in range(n)]
    after = {
        "bounce_ball": lambda i: WALLS[i % 2],
        "blinking": lambda i: "on",
        "state_machine": lambda i: "ABCD"[(i + 1) % 4],
    }[domain]
    events = tuple(
        Event(t=t, frame=int(t * 30), type="e", state_after=after(i), count=i + 1) for i, t in enumerate(times)
    )
    return Sample(
        sample_id=f"{domain}-N{n}-F{f}-s{seed}",
        suite="counting",
        params={"domain": domain, "n_events": n, "frequency_hz": f, "seed": seed},
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


def ledger(s: Sample, count: int | None = None, shift: float = 0.0) -> str:
    lines = [f"- {e.t + shift:.2f}s event, running count {e.count}" for e in s.trace.events]
    return "\n".join(lines + [f"Final answer: \\boxed{{{len(lines) if count is None else count}}}"])


def record(s: Sample, text: str | None, model: str, cond: str, status: str = "ok") -> dict:
    r = score_trial(s, text, status).to_dict()
    r.update(
        model=model,
        condition=cond,
        domain=s.params["domain"],
        n_events=s.params["n_events"],
        frequency_hz=s.params["frequency_hz"],
        status=status,
        usage={"input_tokens": 100, "output_tokens": 10},
        cost_usd=0.01 if status == "ok" else None,
    )
    return r


@pytest.fixture(scope="module")
def records() -> list[dict]:
    """model m, condition base: bounce_ball correct for N <= 2 at every F, and for N = 4 at F = 0.5 only."""
    out = []
    for f in (0.5, 1.0):
        for n in (1, 2, 3, 4):
            for seed in range(10):
                s = sample("bounce_ball", n, f, seed)
                good = n <= 2 or (n == 4 and f == 0.5)
                out.append(record(s, ledger(s) if good else ledger(s, count=n + 1), "m", "base"))
                # condition "frames": always right in the count, but no timestamps (accidental correctness)
                out.append(record(s, f"\\boxed{{{n}}}", "m", "frames"))
    for seed in range(10):
        s0 = sample("blinking", 0, 1.0, seed)
        out.append(record(s0, "No blinks. \\boxed{0}" if seed < 9 else "I am not sure.", "m", "base"))
        s1 = sample("blinking", 1, 1.0, seed)
        out.append(
            record(s1, None, "m", "base", status="api_error" if seed < 2 else "ok")
            if seed < 2
            else record(s1, ledger(s1, shift=0.3), "m", "base")
        )
    return out


def test_cells_and_wilson(records: list[dict]) -> None:
    rep = aggregate(records)
    cell = {(c["model"], c["condition"], c["domain"], c["n_events"], c["frequency_hz"]): c for c in rep["cells"]}
    c = cell[("m", "base", "bounce_ball", 4, 0.5)]
    assert (c["n"], c["correct"], c["accuracy"]) == (10, 10, 1.0)
    assert c["ci_low"] == pytest.approx(0.7225, abs=1e-4) and c["ci_high"] == 1.0
    blink1 = cell[("m", "base", "blinking", 1, 1.0)]
    # errored trials stay in the denominator and count as wrong; completion says how many finished
    assert (blink1["n"], blink1["n_ok"], blink1["n_errored"], blink1["correct"]) == (10, 8, 2, 8)
    assert blink1["accuracy"] == 0.8 and blink1["completion"] == 0.8
    blink0 = cell[("m", "base", "blinking", 0, 1.0)]
    assert (blink0["n"], blink0["correct"]) == (10, 9)  # unparseable counts as wrong


def test_boundaries(records: list[dict]) -> None:
    rep = aggregate(records)
    cb = rep["count_boundary"]["m"]["base"]["bounce_ball"]
    assert cb == {"0.5": 2, "1.0": 2}  # isolated success at N = 4, F = 0.5 does not extend it
    fb = rep["frequency_boundary"]["m"]["base"]["bounce_ball"]
    assert fb == {"1": 1.0, "2": 1.0, "3": "<0.5", "4": 0.5}
    assert rep["count_boundary"]["m"]["base"]["blinking"] == {"1.0": 1}
    assert rep["count_boundary_wilson"]["m"]["base"]["bounce_ball"] == {"0.5": "<1", "1.0": "<1"}
    assert rep["frequency_boundary_wilson"]["m"]["frames"]["bounce_ball"]["1"] == "<0.5"


def test_trace_metrics_taxonomy_tolerance(records: list[dict]) -> None:
    rep = aggregate(records)
    tm = rep["trace_metrics"]["m"]["frames"]["bounce_ball"]
    assert tm["em"] == 1.0 and tm["f1"] == 0.0 and tm["acr"] == 1.0 and tm["vor"] == 0.0
    base = rep["trace_metrics"]["m"]["base"]
    assert base["bounce_ball"]["f1"] == 1.0 and base["bounce_ball"]["rfr"] == pytest.approx(30 / 80)
    assert base["blinking"]["parse_failure_rate"] == pytest.approx(1 / 18)
    assert base["blinking"]["em"] == pytest.approx(17 / 20) and base["blinking"]["em_ok"] == pytest.approx(17 / 18)
    assert base["blinking"]["em_positive"] == pytest.approx(8 / 10) and base["blinking"]["completion"] == 0.9
    assert base["macro"]["f1"] == pytest.approx((1.0 + 1.0) / 2)  # blink shift 0.3 s < delta(1 Hz) = 0.5 s
    tax = rep["taxonomy"]["m"]["base"]["all"]
    assert tax["true_events"] == 2 * 10 * (1 + 2 + 3 + 4) + 8 and tax["matched"] == tax["true_events"]
    assert tax["wrong_accumulation"] == 30 == tax["rfr_videos"] and tax["hallucinated"] == 0
    assert tax["ledger_mismatch"] == 30 and tax["videos_not_scored"] == 2
    tol = rep["tolerance"]["m"]["base"]
    assert tol["0.25"]["recall"] < tol["rate_relative"]["recall"] == 1.0  # blinks shifted 0.3 s miss at 0.25 s
    assert set(tol) == {"1.0", "0.5", "0.25", "rate_relative"}
    reg = rep["regions"]["m"]["base"]
    assert reg["low_count"]["bounce_ball"]["n"] == 60 and reg["high_count"]["macro"] is None
    assert reg["low_count"]["blinking"]["n"] == 20 and reg["low_count"]["blinking"]["n_controls"] == 10


def test_errors_usage_and_json(records: list[dict]) -> None:
    rep = aggregate(records)
    err = rep["errors"]["m"]["base"]
    assert err["n_trials"] == 100 and err["n_ok"] == 98 and err["n_errored"] == {"api_error": 2}
    assert err["parse_failure_rate"] == pytest.approx(1 / 98)
    use = rep["usage"]["m"]["base"]
    assert use["input_tokens"] == 100 * 100 and use["n_cost_unknown"] == 2
    assert use["cost_usd"] == pytest.approx(0.98)
    text = json.dumps(rep, allow_nan=False)  # strictly JSON: string keys, no NaN
    assert json.loads(text)["count_boundary"] == rep["count_boundary"]


def test_paired_difference(records: list[dict]) -> None:
    d = paired_difference(records, a=("m", "base"), b=("m", "frames"), n_boot=1000, seed=3)
    assert d["n_pairs"] == 80 and d["estimate"] == pytest.approx(30 / 80)
    assert d["ci_low"] <= d["estimate"] <= d["ci_high"] and d["n_groups"] == 80
    assert d == paired_difference(records, a=("m", "base"), b=("m", "frames"), n_boot=1000, seed=3)
    with pytest.raises(DataError, match="no sample"):
        paired_difference(records, a=("m", "base"), b=("other", "base"))
    with pytest.raises(DataError, match="twice"):
        paired_difference(records + records[:1], a=("m", "base"), b=("m", "frames"))


def test_count_bins() -> None:
    assert [count_bin(n) for n in (0, 1, 2, 3, 11, 15, 16, 30, 31, 200)] == [
        None,
        "1-2",
        "1-2",
        "3-4",
        "11-15",
        "11-15",
        "16-20",
        "21-30",
        ">30",
        ">30",
    ]
    recs = []
    for i, n in enumerate([1, 2, 2, 7, 35]):
        s = sample("blinking", 0, 1.0, i).model_copy(update={"answer": n, "sample_id": f"real-{i}"})
        r = record(s, "\\boxed{2}", "m", "cot")
        r["n_events"] = n
        recs.append(r)
    bins = count_bins(recs)["m"]["cot"]
    assert bins["1-2"]["n"] == 3 and bins["1-2"]["correct"] == 2 and bins[">30"]["accuracy"] == 0.0
    assert "3-4" not in bins and bins["7-8"]["ci_low"] == 0.0


def test_missing_keys_are_reported() -> None:
    with pytest.raises(DataError, match="lacks 'model'"):
        aggregate([{"sample_id": "x", "condition": "c"}])
