"""simulated:SURFACE.csv: the CSV's rules, the per-trial draws, and a real run on a dry-run manifest."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.errors import ConfigError
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite
from vidaudit.core.types import ModelSpec
from vidaudit.suites.counting.generate import generate
from vidaudit.suites.counting.grid import grid
from vidaudit.suites.counting.simulated import (
    UNDERCOUNT_P,
    SimulatedAdapter,
    read_surface,
    simulated_count,
    wrong_count,
)

runner = CliRunner()


def write_surface(path: Path, rows: list[tuple], header: tuple = ("domain", "N", "F", "accuracy")) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.fixture(scope="module")
def dry_data(tmp_path_factory) -> Path:
    """A dry-run manifest (no video files): blinking, N in 0..3, F in 0.5 and 2.0, 10 seeds."""
    out = tmp_path_factory.mktemp("dry")
    generate(grid(["blinking"], counts=(0, 1, 2, 3), frequencies=(0.5, 2.0), seeds=range(10)), out, dry_run=True)
    assert not (out / "videos").exists()
    return out


def full_rows(acc) -> list[tuple]:
    rows = [("blinking", 0, 1.0, acc(0, 1.0))]
    return rows + [("blinking", n, f, acc(n, f)) for n in (1, 2, 3) for f in (0.5, 2.0)]


# --------------------------------------------------------------------------- the CSV


@pytest.mark.parametrize(
    "rows, header, message",
    [
        ([("blinking", 1, 0.5, 0.5)], ("domain", "N", "F", "acc"), "row 1 must be the header"),
        ([("blinking", 1, 0.5)], None, "row 2 ('blinking,1,0.5'): expected 4 fields"),
        ([("blinking", 1, 0.5, 0.5), ("blinking", "x", 1.0, 0.5)], None, "row 3"),
        ([("blinking", 1, 0.5, 1.5)], None, "row 2 ('blinking,1,0.5,1.5'): accuracy must be in [0, 1]"),
        ([("blinking", 1, 0.5, -0.1)], None, "accuracy must be in [0, 1]"),
        ([("blinking", 1, 0.5, "nan")], None, "accuracy must be in [0, 1]"),
        ([("blinking", 1, "fast", 0.5)], None, "F and accuracy must be numbers"),
        ([("blinking", 1, 0.0, 0.5)], None, "F must be a positive frequency"),
        ([("blinking", -1, 0.5, 0.5)], None, "N must be a non-negative integer"),
        ([("", 1, 0.5, 0.5)], None, "the domain is empty"),
        (
            [("blinking", 1, 0.5, 0.5), ("blinking", 1, "0.50", 0.7)],
            None,
            "row 3 ('blinking,1,0.50,0.7'): the cell blinking N=1 F=0.5 is already given on row 2",
        ),
        ([], None, "has a header but no cells"),
    ],
)
def test_malformed_csv_names_the_row(tmp_path, rows, header, message):
    path = write_surface(tmp_path / "s.csv", rows, header or ("domain", "N", "F", "accuracy"))
    with pytest.raises(ConfigError) as e:
        read_surface(path)
    assert message in str(e.value)


def test_missing_file_and_binary_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the surface CSV"):
        read_surface(tmp_path / "nope.csv")
    (tmp_path / "b.csv").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_surface(tmp_path / "b.csv")


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.tuples(
            st.sampled_from(["blinking", "bounce_ball"]), st.integers(0, 12), st.sampled_from([0.5, 1.0, 1.5, 4.0])
        ),
        st.floats(0.0, 1.0),
        min_size=1,
        max_size=20,
    )
)
def test_csv_round_trip(tmp_path_factory, cells):
    path = write_surface(tmp_path_factory.mktemp("rt") / "s.csv", [(d, n, f, a) for (d, n, f), a in cells.items()])
    assert read_surface(path) == {(d, n, round(f, 6)): a for (d, n, f), a in cells.items()}


def test_a_cell_of_the_data_without_a_row_is_refused(tmp_path, dry_data):
    rows = [r for r in full_rows(lambda n, f: 0.5) if (r[1], r[2]) != (2, 2.0)]
    path = write_surface(tmp_path / "s.csv", rows)
    samples = {s.sample_id: s for s in load_samples(dry_data)}
    with pytest.raises(ConfigError, match=r"no row for 1 cell\(s\) of the data \(e.g. blinking N=2 F=2\)"):
        SimulatedAdapter(ModelSpec.parse(f"simulated:{path}"), samples=samples, suite=get_suite("counting"))


# --------------------------------------------------------------------------- the draws


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.floats(0.0, 0.999999), st.integers(1, 30))
def test_a_wrong_count_is_wrong_and_never_negative(truth, direction, size):
    k = wrong_count(truth, direction, size)
    assert k != truth and k >= 0 and abs(k - truth) == size
    assert (k < truth) == (direction < UNDERCOUNT_P and truth >= size)


def test_draws_are_per_trial_and_match_the_accuracy():
    ids = [f"trial-{i}" for i in range(3000)]
    assert [simulated_count(t, 4, 0.7) for t in ids[:50]] == [simulated_count(t, 4, 0.7) for t in ids[:50]]
    assert all(simulated_count(t, 4, 1.0) == 4 for t in ids[:200])
    assert all(simulated_count(t, 4, 0.0) != 4 for t in ids[:200])
    answers = [simulated_count(t, 6, 0.7) for t in ids]
    assert abs(sum(a == 6 for a in answers) / len(ids) - 0.7) < 0.03
    wrong = [a for a in answers if a != 6]
    assert abs(sum(a < 6 for a in wrong) / len(wrong) - UNDERCOUNT_P) < 0.05  # the undercount skew
    assert max(abs(a - 6) for a in wrong) == 3  # d in 1..ceil(N/2)


# --------------------------------------------------------------------------- a real run, no video files


def _run(data: Path, csv_path: Path, out: Path, *extra: str):
    return runner.invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(data),
            "--model",
            f"simulated:{csv_path}",
            "--condition",
            "native",
            "--condition",
            "frames@2",
            "--out",
            str(out),
            *extra,
        ],
    )


def test_runs_on_a_dry_run_manifest_and_is_scored_normally(tmp_path, dry_data):
    surface = write_surface(tmp_path / "s.csv", full_rows(lambda n, f: 1.0 if f == 0.5 or n == 0 else 0.0))
    res = _run(dry_data, surface, tmp_path / "run")
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["report", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "run" / "report" / "report.json").read_text())["results"]
    cells = results["cells"]
    assert len(cells) == 2 * 7 and all(c["n"] == 10 and c["n_ok"] == 10 for c in cells)
    for c in cells:  # parsed by the counting scorer from \boxed{K}
        assert c["correct"] == (10 if c["frequency_hz"] == 0.5 or c["n_events"] == 0 else 0), c
    assert results["errors"]["simulated:" + str(surface)]["frames@2/structured_trace"]["n_unparseable"] == 0
    assert results["count_boundary"]["simulated:" + str(surface)]["frames@2/structured_trace"]["blinking"] == {
        "0.5": 3,
        "2.0": "<1",
    }


def test_resume_and_rerun_give_the_same_answers(tmp_path, dry_data):
    from vidaudit.run.store.reader import StoreReader

    surface = write_surface(tmp_path / "s.csv", full_rows(lambda n, f: 0.55))
    for name in ("a", "b"):
        assert _run(dry_data, surface, tmp_path / name).exit_code == 0
    assert _run(dry_data, surface, tmp_path / "a").exit_code == 0  # resume: nothing to call
    texts = []
    for name in ("a", "b"):
        with StoreReader(tmp_path / name) as store:
            texts.append({row.trial_id: att.response.text for row, att in store.results()})
            assert store.summary().attempts == 140
    assert texts[0] == texts[1] and len(set(texts[0].values())) > 3


def test_editing_the_surface_makes_new_trials(tmp_path, dry_data):
    from vidaudit.run.store.reader import StoreReader

    surface = write_surface(tmp_path / "s.csv", full_rows(lambda n, f: 0.55))
    assert _run(dry_data, surface, tmp_path / "run").exit_code == 0
    write_surface(surface, full_rows(lambda n, f: 0.9))
    assert _run(dry_data, surface, tmp_path / "run").exit_code == 0
    with StoreReader(tmp_path / "run") as store:
        assert store.summary().trials == 280  # the old answers are not reused for the new surface


def test_bad_surface_through_the_cli_is_a_clear_error_and_writes_nothing(tmp_path, dry_data):
    surface = write_surface(tmp_path / "s.csv", full_rows(lambda n, f: 1.2))
    res = _run(dry_data, surface, tmp_path / "run")
    assert res.exit_code == 2
    assert "row 2" in res.output and "accuracy must be in [0, 1]" in res.output
    assert not (tmp_path / "run").exists()


def test_models_that_read_pixels_still_need_the_videos(tmp_path, dry_data):
    res = runner.invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(dry_data),
            "--model",
            "oracle",
            "--condition",
            "native",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert res.exit_code == 2 and "is missing" in res.output


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=12), latency=st.floats(allow_nan=False) | st.integers(0, 3), label=st.text(max_size=8))
def test_a_response_built_unvalidated_is_the_validated_one(text: str, latency: float, label: str) -> None:
    """The simulated model's ``Response`` skips validation only where it would change nothing."""
    from vidaudit.core.types import Response
    from vidaudit.suites.counting.simulated import _NO_USAGE, _response

    got = _response(text, latency, label)
    want = Response(
        text=text, usage=_NO_USAGE, latency_s=latency, finish_reason="stop", model_version=label, cost_usd=0.0
    )
    assert got == want and got.model_fields_set == want.model_fields_set
    assert got.model_dump_json() == want.model_dump_json()
    assert [type(v) for v in got.__dict__.values()] == [type(v) for v in want.__dict__.values()]
