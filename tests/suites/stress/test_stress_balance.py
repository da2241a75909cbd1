"""Answers balanced inside every cell a report scores (issue 32; docs/stress.md, "Balanced answers").

A ``constant:X`` answerer, for every option X a probe's task offers, scores at most ``ceil(m / k) / m`` in every
cell any report table scores separately, where m is the cell's number of items and k the number of options that
can be the answer: the chance share 1/k when k divides m, and less than 1/m above it otherwise.

The cells are not listed here: each probe's own report (``Probe.aggregate``) is run on the constant answerers'
records, and every accuracy cell it returns (a dict with ``n_planned`` and ``n_correct``, at any depth of its
results) is checked. The only cells left out are those that select their items by the answer itself (the
recall of one class: camera's per-direction rows, expectation's forward / reverse clip rows, sycophancy's
false-claim rejection and true-claim acceptance), where a constant answer naming that class scores 100% by
definition; they are named in ``PER_CLASS``.

Smoke presets are generated for real and every constant answer goes through the probe's own
``constant_answer`` and ``score`` on the written manifest; so are cross_frame's paper and table10 sets (seconds
to render). The other paper presets (minutes of rendering) are checked on their answer keys, planned without
rendering by the functions their generators call (``plan_samples``, ``plan_rows``, ``plan_gap``,
``shortcuts.key_plan``, ``cross_frame.synthetic_rows``, ``sycophancy.samples_of_pair``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.suite import AggregateInput, ScoreInput
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import Sample, VideoRef
from vidaudit.suites.stress import SUITE as STRESS
from vidaudit.suites.stress.camera_motion.generate import PRESETS as CAMERA_PRESETS
from vidaudit.suites.stress.camera_motion.generate import plan_samples
from vidaudit.suites.stress.camera_motion.options import DIRECTIONS
from vidaudit.suites.stress.common import LETTERS
from vidaudit.suites.stress.cross_frame.generate import PRESETS as CF_PRESETS
from vidaudit.suites.stress.cross_frame.nextqa import split_of
from vidaudit.suites.stress.cross_frame.synthetic import synthetic_rows
from vidaudit.suites.stress.expectation.generate import PRESETS as EXP_PRESETS
from vidaudit.suites.stress.expectation.generate import plan_gap
from vidaudit.suites.stress.expectation.prompts import DIRECTION_OPTIONS
from vidaudit.suites.stress.mosaic.generate import PRESETS as MOSAIC_PRESETS
from vidaudit.suites.stress.mosaic.generate import plan_rows as mosaic_rows
from vidaudit.suites.stress.mosaic.scene import WORDS
from vidaudit.suites.stress.probe import GenerateOptions
from vidaudit.suites.stress.procedures import PROCEDURES, planned_sources
from vidaudit.suites.stress.shortcuts.generate import PRESETS as SC_PRESETS
from vidaudit.suites.stress.shortcuts.generate import key_columns, key_plan
from vidaudit.suites.stress.shortcuts.questions import ABSTAIN, CONDITIONS, QUESTIONS, build_key
from vidaudit.suites.stress.sycophancy.generate import samples_of_pair
from vidaudit.suites.stress.sycophancy.pairs import Pair
from vidaudit.suites.stress.wireframe.generate import PRESETS as WF_PRESETS
from vidaudit.suites.stress.wireframe.generate import build_scene
from vidaudit.suites.stress.wireframe.generate import plan_rows as wireframe_rows
from vidaudit.suites.stress.wireframe.scene import COUNTS, PAIRS

WIREFRAME_VALUES = {
    "connectivity": [", ".join(x) for x in PAIRS],
    "window": [", ".join(x) for x in PAIRS],
    "spatial": ["left", "right"],
    "counting": [str(c) for c in COUNTS],
}
#: results keys of the cells that select their items by the answer (one class's recall): left out
PER_CLASS = ("per_direction", "false_claim_rejection", "true_claim_acceptance", "forward", "reverse")


def bound(m: int, k: int) -> int:
    """The most items of m a constant answer may get right with k options that can be the answer."""
    return math.ceil(m / k)


# --------------------------------------------------------------------------- records and the reports' cells


def record(
    probe: str,
    sid: str,
    params: dict[str, Any],
    value: str,
    condition: str,
    correct: bool | None,
    metrics: dict[str, Any] | None = None,
) -> ScoreRecord:
    return ScoreRecord(
        trial_id=f"{sid}|{value}|{condition}",
        sample_id=sid,
        suite="stress",
        model=f"constant:{value}",
        model_role="constant",
        condition=condition,
        group_id=sid,
        status="ok",
        correct=correct,
        params={"probe": probe, **params},
        metrics=metrics or {},
    )


def cells(tree: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every accuracy cell (``n_planned`` and ``n_correct``) of a report's results, with its path of keys."""
    if isinstance(tree, dict):
        if "n_planned" in tree and "n_correct" in tree:
            yield path, tree
        for key, sub in tree.items():
            yield from cells(sub, (*path, str(key)))
    elif isinstance(tree, list):
        for i, sub in enumerate(tree):
            yield from cells(sub, (*path, str(i)))


