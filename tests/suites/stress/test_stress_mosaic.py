"""The mosaic probe: the quadrants tile the still, every letter is cut by the centre row, recency
answers, parsers, and the CLI end to end (oracle, chance, ideal-observer at frames#4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clirun import invoke
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Report
from vidaudit.suites.stress.mosaic import scene as sc
from vidaudit.suites.stress.mosaic.generate import plan_rows, temporal_order
from vidaudit.suites.stress.mosaic.scoring import parse_word
from vidaudit.suites.stress.mosaic.tasks import object_options, text_recency


def test_temporal_quadrants_tile_the_still(tmp_path: Path) -> None:
    """The mosaic op's 4 frames, as encoded, unite to the still (Total Observability), one quadrant each."""
    import cv2

    from vidaudit.suites.stress.mosaic.generate import spec_of
    from vidaudit.video.decode import read_frames
    from vidaudit.video.perturb.engine import apply

    img = sc.text_still(3).render()
    still = tmp_path / "s.png"
    cv2.imwrite(str(still), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
    res = apply(still, spec_of("temporal"), tmp_path / "t.mp4", seed=3)
    frames = read_frames(tmp_path / "t.mp4", [0, 1, 2, 3])
    assert sorted(res.meta.map["quadrant"]) == [0, 1, 2, 3] and res.meta.map["quadrant"] == temporal_order(3)
    union = np.maximum.reduce(list(frames))
    assert np.abs(union.astype(int) - img).mean() < 1.0  # encoded: the codec's error only
    # exactly, on the op's own pixels: each frame shows one quadrant, and they tile the still
    from vidaudit.video.perturb.engine import plan_for
    from vidaudit.video.perturb.registry import get_op, resolve
    from vidaudit.video.perturb.source import open_source

    op, p = resolve(spec_of("temporal"))
    plan = plan_for(spec_of("temporal"), open_source(still), seed=3)
    state = op.prepare(p, plan, open_source(still), np.random.default_rng(0))
    exact = [op.frame(i, img, state) for i in range(4)]
    assert np.array_equal(np.maximum.reduce(exact), img)
    assert get_op("mosaic") is op or get_op("mosaic").name == op.name


@settings(max_examples=24, deadline=None)
@given(seed=st.integers(0, 200))
def test_every_letter_is_split_by_the_centre_row(seed: int) -> None:
    still = sc.text_still(seed)
    ink = np.abs(still.render().astype(int) - sc.BG).max(axis=2) > 60
    for a, b in still.letter_columns():
        cell = ink[:, a:b]
        assert cell[:224].any() and cell[224:].any(), still.word


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_objects_lie_in_their_quadrants_and_options_hold(seed: int) -> None:
    order = temporal_order(seed)
    o = sc.objects_still(seed, order)
    assert o == sc.objects_still(seed, order)  # deterministic by seed
    assert o.quadrants[1] == order[3] and o.quadrants[0] in order[:3] and o.shapes[0] != o.shapes[1]
    opts, kinds, letter = object_options(seed, *o.shapes)
    assert len(set(opts)) == 4 and kinds[letter] == "correct" and letter == "ABCD"[seed % 4]
    rec = opts["ABCD".index(next(k for k, v in kinds.items() if v == "recency"))]
    assert o.shapes[1] in rec and o.shapes[0] not in rec


def test_recency_answer_and_balance() -> None:
    assert text_recency("PLANE", sc.TextStill("PLANE").letter_columns(), 3, 448) == "NE"
    assert text_recency("PLANE", sc.TextStill("PLANE").letter_columns(), 0, 448) == "PLA"
    rows = [r for r in plan_rows(8) if r["params"]["stimulus"] == "objects" and r["arrangement"] == "temporal"]
    assert sorted(r["answer"] for r in rows) == sorted("ABCD" * 2)
    words = [r["answer"] for r in plan_rows(24) if r["params"]["stimulus"] == "text" and r["arrangement"] == "spatial"]
    assert sorted(words) == sorted(sc.WORDS)


@given(st.sampled_from(sc.WORDS), st.booleans())
def test_word_parser(word: str, lower: bool) -> None:
    w = word.lower() if lower else word
    assert parse_word(f"It says {w}. \\boxed{{{w}}}")[0] == word
    assert parse_word(w)[0] == word
    assert parse_word("two words") is None and parse_word("\\boxed{A B}") is None


# --------------------------------------------------------------------------- end to end


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root``, through the CLI's entry point in this process (tests/clirun.py)."""
    return invoke(*args, cwd=root)


def _proc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root`` as a real process (a refusal's exit code)."""
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args], cwd=root, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mosaic_e2e")
    for args in (
        ("generate", "stress", "--probe", "mosaic", "--out", str(root / "data")),
        (
            "run",
            "stress",
            "--data",
            str(root / "data"),
            "--model",
            "oracle",
            "--model",
            "chance",
            "--model",
            "ideal-observer",
            "--condition",
            "frames#4",
            "--out",
            str(root / "run"),
        ),
        ("score", str(root / "run")),
        ("report", str(root / "run")),
    ):
        r = _cli(root, *args)
        assert r.returncode == 0, r.stdout + r.stderr
    return root / "run"


def test_e2e_records(run_dir: Path) -> None:
    import json
    import sqlite3

    recs = [ScoreRecord.model_validate_json(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()]
    by = {m: [r for r in recs if r.model == m] for m in ("oracle", "chance", "ideal-observer")}
    assert len(by["oracle"]) == 12 and all(r.correct for r in by["oracle"])
    assert all(r.correct for r in by["ideal-observer"]), [r.sample_id for r in by["ideal-observer"] if not r.correct]
    con = sqlite3.connect(run_dir / "store.sqlite")
    sent = {
        (s, json.loads(f) == [0, 1, 2, 3], json.loads(f) == [0])
        for s, f in con.execute("select t.sample_id, a.frame_indices from attempts a join trials t using (trial_id)")
    }
    assert all(four if "-temporal-" in s else one for s, four, one in sent)  # exactly the mosaic's frames


def test_e2e_refuses_a_resampling_condition(run_dir: Path) -> None:
    r = _proc(
        run_dir.parent,
        "run",
        "stress",
        "--data",
        str(run_dir.parent / "data"),
        "--model",
        "oracle",
        "--condition",
        "frames@2",
        "--out",
        str(run_dir.parent / "run2"),
    )
    assert r.returncode != 0 and "exactly its 4 frames" in " ".join((r.stdout + r.stderr).split())


def test_e2e_report(run_dir: Path) -> None:
    rep = Report.model_validate_json((run_dir / "report" / "report.json").read_text())
    sec = next(s for s in rep.sections if s.id == "stress-mosaic")
    t = sec.tables[0]
    assert {"chance", "paper reported", "human ceiling", "recency errors / errors"} <= set(t.columns)
    assert all(row[-1] == "not measured" for row in t.rows)
    assert ["humans (paper)", "84", "96"] in sec.tables[1].rows
    assert rep.results["mosaic"]["chance"]["objects"] == 0.25
