"""Trace scoring one step off the common case, read from what ``vidaudit score-responses`` writes.

Responses are ledgers as a model writes them, scored against a generated smoke manifest (a dry run: scoring reads
the manifest, not the videos); the figures are read back from scores.jsonl and report.json.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.manifest import load_samples
from vidaudit.sdk import Sample

runner = CliRunner()
FIXED = ("1.0", "0.5", "0.25")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Sample]]:
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.grid import preset

    out = tmp_path_factory.mktemp("smoke_manifest")
    generate(preset("smoke"), out, dry_run=True)
    return out, load_samples(out)


@pytest.fixture(scope="module")
def between(tmp_path_factory: pytest.TempPathFactory) -> list[Sample]:
    """Samples whose delta(F) = 1/(2F) falls between the fixed windows (0.667, 0.333, 0.143 s) or on none."""
    from vidaudit.suites.counting.generate import generate
    from vidaudit.suites.counting.grid import grid

    out = tmp_path_factory.mktemp("between_manifest")
    generate(grid(("state_machine",), counts=(2, 5, 12), frequencies=(0.75, 1.5, 3.5), seeds=(0,)), out, dry_run=True)
    return load_samples(out)


def _ledger(times: list[float], count: int) -> str:
    lines = [f"- t={t:.3f}s: event, running count {i}" for i, t in enumerate(times, 1)]
    return "\n".join(["1. Step-by-Step Event Ledger:", *lines, f"2. Final Answer: \\boxed{{{count}}}"])


def _score(manifest: Path, tmp_path: Path, lines: list[dict[str, Any]]) -> tuple[list[dict], dict]:
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "scores.jsonl"
    args = ["--samples", str(manifest), "--responses", str(resp), "--out", str(out), "--report", str(tmp_path / "rep")]
    r = runner.invoke(app, ["score-responses", *args])
    assert r.exit_code == 0, r.output
    scores = [json.loads(x) for x in out.read_text().splitlines()]
    return scores, json.loads((tmp_path / "rep" / "report.json").read_text())


def test_macro_trace_metrics_are_undefined_when_a_domain_has_no_completed_trial(
    smoke: tuple[Path, list[Sample]], tmp_path: Path
) -> None:
    """Every blinking call failed: blinking has no trace ratio, so the macro over the three domains listed has none
    either (it used to be the mean of the other two, published as the macro of all three: F1 0.5 here)."""
    manifest, samples = smoke
    lines = []
    for s in samples:
        times = list(s.trace.times)
        dom = s.params["domain"]
        if dom == "blinking":
            lines.append({"sample_id": s.sample_id, "response": None, "status": "api_error", "model": "m"})
        elif dom == "bounce_ball":  # a faithful ledger: F1 = 1
            lines.append({"sample_id": s.sample_id, "response": _ledger(times, len(times)), "model": "m"})
        else:  # the right count and no trace: F1 = 0, ACR
            lines.append({"sample_id": s.sample_id, "response": _ledger([], len(times)), "model": "m"})
    scores, report = _score(manifest, tmp_path, lines)
    f1 = {(x["params"]["domain"], x["status"]): x["metrics"].get("f1") for x in scores if x["params"]["n_events"]}
    assert f1 == {("bounce_ball", "ok"): 1.0, ("state_machine", "ok"): 0.0, ("blinking", "api_error"): None}

    tm = report["results"]["trace_metrics"]["m"]["external"]
    assert tm["bounce_ball"]["f1"] == 1.0 and tm["state_machine"]["f1"] == 0.0
    assert tm["blinking"]["n_positive"] == 0 and tm["blinking"]["f1"] is None
    macro = tm["macro"]
    assert macro["domains"] == ["blinking", "bounce_ball", "state_machine"]
    for key in ("vor", "precision", "recall", "f1", "acr", "rfr"):
        assert macro[key] is None, key
    assert macro["em"] == pytest.approx((0.0 + 1.0 + 1.0) / 3)  # EM is defined everywhere: failures are wrong
    for region, blocks in report["results"]["regions"]["m"]["external"].items():
        if blocks is not None and "blinking" in blocks:
            assert blocks["macro"]["f1"] is None, region


def test_macro_trace_metrics_leave_out_a_count_only_domain(smoke: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    """The macro stays the mean over the domains whose trials carry a trace: a real video (no frequency, scored by
    exact match alone) beside them is no reason for it to be undefined, and with every call completed it is the
    mean of the three synthetic domains."""
    manifest, samples = smoke
    rows = [json.loads(x) for x in (manifest / "manifest.jsonl").read_text().splitlines()]
    real = next(r for r in rows if r["answer"] == 3)  # its events as a repetition annotation, no frequency
    real = {**real, "sample_id": "real-video-1", "params": {**real["params"], "domain": "real:squat"}}
    real["params"]["frequency_hz"] = None
    real["params"]["source"] = "repcount"
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*rows, real]))
    lines = [{"sample_id": "real-video-1", "response": "\\boxed{3}", "model": "m"}]
    for s in samples:
        times = list(s.trace.times)
        keep = {"bounce_ball": times, "blinking": times[:1], "state_machine": []}[s.params["domain"]]
        lines.append({"sample_id": s.sample_id, "response": _ledger(keep, len(times)), "model": "m"})
    _, report = _score(mixed, tmp_path, lines)
    tm = report["results"]["trace_metrics"]["m"]["external"]
    assert tm["real:squat"]["em"] == 1.0 and tm["real:squat"]["n_positive"] == 0 and tm["real:squat"]["f1"] is None
    doms = ("blinking", "bounce_ball", "state_machine")
    assert tm["blinking"]["f1"] not in (0.0, 1.0, None)
    assert tm["macro"]["f1"] == pytest.approx(sum(tm[d]["f1"] for d in doms) / 3)
    assert tm["macro"]["recall"] == pytest.approx(sum(tm[d]["recall"] for d in doms) / 3)


def _max_pairs(true: list[Fraction], rep: list[Fraction], window: Fraction) -> int:
    """The most one-to-one pairs with |t - r| <= window: augmenting paths (Kuhn), in exact arithmetic."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j, r in enumerate(rep):
            if j not in seen and abs(true[i] - r) <= window:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(augment(i, set()) for i in range(len(true)))


