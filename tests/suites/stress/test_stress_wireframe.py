"""The wireframe probe: scenes, arrangements, parser, refusal of resampling conditions, and the CLI end to
end (generate -> run with oracle, chance, ideal-observer at frames#4 -> score -> report)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clirun import invoke
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Report
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Sample
from vidaudit.suites.stress.wireframe import scene as sc
from vidaudit.suites.stress.wireframe.generate import build_scene
from vidaudit.suites.stress.wireframe.probe import PROBE
from vidaudit.suites.stress.wireframe.scoring import parse_letter_set


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), width=st.sampled_from((1, 2, 3, 5, 10)), arr=st.sampled_from(sc.ARRANGEMENTS))
def test_arrangements_unite_to_the_control_image(seed: int, width: int, arr: str) -> None:
    img = sc.render(sc.connectivity_scene(seed, width))
    frames = sc.arrange(img, arr)
    assert len(frames) == 4
    assert np.array_equal(np.maximum.reduce(frames), img)
    shown = np.sum(visible := sc.visible_masks(arr), axis=0)
    assert shown.min() >= 1
    if arr == "adversarial":  # the two temporal groups of a 2-frame patch hold the two halves
        assert np.array_equal(visible[0], visible[1]) and np.array_equal(visible[2], visible[3])
        assert visible[0][:, :224].all() and not visible[0][:, 224:].any()


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), width=st.sampled_from((1, 2, 3, 5, 10)), kind=st.sampled_from(("cross", "window")))
def test_scene_geometry(seed: int, width: int, kind: str) -> None:
    s = sc.connectivity_scene(seed, width, kind)
    assert s == sc.connectivity_scene(seed, width, kind)  # deterministic by seed
    assert s.neighbours(sc.QUERY) == sorted(sc.PAIRS[seed % 10])
    assert sorted(s.nodes) == list(sc.NODES)
    for w in s.wires:
        xs = [p[0] for p in w.points]
        if kind == "cross":  # every line crosses x = W/2: split between the temporal groups
            assert min(xs) < 224 < max(xs)
        else:  # crosses x = 112 or 336, never 224: inside one temporal group
            assert (min(xs) < 112 < max(xs) <= 224) or (224 <= min(xs) < 336 < max(xs))
    assert all(r < 224 - sc.NODE_R or r > 224 + sc.NODE_R for r, _ in s.nodes.values())


def test_answers_are_balanced() -> None:
    pairs = [tuple(build_scene("connectivity", s, 3)[2].split(", ")) for s in range(10)]
    assert sorted(pairs) == sorted(sc.PAIRS) and pairs[0] == ("D", "F")
    sides = [build_scene("spatial", s, 3)[2] for s in range(6)]
    assert sides.count("left") == sides.count("right") == 3
    assert [build_scene("counting", s, 0)[2] for s in range(6)] == [str(n) for n in sc.COUNTS]


@given(
    st.lists(st.sampled_from(sc.NODES), min_size=1, max_size=5),
    st.sampled_from([", ", ",", " and ", " "]),
    st.booleans(),
)
def test_letter_set_parser(letters: list[str], sep: str, lower: bool) -> None:
    body = sep.join(x.lower() if lower else x for x in letters)
    got = parse_letter_set(f"I think B joins {body}. \\boxed{{{body}}}")
    assert got is not None and got[0] == sorted(set(letters))
    assert parse_letter_set("B joins D and F") is None
    assert parse_letter_set("\\boxed{}") is None


def _sample(n_frames: int) -> Sample:
    from vidaudit.core.types import VideoRef

    return Sample(
        sample_id="x",
        suite="stress",
        question="q",
        answer="D, F",
        params={"probe": "wireframe", "task": "connectivity", "arrangement": "adversarial", "query": ["B"]},
        video=VideoRef(path="v.mp4", fps=2.0, width=448, height=448, n_frames=n_frames, duration_s=2.0),
    )


@pytest.mark.parametrize("cond", ["frames#4", "frames#8", "native@all", "frames@2", "native@2"])
def test_conditions_that_send_the_four_frames_are_accepted(cond: str) -> None:
    from vidaudit.run.conditions import parse_condition

    PROBE.render_prompt(_sample(4), parse_condition(cond, "mcq"))


@pytest.mark.parametrize("cond", ["frames#2", "frames#3", "frames@1", "frames@4", "native@1", "keyframes"])
def test_conditions_that_resample_are_refused(cond: str) -> None:
    from vidaudit.run.conditions import parse_condition

    with pytest.raises(ConfigError, match="exactly its 4 frames"):
        PROBE.render_prompt(_sample(4), parse_condition(cond, "mcq"))


# --------------------------------------------------------------------------- end to end


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root``, through the CLI's entry point in this process (tests/clirun.py)."""
    return invoke(*args, cwd=root)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wireframe_e2e")
    for args in (
        ("generate", "stress", "--probe", "wireframe", "--out", str(root / "data")),
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
    recs = [ScoreRecord.model_validate_json(x) for x in (run_dir / "scores.jsonl").read_text().splitlines()]
    by = {m: [r for r in recs if r.model == m] for m in ("oracle", "chance", "ideal-observer")}
    assert len(by["oracle"]) == 27 and all(r.correct for r in by["oracle"])
    # the observer integrates the four frames: every arrangement holds the whole scene
    assert all(r.correct for r in by["ideal-observer"]), [r.sample_id for r in by["ideal-observer"] if not r.correct]
    assert not all(r.correct for r in by["chance"])
    assert {r.params["arrangement"] for r in recs} == set(sc.ARRANGEMENTS)


def test_e2e_exactly_the_four_frames_reach_the_model(run_dir: Path) -> None:
    import json
    import sqlite3

    con = sqlite3.connect(run_dir / "store.sqlite")
    sent = {json.dumps(json.loads(f)) for (f,) in con.execute("select frame_indices from attempts")}
    assert sent == {"[0, 1, 2, 3]"}


def test_e2e_report(run_dir: Path) -> None:
    rep = Report.model_validate_json((run_dir / "report" / "report.json").read_text())
    sec = next(s for s in rep.sections if s.id == "stress-wireframe")
    t = sec.tables[0]
    assert {"chance", "paper reported", "human ceiling"} <= set(t.columns)
    assert all(row[-1] == "not measured" for row in t.rows)
    adv = next(r for r in t.rows if r[0] == "oracle" and r[2] == "connectivity" and r[3] == "adversarial")
    assert adv[t.columns.index("paper reported")].startswith("0 (Qwen2.5-VL-7B")
    assert rep.results["wireframe"]["chance"]["connectivity"] == pytest.approx(0.1)
