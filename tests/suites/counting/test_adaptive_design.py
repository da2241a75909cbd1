"""--design adaptive: the full grid's boundaries on the same trial outcomes, with fewer trials.

Three levels: the per-cell rule (curtailment) over every outcome sequence; the design over a
hypothesis-generated family of surfaces and of arbitrary outcomes, judged by the report's own
``aggregate``; and real runs (CLI, executor, SQLite store) of ``simulated:`` surfaces, full grid
against adaptive, including an interrupted adaptive run that is resumed.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec
from vidaudit.run.conditions import parse_condition
from vidaudit.run.request import PlanRequest
from vidaudit.run.session import execute, prepare_run
from vidaudit.score.stats import wilson_lower
from vidaudit.suites.counting.adaptive import (
    FAIL,
    OPEN,
    PASS,
    AdaptiveDesign,
    cell_state,
    meets,
    min_seeds,
    trials_to_decide,
)
from vidaudit.suites.counting.aggregate import aggregate
from vidaudit.suites.counting.generate import generate
from vidaudit.suites.counting.grid import grid
from vidaudit.suites.counting.simulated import simulated_count

runner = CliRunner()
RULES = ("point", "wilson_lower")
BOUNDARY_KEYS = {
    "point": ("count_boundary", "frequency_boundary", "max_count_boundary"),
    "wilson_lower": ("count_boundary_wilson", "frequency_boundary_wilson", "max_count_boundary_wilson"),
}


# --------------------------------------------------------------------------- one cell


def test_point_rule_with_ten_seeds_is_eight_successes_or_three_failures():
    for s in range(11):
        for f in range(11 - s):
            want = PASS if s >= 8 else FAIL if f >= 3 else OPEN
            assert cell_state(s, f, 10, "point") == want, (s, f)
    assert trials_to_decide(0, 0, 10, "point") == 3
    assert trials_to_decide(7, 2, 10, "point") == 1
    assert trials_to_decide(5, 0, 10, "point") == 3


def test_wilson_needs_sixteen_seeds_at_tau_080():
    assert min_seeds("wilson_lower") == 16
    assert not meets(15, 15, "wilson_lower") and meets(16, 16, "wilson_lower")
    assert min_seeds("point") == 1


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 80), st.data())
def test_wilson_lower_falls_with_a_failure_and_rises_with_a_success(n, data):
    k = data.draw(st.integers(0, n))
    assert wilson_lower(k, n + 1) <= wilson_lower(k, n) + 1e-12
    assert wilson_lower(k + 1, n + 1) >= wilson_lower(k, n) - 1e-12


def curtailed(seq: list[bool], rule: str) -> tuple[str, int]:
    """Run one cell's seeds in order in the design's batches: (verdict, trials used)."""
    n, used = len(seq), 0
    while True:
        s = sum(seq[:used])
        state = cell_state(s, used - s, n, rule)
        if state != OPEN:
            return state, used
        used += trials_to_decide(s, used - s, n, rule)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(RULES), st.integers(1, 40).flatmap(lambda n: st.lists(st.booleans(), min_size=n, max_size=n)))
def test_curtailment_gives_the_full_verdict_at_the_earliest_prefix(rule, seq):
    n = len(seq)
    verdict, used = curtailed(seq, rule)
    full = meets(sum(seq), n, rule)
    if not meets(n, n, rule):  # such a cell is decided before a trial (the design refuses these grids)
        assert verdict == FAIL and used == 0
        return
    assert (verdict == PASS) == full
    s = sum(seq[:used])
    assert meets(s, used, rule) == full  # the report's verdict on the stored trials is the same
    earliest = next(j for j in range(n + 1) if cell_state(sum(seq[:j]), j - sum(seq[:j]), n, rule) != OPEN)
    assert used == earliest  # batches never overshoot


# --------------------------------------------------------------------------- the design, in memory


def _surface_csv(path: Path, acc) -> Path:
    from vidaudit.suites.counting.grid import DOMAINS, NOMINAL_F_FOR_ZERO

    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["domain", "N", "F", "accuracy"])
        for d in DOMAINS:
            w.writerow([d, 0, NOMINAL_F_FOR_ZERO, 0.9])
            for n in (1, 2, 3, 4, 5, 6, 8, 10, 12):
                for f in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0):
                    w.writerow([d, n, f, acc(d, n, f)])
    return path


@pytest.fixture(scope="module")
def planned10(tmp_path_factory):
    """The planned trials of a 2-domain, 5 x 4, 10-seed dry grid (with its N = 0 controls)."""
    root = tmp_path_factory.mktemp("mem10")
    generate(
        grid(
            ["bounce_ball", "state_machine"],
            counts=(0, 1, 2, 3, 4, 6),
            frequencies=(0.5, 1.0, 2.0, 3.0),
            seeds=range(10),
        ),
        root / "data",
        dry_run=True,
    )
    csv_path = _surface_csv(root / "s.csv", lambda d, n, f: 0.5)
    planned, _, _ = prepare_run(
        PlanRequest(
            data=root / "data",
            models=[ModelSpec.parse(f"simulated:{csv_path}")],
            conditions=[parse_condition("native", "structured_trace")],
        ),
        check_files=False,
    )
    return planned


@pytest.fixture(scope="module")
def planned20(tmp_path_factory):
    root = tmp_path_factory.mktemp("mem20")
    generate(
        grid(["blinking"], counts=(1, 2, 3), frequencies=(0.5, 1.0, 2.0), seeds=range(20)), root / "data", dry_run=True
    )
    csv_path = _surface_csv(root / "s.csv", lambda d, n, f: 0.5)
    planned, _, _ = prepare_run(
        PlanRequest(
            data=root / "data",
            models=[ModelSpec.parse(f"simulated:{csv_path}")],
            conditions=[parse_condition("native", "structured_trace")],
        ),
        check_files=False,
    )
    return planned


def drive(design: AdaptiveDesign, outcome: dict[str, bool], cut=None) -> dict[str, bool]:
    """Run the design's waves against fixed outcomes; ``cut(wave) -> k`` keeps only k results of a wave
    (an interrupted session) before asking again."""
    known: dict[str, bool] = {}
    for _ in range(10_000):
        wave = design.next_wave(known)
        if not wave:
            return known
        assert len(set(wave)) == len(wave) and not set(wave) & set(known)
        for t in wave[: cut(len(wave)) if cut else None]:
            known[t] = outcome[t]
    raise AssertionError("the design did not finish")


def records(planned, outcome: dict[str, bool], only=None) -> list[dict]:
    return [
        {
            "model": p.trial.model.label,
            "condition": p.trial.condition.id,
            "sample_id": p.sample.sample_id,
            "trial_id": p.id,
            "domain": p.sample.params["domain"],
            "n_events": p.sample.params["n_events"],
            "frequency_hz": p.sample.params["frequency_hz"],
            "status": "ok",
            "correct": outcome[p.id],
        }
        for p in planned
        if only is None or p.id in only
    ]


def assert_same_boundaries(planned, outcome, rule, cut=None) -> dict[str, bool]:
    design = AdaptiveDesign(planned, "point" if rule == "point" else "wilson")
    known = drive(design, outcome, cut)
    full, adaptive = aggregate(records(planned, outcome)), aggregate(records(planned, outcome, known))
    for key in BOUNDARY_KEYS[rule]:
        assert adaptive[key] == full[key], key
    assert all(planned_n(p) > 0 for p in planned if p.id in known)  # no N = 0 control is run
    return known


def planned_n(p) -> int:
    return int(p.sample.params["n_events"])


def simulated_outcomes(planned, acc) -> dict[str, bool]:
    """What simulated: answers, judged as the scorer does (the count equals N)."""
    out = {}
    for p in planned:
        prm = p.sample.params
        n = int(prm["n_events"])
        out[p.id] = simulated_count(p.id, n, acc(prm["domain"], n, prm["frequency_hz"])) == n
    return out


ACCURACIES = st.sampled_from([0.0, 0.2, 0.5, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_same_boundaries_over_a_family_of_surfaces(planned10, data):
    cells = {(p.sample.params["domain"], planned_n(p), p.sample.params["frequency_hz"]) for p in planned10}
    table = {c: data.draw(ACCURACIES, label=str(c)) for c in sorted(cells)}
    outcome = simulated_outcomes(planned10, lambda d, n, f: table[(d, n, f)])
    assert_same_boundaries(planned10, outcome, "point")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_same_boundaries_on_arbitrary_outcomes_and_after_interruptions(planned10, data):
    threshold = data.draw(st.integers(5, 10))  # P(correct) = threshold / 10: weak to perfect
    digits = data.draw(st.lists(st.integers(0, 9), min_size=len(planned10), max_size=len(planned10)))
    outcome = {p.id: d < threshold for p, d in zip(planned10, digits, strict=True)}
    known = assert_same_boundaries(planned10, outcome, "point")
    # an interrupted session keeps only part of each wave; resuming from the store ends with the same trials
    cut = data.draw(st.integers(0, 5))
    assert assert_same_boundaries(planned10, outcome, "point", cut=lambda n: max(1, n * cut // 6)) == known


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_same_wilson_boundaries_with_a_sequential_design(planned20, data):
    cells = sorted({(p.sample.params["domain"], planned_n(p), p.sample.params["frequency_hz"]) for p in planned20})
    table = {c: data.draw(ACCURACIES, label=str(c)) for c in cells}
    outcome = simulated_outcomes(planned20, lambda d, n, f: table[(d, n, f)])
    known = assert_same_boundaries(planned20, outcome, "wilson_lower")
    assert len(known) <= len(planned20)


def test_the_design_refuses_what_it_cannot_decide(planned10):
    with pytest.raises(ConfigError, match="needs at least 16 seeds per cell"):
        AdaptiveDesign(planned10, "wilson")
    with pytest.raises(ConfigError, match="unknown --rule"):
        AdaptiveDesign(planned10, "median")


# --------------------------------------------------------------------------- real runs


def strong(d, n, f):  # Gemini-like: a broad state-machine region, bounce ball at 0.5 Hz with an isolated island
    if d == "state_machine":
        return 0.95 if f <= 1.0 else 0.9 if (n <= 2 and f <= 2.0) else 0.3
    return 0.9 if (f == 0.5 and n <= 4) or (n == 4 and f == 1.0) else 0.3


def weak(d, n, f):  # little reliable anywhere, one isolated cell
    return 0.9 if (d, n, f) == ("state_machine", 1, 3.0) else 0.35


def island(d, n, f):  # reliable only at N = 1, F = 0.5 and on a non-monotone island at high N and F
    return 0.95 if (n, f) == (1, 0.5) or (n in (4, 6) and f in (2.0, 3.0)) else 0.2


@pytest.fixture(scope="module")
def grid_data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("grid") / "data"
    generate(
        grid(
            ["bounce_ball", "state_machine"], counts=(0, 1, 2, 4, 6), frequencies=(0.5, 1.0, 2.0, 3.0), seeds=range(10)
        ),
        out,
        dry_run=True,
    )
    return out


def run_cli(data: Path, surface: Path, out: Path, *extra: str):
    res = runner.invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(data),
            "--model",
            f"simulated:{surface}",
            "--condition",
            "native",
            "--out",
            str(out),
            *extra,
        ],
    )
    assert res.exit_code == 0, res.output
    return res


def results_of(run_dir: Path) -> dict:
    from vidaudit.score.stage import score_store

    scored = score_store(run_dir)
    return aggregate([r.flat() for r in scored.records])


@pytest.mark.parametrize("surface", [strong, weak, island], ids=lambda f: f.__name__)
def test_real_runs_full_grid_against_adaptive(tmp_path, grid_data, surface):
    csv_path = _surface_csv(tmp_path / "s.csv", surface)
    run_cli(grid_data, csv_path, tmp_path / "full")
    res = run_cli(grid_data, csv_path, tmp_path / "adaptive", "--design", "adaptive")
    assert "adaptive design (point)" in res.output and "decided" in res.output
    full, adaptive = results_of(tmp_path / "full"), results_of(tmp_path / "adaptive")
    for key in BOUNDARY_KEYS["point"] + BOUNDARY_KEYS["wilson_lower"]:  # Wilson too: no 10-seed cell passes it
        assert adaptive[key] == full[key], key
    figures = json.loads((tmp_path / "adaptive" / "run.json").read_text())["design"]
    assert figures["full_grid_trials"] == full["n_records"] == 340
    assert figures["trials_planned"] == figures["trials_run"] == adaptive["n_records"]
    print(
        f"{surface.__name__}: {adaptive['n_records']} of {full['n_records']} trials "
        f"({adaptive['n_records'] / full['n_records']:.0%})"
    )
    assert adaptive["n_records"] < 0.6 * full["n_records"]


def test_interrupted_adaptive_run_resumes_to_the_same_result(tmp_path, grid_data):
    from vidaudit.run.executor import RunAborted
    from vidaudit.run.store.reader import StoreReader

    csv_path = _surface_csv(tmp_path / "s.csv", strong)
    run_cli(grid_data, csv_path, tmp_path / "whole", "--design", "adaptive")
    seen = {"attempts": 0}

    def crash(ev):  # dies in the middle of a later wave, as a killed session would
        if ev.kind != "attempt":
            return
        seen["attempts"] += 1
        if seen["attempts"] == 60:
            raise RuntimeError("killed")

    with pytest.raises(RunAborted):
        execute(
            grid_data,
            tmp_path / "cut",
            [ModelSpec.parse(f"simulated:{csv_path}")],
            [parse_condition("native", "structured_trace")],
            design="adaptive",
            on_progress=crash,
        )
    with StoreReader(tmp_path / "cut") as store:
        assert 0 < store.summary().attempts < 120
    res = runner.invoke(app, ["run", "--resume", str(tmp_path / "cut")])
    assert res.exit_code == 0, res.output
    ids = []
    for name in ("whole", "cut"):
        with StoreReader(tmp_path / name) as store:
            ids.append({r.trial_id for r in store.trial_rows()})
    assert ids[0] == ids[1]
    assert results_of(tmp_path / "cut")["count_boundary"] == results_of(tmp_path / "whole")["count_boundary"]
    # a resume asked with the full design is refused: the run is an adaptive one
    res = runner.invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(grid_data),
            "--model",
            f"simulated:{csv_path}",
            "--condition",
            "native",
            "--out",
            str(tmp_path / "cut"),
        ],
    )
    assert res.exit_code == 2 and "different config" in res.output


def test_report_states_the_budget_saved(tmp_path, grid_data):
    csv_path = _surface_csv(tmp_path / "s.csv", island)
    run_cli(grid_data, csv_path, tmp_path / "run", "--design", "adaptive")
    res = runner.invoke(app, ["report", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "run" / "report" / "report.json").read_text())
    design = report["results"]["design"]
    assert design["name"] == "adaptive" and design["rule"] == "point" and design["complete"] is True
    note = next(n for n in report["notes"] if n.startswith("adaptive design"))
    saved = design["full_grid_trials"] - design["trials_planned"]
    assert f"{design['trials_planned']} of the full grid's 340 trials were planned" in note
    assert f"{saved} saved" in note and "not planned" in note
    assert report["n_records"] == design["trials_planned"]
    assert "adaptive design" in (tmp_path / "run" / "report" / "report.md").read_text()


def test_wilson_design_through_the_cli(tmp_path):
    data = tmp_path / "data"
    generate(grid(["blinking"], counts=(1, 2, 4), frequencies=(0.5, 2.0), seeds=range(20)), data, dry_run=True)
    csv_path = _surface_csv(tmp_path / "s.csv", lambda d, n, f: 1.0 if n <= 2 and f == 0.5 else 0.97 if n == 1 else 0.5)
    run_cli(data, csv_path, tmp_path / "full")
    run_cli(data, csv_path, tmp_path / "seq", "--design", "adaptive", "--rule", "wilson")
    full, seq = results_of(tmp_path / "full"), results_of(tmp_path / "seq")
    for key in BOUNDARY_KEYS["wilson_lower"]:
        assert seq[key] == full[key], key
    assert (
        full["count_boundary_wilson"]["simulated:" + str(csv_path)]["native@all/structured_trace"]["blinking"]["0.5"]
        == 2
    )  # the rule is met somewhere, so the test means something
    assert seq["n_records"] < full["n_records"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--rule", "point"], "add --design adaptive"),
        (["--design", "adaptive", "--rule", "wilson"], "needs at least 16 seeds"),
        (["--design", "bandit"], "unknown design 'bandit'"),
    ],
)
def test_bad_design_options_are_refused_before_any_call(tmp_path, grid_data, args, message):
    csv_path = _surface_csv(tmp_path / "s.csv", weak)
    res = runner.invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(grid_data),
            "--model",
            f"simulated:{csv_path}",
            "--condition",
            "native",
            "--out",
            str(tmp_path / "run"),
            *args,
        ],
    )
    assert res.exit_code == 2 and message in " ".join(res.output.split()), res.output
    assert not (tmp_path / "run").exists()


def test_a_suite_without_a_design_refuses_it():
    from vidaudit.core.contract.roles import sequential_design
    from vidaudit.core.registry import get_suite

    with pytest.raises(ConfigError, match="has no 'adaptive' design"):
        sequential_design(get_suite("stress"), "adaptive", None, [])