def options_of(probe: str, path: tuple[str, ...], cell: dict[str, Any], owner: dict[str, Any]) -> int:
    """k: how many options can be the answer in this cell (the abstention option of cross_frame never is)."""
    if probe == "wireframe":
        return len(WIREFRAME_VALUES[owner["task"]])
    if probe == "mosaic":
        return 4 if owner["stimulus"] == "objects" else len(WORDS)
    if probe == "expectation":
        return 4 if "gap" in path else 2
    return {"camera_motion": 6, "cross_frame": 5, "shortcuts": 4, "sycophancy": 2}[probe]


def check_report(probe: str, records: Sequence[ScoreRecord]) -> int:
    """Run the probe's report on ``records`` and check every cell it scores; returns how many were checked."""
    report = STRESS.probe(probe).aggregate(AggregateInput(records=list(records), samples={}))
    res = report.results[probe]["cells"]
    checked = 0
    for key, owner in res.items():
        for path, cell in cells(owner, (key,)):
            m = cell["n_planned"]
            if not m or any(p in PER_CLASS for p in path):
                continue
            k = options_of(probe, path, cell, owner)
            assert cell["n_correct"] <= bound(m, k), (
                f"{probe} {'/'.join(path)}: a constant answer is right on {cell['n_correct']} of {m} (k={k})"
            )
            checked += 1
    return checked


# --------------------------------------------------------------------------- smoke: generated, scored, reported


def _values(s: Sample) -> list[str]:
    """Every constant answer a probe takes for this sample's task (its options), or none for free text."""
    p = s.params
    probe = p["probe"]
    if probe == "camera_motion":
        return list(DIRECTIONS)
    if probe == "cross_frame":
        return list(p["letters"])
    if probe == "wireframe":
        return WIREFRAME_VALUES[p["task"]]
    if probe == "mosaic":
        return list(LETTERS[:4]) if p["stimulus"] == "objects" else list(WORDS)
    if probe == "shortcuts":
        return list(LETTERS[:4])
    if probe == "sycophancy":
        return ["AGREE", "DISAGREE"]
    return list(LETTERS[: len(p["options"])]) if p.get("options") else []


SMOKE_PROBES = ("camera_motion", "cross_frame", "wireframe", "mosaic", "shortcuts", "expectation", "sycophancy")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every probe's smoke set, and cross_frame's paper and table10 sets, written by their generators."""
    root = tmp_path_factory.mktemp("balance")
    out = {}
    for name in SMOKE_PROBES:
        out[name] = Path(STRESS.probe(name).generate(root / name, GenerateOptions(preset="smoke"))).parent
    for preset in ("paper", "table10"):
        out[f"cross_frame:{preset}"] = Path(
            STRESS.probe("cross_frame").generate(root / f"cf-{preset}", GenerateOptions(preset=preset))
        ).parent
    return out


def constant_records(name: str, data: Path) -> list[ScoreRecord]:
    """The records of every constant answerer on the written manifest, through the probe's own hooks, under the
    conditions its run config names (cross_frame: raw and masked, which its report pairs)."""
    probe = STRESS.probe(name)
    conditions = ["frames#4"]
    if name == "cross_frame":
        conditions = yaml.safe_load((data / "cross_frame.yaml").read_text())["conditions"]
    out = []
    for s in load_samples(data):
        for v in _values(s):
            ts = probe.score(ScoreInput(s, probe.baselines.constant_answer(s, v), "ok"))
            for cond in conditions:
                out.append(record(name, s.sample_id, STRESS.record_params(s), v, cond, ts.correct, dict(ts.metrics)))
    return out


@pytest.mark.parametrize("name", [*SMOKE_PROBES, "cross_frame:paper", "cross_frame:table10"])
def test_a_constant_answer_scores_at_most_chance_in_every_reported_cell(name: str, generated) -> None:
    probe = name.split(":")[0]
    records = constant_records(probe, generated[name])
    assert records
    if probe == "sycophancy":  # its reported accuracy is balanced: (rejection + acceptance) / 2
        res = STRESS.probe(probe).aggregate(AggregateInput(records=records, samples={})).results[probe]["cells"]
        for c in res.values():
            for block in [c["overall"], *c["per_category"].values()]:
                assert block["balanced_accuracy"]["accuracy"] == pytest.approx(0.5)
    assert check_report(probe, records) > 0 or probe == "sycophancy"  # its accuracy cells are per class
    if probe == "cross_frame":  # the abstention letter is never the key (k = 5 with abstention too)
        assert all(s.answer != "F" for s in load_samples(generated[name]))


def test_the_oracle_is_right_everywhere_on_smoke(generated) -> None:
    """The scoring path the constant answers go through can say yes."""
    for name in SMOKE_PROBES:
        probe = STRESS.probe(name)
        closed = [s for s in load_samples(generated[name]) if _values(s)]
        assert closed and all(
            probe.score(ScoreInput(s, probe.baselines.oracle_answer(s), "ok")).correct for s in closed
        )


def test_the_smoke_filled_in_gap_option_moves(generated) -> None:
    """The issue's case: the filled-in option of the temporal gap sat at A in every smoke item."""
    gap = [s for s in load_samples(generated["expectation"]) if s.params["task"] == "gap_mcq"]
    filled = [s.params["option_kinds"].index("filled") for s in gap]
    visible = [s.params["option_kinds"].index("visible") for s in gap]
    assert len(set(filled)) == len(gap) and len(set(visible)) == len(gap)