def _best(true: list[Fraction], rep: list[Fraction], window: Fraction) -> tuple[int, Fraction]:
    """(most pairs, least total deviation among them) over every one-to-one matching: a DP over the true events
    in turn and the set of reports used, in exact arithmetic."""
    best: dict[int, tuple[int, Fraction]] = {0: (0, Fraction(0))}
    for t in true:
        nxt = dict(best)
        for used, (k, dev) in best.items():
            for j, r in enumerate(rep):
                if not used >> j & 1 and abs(t - r) <= window:
                    cand = (k + 1, dev + abs(t - r))
                    old = nxt.get(used | 1 << j)
                    if old is None or (cand[0], -cand[1]) > (old[0], -old[1]):
                        nxt[used | 1 << j] = cand
        best = nxt
    k, dev = max(best.values(), key=lambda kd: (kd[0], -kd[1]))
    return k, dev


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_scored_pairs_are_a_maximum_matching_at_every_window(
    smoke: tuple[Path, list[Sample]], between: list[Sample], data
) -> None:
    """Reports out of time order, repeated, on and just past the window's edge, beyond the clip: K at delta(F)
    and at each fixed window equals a brute-force maximum matching of the times the record says it read, in
    exact arithmetic (the window's edge included, with the documented 1e-9 s slack), and every pair is one
    true and one reported event within delta(F)."""
    from vidaudit.suites.counting.scoring import score_record

    _, samples = smoke
    s = data.draw(st.sampled_from([x for x in [*samples, *between] if x.answer]))
    f = Fraction(str(s.params["frequency_hz"]))
    delta = 1 / (2 * f)
    true = [Fraction(str(t)) for t in s.trace.times]
    per_mille = st.sampled_from([0, 500, 999, 1000, 1000, 1001, 1500]) | st.integers(0, 1500)
    near = st.tuples(st.sampled_from(true), st.sampled_from([-1, 1]), per_mille).map(
        lambda x: x[0] + x[1] * delta * x[2] / 1000  # within 1.5 delta, the edge itself when x[2] = 1000
    )
    anywhere = st.integers(0, 26_000).map(lambda ms: Fraction(ms, 1000))
    rep = data.draw(st.lists(near | anywhere, max_size=14))
    digits = data.draw(st.sampled_from([3, 9]))  # as a model writes them; 9 decimals: as the trace does
    text = "\n".join(f"- t={float(r):.{digits}f}s: event" for r in rep) + f"\n\\boxed{{{len(rep)}}}"
    rec = score_record(s, text)
    read = [Fraction(str(t)) for t in rec["reported_times"]]
    assert rec["n_reported"] == len(read)
    slack = Fraction(2, 10**9)  # the written true times are to 9 decimals; the matcher allows 1e-9 s in floats
    for k, w in ((rec["n_matched"], delta), *((rec["tolerance"][w]["n_matched"], Fraction(w)) for w in FIXED)):
        assert _max_pairs(true, read, w) <= k <= _max_pairs(true, read, w + slack), w  # the edge is in
    pairs = rec["matches"]
    assert len({i for i, _ in pairs}) == len({j for _, j in pairs}) == len(pairs) == rec["n_matched"]
    assert all(abs(true[i] - read[j]) <= delta + slack for i, j in pairs)
    if len(read) <= 8:  # and among the largest matchings, one of least total deviation (C.15's tie rule)
        k, least = _best(true, read, delta)
        if k == _max_pairs(true, read, delta + slack):  # no pair in the 1e-9 s slack
            assert sum(abs(true[i] - read[j]) for i, j in pairs) <= least + slack * len(pairs)


