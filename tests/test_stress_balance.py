"""Answers balanced over options in every stress preset (docs/stress.md, "Balanced answers").

A ``constant:X`` answerer, for every option X a probe's task offers, scores at most ``ceil(m / k) / m`` on
every preset, where m is the number of items of the task (a scene shown under several arrangements, or an
item asked with and without abstention, is one item) and k the number of options: exactly the chance share
1/k when k divides m, and less than 1/m above it otherwise (the margin a finite preset cannot avoid; with
one item, as smoke's wireframe window and counting cells, the bound is vacuous and says so).

Smoke presets are generated for real and every constant answer goes through the probe's own
``constant_answer`` and ``score``; paper presets are checked on their answer keys, planned without
rendering (rendering them takes minutes of CPU).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.contract.suite import ScoreInput
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import Sample
from vidaudit.suites.stress.camera_motion.generate import PRESETS as CAMERA_PRESETS
from vidaudit.suites.stress.camera_motion.generate import plan_samples
from vidaudit.suites.stress.camera_motion.options import DIRECTIONS
from vidaudit.suites.stress.common import LETTERS
from vidaudit.suites.stress.cross_frame.generate import PRESETS as CF_PRESETS
from vidaudit.suites.stress.cross_frame.generate import synthetic_rows
from vidaudit.suites.stress.expectation.generate import PRESETS as EXP_PRESETS
from vidaudit.suites.stress.expectation.generate import plan_gap
from vidaudit.suites.stress.mosaic.generate import PRESETS as MOSAIC_PRESETS
from vidaudit.suites.stress.mosaic.generate import plan_rows as mosaic_rows
from vidaudit.suites.stress.mosaic.scene import WORDS
from vidaudit.suites.stress.probe import GenerateOptions
from vidaudit.suites.stress.procedures import PROCEDURES, planned_sources
from vidaudit.suites.stress.shortcuts.generate import PRESETS as SC_PRESETS
from vidaudit.suites.stress.shortcuts.questions import (
    ABSTAIN,
    CONDITIONS,
    QUESTIONS,
    build_key,
)
from vidaudit.suites.stress.suite import SUITE as STRESS
from vidaudit.suites.stress.wireframe.generate import PRESETS as WF_PRESETS
from vidaudit.suites.stress.wireframe.generate import build_scene
from vidaudit.suites.stress.wireframe.generate import plan_rows as wireframe_rows
from vidaudit.suites.stress.wireframe.scene import COUNTS, PAIRS


def bound(m: int, k: int) -> float:
    """The most a constant answer may score over m items of k options (see the module docstring)."""
    return math.ceil(m / k) / m


def check_keys(keys: Iterable[tuple[Any, Any, str]], options: Callable[[Any], list[str]]) -> dict[Any, float]:
    """``keys``: (group, item, answer) per sample; fails when one answer holds more than ``bound`` of a group's
    items. Returns the worst share per group."""
    items: dict[Any, dict[Any, str]] = defaultdict(dict)
    for group, item, answer in keys:
        assert items[group].setdefault(item, answer) == answer, f"item {item} of {group} has two answers"
    worst = {}
    for group, by_item in items.items():
        m, k = len(by_item), len(options(group))
        counts = Counter(by_item.values())
        assert set(counts) <= set(options(group)), (group, counts)
        worst[group] = max(counts.values()) / m
        assert worst[group] <= bound(m, k) + 1e-9, f"{group}: {counts} over {m} items of {k} options"
    return worst


# --------------------------------------------------------------------------- smoke: generated and scored


def _item(s: Sample) -> tuple[Any, Any]:
    """(task group, item) of a smoke sample: what a constant answer is scored over, and the unit it repeats."""
    p = s.params
    probe = p["probe"]
    if probe == "camera_motion":
        return ("camera_motion", p["synthesis"]), s.sample_id
    if probe == "cross_frame":
        return ("cross_frame", bool(p["abstention"])), p["item"]
    if probe == "wireframe":
        return ("wireframe", p["task"]), (p["seed"], p["line_width"])
    if probe == "mosaic":
        return ("mosaic", p["stimulus"], p["arrangement"]), p["seed"]
    if probe == "shortcuts":
        return ("shortcuts",), s.sample_id
    if probe == "sycophancy":
        return ("sycophancy", p["category"]), s.sample_id
    return ("expectation", p["task"]), s.sample_id


def _values(s: Sample) -> list[str]:
    """Every constant answer a probe takes for this sample's task (its options)."""
    p = s.params
    probe = p["probe"]
    if probe == "camera_motion":
        return list(DIRECTIONS)
    if probe == "cross_frame":
        return list(p["letters"])
    if probe == "wireframe":
        return {"connectivity": [", ".join(x) for x in PAIRS], "window": [", ".join(x) for x in PAIRS],
                "spatial": ["left", "right"], "counting": [str(c) for c in COUNTS]}[p["task"]]
    if probe == "mosaic":
        return list(LETTERS[:4]) if p["stimulus"] == "objects" else list(WORDS)
    if probe == "shortcuts":
        return list(LETTERS[:4])
    if probe == "sycophancy":
        return ["AGREE", "DISAGREE"]
    return list(LETTERS[:len(p["options"])])


SMOKE_PROBES = ("camera_motion", "cross_frame", "wireframe", "mosaic", "shortcuts", "expectation", "sycophancy")


@pytest.fixture(scope="module")
def smoke_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Sample]]:
    root = tmp_path_factory.mktemp("balance")
    out = {}
    for name in SMOKE_PROBES:
        manifest = STRESS.probe(name).generate(root / name, GenerateOptions(preset="smoke"))
        out[name] = load_samples(Path(manifest).parent)
    return out