# --------------------------------------------------------------------------- paper presets: planned keys


def planned(probe: str, rows: Sequence[tuple[str, dict[str, Any], str, Sequence[str]]]) -> list[ScoreRecord]:
    """Constant-answer records of planned samples: (sample id, params the report reads, answer, its values)."""
    return [
        record(probe, sid, params, v, "frames#4", v == answer) for sid, params, answer, values in rows for v in values
    ]


def test_paper_camera_motion_keys() -> None:
    for preset in CAMERA_PRESETS.values():
        rows = plan_samples(preset, syntheses=("2d", "3d"))
        assert check_report(
            "camera_motion",
            planned(
                "camera_motion",
                [
                    (
                        r["sample_id"],
                        {k: r["params"][k] for k in ("motion", "synthesis")},
                        r["params"]["motion"],
                        DIRECTIONS,
                    )
                    for r in rows
                ],
            ),
        )


def test_paper_wireframe_keys() -> None:
    for preset in WF_PRESETS.values():
        rows = wireframe_rows(preset)
        answers = {key: build_scene(*key)[2] for key in {(r["task"], r["seed"], r["width"]) for r in rows}}
        assert check_report(
            "wireframe",
            planned(
                "wireframe",
                [
                    (
                        r["sample_id"],
                        {"task": r["task"], "arrangement": r["arrangement"], "line_width": r["width"]},
                        answers[r["task"], r["seed"], r["width"]],
                        WIREFRAME_VALUES[r["task"]],
                    )
                    for r in rows
                ],
            ),
        )


def test_paper_mosaic_keys() -> None:
    for n in MOSAIC_PRESETS.values():
        assert check_report(
            "mosaic",
            planned(
                "mosaic",
                [
                    (
                        r["sample_id"],
                        {k: r["params"][k] for k in ("stimulus", "arrangement")},
                        r["answer"],
                        LETTERS[:4] if r["params"]["stimulus"] == "objects" else WORDS,
                    )
                    for r in mosaic_rows(n)
                ],
            ),
        )


def test_paper_expectation_keys() -> None:
    for preset in EXP_PRESETS.values():
        names = [(f"{p}-s{s}", PROCEDURES[p]) for p, s in planned_sources(preset.procedures, preset.seeds)]
        rows = []
        for i, (name, steps) in enumerate(names):
            _, _, kinds = plan_gap(name, steps, i)
            rows.append((f"{name}-gap", {"task": "gap_mcq"}, LETTERS[kinds.index("visible")], LETTERS[:4]))
            for direction, option in (("forward", "forward"), ("reverse", "in reverse")):
                rows.append(
                    (
                        f"{name}-{direction}",
                        {"task": "direction", "direction": direction},
                        LETTERS[DIRECTION_OPTIONS.index(option)],
                        LETTERS[:2],
                    )
                )
        assert check_report("expectation", planned("expectation", rows))