def test_a_boundary_over_a_smaller_grid_is_named(smoke: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    """Model b was never asked the N = 1 samples, yet its N*(F) at 0.5 and 4.0 Hz is 12, as model a's (which passed
    N = 1 there): eq. 5 takes each run's own tested counts, so the notes name the counts b skipped inside the prefix
    it claims. Model c skipped N = 12 after failing at N = 3 (beyond its boundary, as the adaptive design skips):
    nothing to name."""
    manifest, samples = smoke
    lines = []
    for s in samples:
        times = list(s.trace.times)
        right = {"sample_id": s.sample_id, "response": _ledger(times, len(times))}
        lines.append({**right, "model": "a"})
        if s.answer != 1:
            lines.append({**right, "model": "b"})
        if s.params["domain"] == "blinking" and s.params["frequency_hz"] == 2.0:  # N = 3 at 2 Hz only, wrong
            lines.append({**right, "response": _ledger(times, 0), "model": "c"})
        elif s.params["domain"] == "blinking" and s.answer == 1:
            lines.append({**right, "model": "c"})
    _, report = _score(manifest, tmp_path, lines)
    cb = report["results"]["count_boundary"]
    assert cb["a"]["external"]["blinking"] == cb["b"]["external"]["blinking"] == {"0.5": 12, "2.0": 3, "4.0": 12}
    assert cb["c"]["external"]["blinking"] == {"0.5": 1, "2.0": "<3", "4.0": 1}
    notes = [n for n in report["notes"] if "smaller grid" in n]
    assert len(notes) == 1 and notes[0].startswith("b under external:"), report["notes"]
    for dom in ("blinking", "bounce_ball", "state_machine"):
        for f in ("0.5", "4.0"):
            assert f"{dom} N*(F={f}) = 12 without N = 1" in notes[0]
    assert "F=2.0" not in notes[0] and "F*(" not in notes[0]  # b tested every N it has at every F the others did