@pytest.mark.parametrize("name", SMOKE_PROBES)
def test_a_constant_answer_scores_at_most_chance_on_the_smoke_preset(name: str, smoke_sets) -> None:
    probe = STRESS.probe(name)
    samples = [s for s in smoke_sets[name] if s.params.get("options", ["x"]) is not None]   # MCQ / closed tasks
    assert samples
    groups: dict[Any, list[Sample]] = defaultdict(list)
    for s in samples:
        groups[_item(s)[0]].append(s)
    for group, ss in groups.items():
        values = _values(ss[0])
        m = len({_item(s)[1] for s in ss})
        for v in values:
            hit_items = {_item(s)[1] for s in ss
                         if probe.score(ScoreInput(s, probe.constant_answer(s, v), "ok")).correct is True}
            assert len(hit_items) / m <= bound(m, len(values)) + 1e-9, \
                f"{name} {group}: constant:{v} is right on {len(hit_items)} of {m} items"
        # and the oracle is right everywhere: the scoring path above can say yes
        assert all(probe.score(ScoreInput(s, probe.oracle_answer(s), "ok")).correct for s in ss)


def test_the_smoke_filled_in_gap_option_moves(smoke_sets) -> None:
    """The issue's case: the filled-in option of the temporal gap sat at A in every smoke item."""
    gap = [s for s in smoke_sets["expectation"] if s.params["task"] == "gap_mcq"]
    filled = [s.params["option_kinds"].index("filled") for s in gap]
    visible = [s.params["option_kinds"].index("visible") for s in gap]
    assert len(set(filled)) == len(gap) and len(set(visible)) == len(gap)


# --------------------------------------------------------------------------- paper presets: planned keys


def test_paper_camera_motion_keys() -> None:
    for preset in CAMERA_PRESETS.values():
        rows = plan_samples(preset, syntheses=("2d", "3d"))
        check_keys([((r["params"]["synthesis"],), r["sample_id"], r["params"]["motion"]) for r in rows],
                   lambda g: list(DIRECTIONS))


def test_paper_wireframe_keys() -> None:
    opts = {"connectivity": [", ".join(x) for x in PAIRS], "window": [", ".join(x) for x in PAIRS],
            "spatial": ["left", "right"], "counting": [str(c) for c in COUNTS]}
    for preset in WF_PRESETS.values():
        rows = wireframe_rows(preset)
        cells = {(r["task"], r["seed"], r["width"]) for r in rows}
        keys = [((task, width if task in ("connectivity", "window") else None), seed,
                 build_scene(task, seed, width)[2]) for task, seed, width in sorted(cells)]
        worst = check_keys(keys, lambda g: opts[g[0]])
        if preset.name == "paper":      # ten seeds per width: every pair exactly once per width
            assert all(worst[g] == pytest.approx(0.1) for g in worst if g[0] in ("connectivity", "window"))


def test_paper_mosaic_keys() -> None:
    for n in MOSAIC_PRESETS.values():
        rows = [r for r in mosaic_rows(n) if r["answer"] in LETTERS]
        check_keys([((r["arrangement"],), r["seed"], r["answer"]) for r in rows], lambda g: list(LETTERS[:4]))


def test_paper_cross_frame_keys() -> None:
    for preset in CF_PRESETS.values():
        rows = synthetic_rows(preset, preset.items)
        worst = check_keys([(("forced",), r["video"], LETTERS[r["answer"]]) for r in rows],
                           lambda g: list(LETTERS[:5]))
        assert worst[("forced",)] == pytest.approx(bound(preset.items, 5))
        assert Counter(LETTERS[r["answer"]] for r in rows)["A"] >= 1


def test_paper_expectation_gap_keys() -> None:
    for preset in EXP_PRESETS.values():
        names = [(f"{p}-s{s}", PROCEDURES[p]) for p, s in planned_sources(preset.procedures, preset.seeds)]
        plans = [plan_gap(name, steps, i) for i, (name, steps) in enumerate(names)]
        check_keys([(("visible",), i, LETTERS[k.index("visible")]) for i, (_, _, k) in enumerate(plans)],
                   lambda g: list(LETTERS[:4]))
        check_keys([(("filled",), i, LETTERS[k.index("filled")]) for i, (_, _, k) in enumerate(plans)],
                   lambda g: list(LETTERS[:4]))


def test_paper_shortcuts_keys() -> None:
    """The generator puts item n's correct option at ``n mod 4``: every letter 72 times of the paper's 288."""
    for preset in SC_PRESETS.values():
        n_items = preset.procedures * preset.seeds * (len(CONDITIONS) - 1 + len(preset.blank_s)) * len(QUESTIONS)
        letters = Counter(LETTERS[n % 4] for n in range(n_items))
        assert max(letters.values()) <= math.ceil(n_items / 4)


@settings(max_examples=40, deadline=None)
@given(slot=st.integers(0, 3), seed=st.integers(0, 10_000), q=st.sampled_from(QUESTIONS),
       cond=st.sampled_from(CONDITIONS), proc=st.sampled_from(sorted(PROCEDURES)))
def test_shortcut_key_puts_the_answer_at_its_slot(slot: int, seed: int, q: str, cond: str, proc: str) -> None:
    steps = list(PROCEDURES[proc])
    shown = steps[1:] + steps[:1]        # every position differs from the canonical one
    key = build_key(q, cond, steps, shown, np.random.default_rng(seed), slot=slot)
    assert key.correct == LETTERS[slot] and len(set(key.options)) == 4
    assert key.lp != key.correct
    if cond != "reordered":
        assert key.options[slot] == ABSTAIN