def shortcut_rows(n_sources: int, blank_s: tuple[float, ...]) -> list[tuple[str, dict[str, Any], str, Sequence[str]]]:
    slots = key_plan(n_sources, blank_s)
    return [
        (
            f"s{i}-{vc}{d}-{q}",
            {"video_condition": vc, "question_kind": q, "blank_s": d},
            LETTERS[slots[i, c]],
            LETTERS[:4],
        )
        for i in range(n_sources)
        for c in key_columns(blank_s)
        for vc, d, q in [c]
    ]


def test_paper_shortcuts_keys() -> None:
    """The paper preset's 288 items (16 sources), through the generator's own key plan (``key_plan``). Before
    issue 32, item n took ``n mod 4``: each (condition, question) cell of 16 items had two letters, 8 each, and a
    constant letter scored 50% there."""
    for preset in SC_PRESETS.values():
        n_sources = preset.procedures * preset.seeds
        records = planned("shortcuts", shortcut_rows(n_sources, preset.blank_s))
        assert len({r.sample_id for r in records}) == n_sources * len(key_columns(preset.blank_s))
        assert check_report("shortcuts", records)


@pytest.mark.parametrize("n_sources", range(1, 9))
@pytest.mark.parametrize(
    "blank_s", [(2.0,), (10.0, 45.0), (5.0, 10.0, 20.0, 30.0, 45.0, 60.0), tuple(5.0 * (i + 1) for i in range(12))]
)
def test_shortcut_keys_for_any_source_count(n_sources: int, blank_s: tuple[float, ...]) -> None:
    """``--seeds``, ``--set blank_s`` and a user's folder change the number of sources and durations: every
    residue of the source count modulo 4 is planned balanced."""
    assert check_report("shortcuts", planned("shortcuts", shortcut_rows(n_sources, blank_s)))


@pytest.mark.parametrize("n_items", range(1, 41))
def test_cross_frame_keys_for_any_item_count(n_items: int) -> None:
    """``--seeds N`` sets the synthetic item count: item i's answer is at ``i mod 5`` and the templates alternate
    splits (T at even i, S at odd i), so each split cycles through A-E every 5 of its items and the T and S splits
    and both together stay balanced for every N."""
    rows = synthetic_rows(n_items, CF_PRESETS["smoke"].hold)
    recs = []
    for i, r in enumerate(rows):
        for abstention in (False, True):
            params = {"item": r["video"], "split": split_of(r["type"]), "abstention": abstention}
            for cond in ("frames@6", "frames@24+strip_mask(S=128,k=4,orientation=vertical,v=24)"):
                recs += [
                    record("cross_frame", f"{i}-{abstention}", params, v, cond, v == LETTERS[r["answer"]])
                    for v in LETTERS[: 5 + abstention]
                ]
    assert check_report("cross_frame", recs)


def test_sycophancy_every_pair_gives_one_agree_and_one_disagree() -> None:
    """The generator's only way to a sample (``samples_of_pair``): each category cell of every preset holds as many
    AGREE as DISAGREE answers, so a constant answer's balanced accuracy is 50%."""
    video = VideoRef(path="v.mp4", sha256=None, fps=10.0, width=32, height=32, n_frames=10, duration_s=1.0)
    for cat in ("TR", "FGA", "SR", "OA", "COUNT"):
        pair = Pair(
            pair_id=f"p-{cat}",
            category=cat,
            original="A red ball.",
            modified="A blue ball.",
            modification_description="colour",
            source={"source": "test"},
        )
        assert [s.answer for s in samples_of_pair(pair, video)] == ["DISAGREE", "AGREE"]


@settings(max_examples=40, deadline=None)
@given(
    slot=st.integers(0, 3),
    seed=st.integers(0, 10_000),
    q=st.sampled_from(QUESTIONS),
    cond=st.sampled_from(CONDITIONS),
    proc=st.sampled_from(sorted(PROCEDURES)),
)
def test_shortcut_key_puts_the_answer_at_its_slot(slot: int, seed: int, q: str, cond: str, proc: str) -> None:
    steps = list(PROCEDURES[proc])
    shown = steps[1:] + steps[:1]  # every position differs from the canonical one
    key = build_key(q, cond, steps, shown, np.random.default_rng(seed), slot=slot)
    assert key.correct == LETTERS[slot] and len(set(key.options)) == 4
    assert key.lp != key.correct
    if cond != "reordered":
        assert key.options[slot] == ABSTAIN
