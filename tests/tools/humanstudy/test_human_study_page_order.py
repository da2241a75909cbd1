"""A claim and its control never sit side by side on an exported study page (issue 32; docs/human-study.md).

Read from what export wrote: the page's own order (its ``data-item-id`` sections) and the manifest's. Before
issue 32 the page order was a plain shuffle of the split units, and a claim sat beside its control in 2 of
353 pairs of one export; putting that shuffle back makes ``test_exported_pages_keep_claims_and_controls_apart``
fail on most seeds."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_human_study import oracle_run
from vidaudit.core.manifest import load_samples
from vidaudit.tools.humanstudy.export import Draw, export_study
from vidaudit.tools.humanstudy.items import StudyItem
from vidaudit.tools.humanstudy.select import arrange_apart, page_order

SECTION = re.compile(r'<section class="item" data-item-id="([^"]+)"')


@pytest.fixture(scope="module")
def sycophancy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return oracle_run(tmp_path_factory.mktemp("page_order"), "sycophancy", "frames#4")


def page_samples(page: Path) -> list[str]:
    """The sample ids in the order the written page shows them (its sections, mapped by the written manifest)."""
    manifest = json.loads(page.with_suffix(".json").read_text())
    by_item = {it["item_id"]: it["sample_id"] for it in manifest["items"]}
    shown = SECTION.findall(page.read_text())
    assert shown == [it["item_id"] for it in manifest["items"]]  # the manifest lists the page's order
    return [by_item[i] for i in shown]


@pytest.mark.parametrize("how", ["all", "sample", "unit", "subset"])
def test_exported_pages_keep_claims_and_controls_apart(sycophancy_run: Path, tmp_path: Path, how: str) -> None:
    data = Path(json.loads((sycophancy_run / "run.json").read_text())["data_dir"])
    pair_of = {s.sample_id: s.params["pair_id"] for s in load_samples(data)}
    n_pairs = len(set(pair_of.values()))
    draws = {
        "all": Draw(),
        "sample": Draw(sample=n_pairs),
        "unit": Draw(stratify=("category",), per_stratum=2, unit="pair_id"),
        "subset": Draw(subset="reveal-paper", allow_shortfall=True),
    }
    together = 0
    for seed in range(12):
        page = tmp_path / f"{how}-{seed}.html"
        res = export_study(sycophancy_run, page, seed=seed, media="folder", draw=draws[how])
        order = page_samples(page)
        pairs = [pair_of[s] for s in order]
        assert not [a for a, b in zip(pairs, pairs[1:]) if a == b], (how, seed, pairs)
        together += sum(n == 2 for n in Counter(pairs).values())
        assert not any("page order" in n for n in res.notes)
        again = tmp_path / f"{how}-{seed}-again.html"
        export_study(sycophancy_run, again, seed=seed, media="folder", draw=draws[how])
        assert page_samples(again) == order  # seeded: the same page again
    assert together > 12  # pages that hold both items of pairs (the case being tested)


# --------------------------------------------------------------------------- the arrangement, property-tested


def _item(name: str, pair: str | None = None, phase: int | None = None) -> StudyItem:
    return StudyItem(
        item_id=name,
        sample_id=name,
        kind="choice",
        probe="p",
        condition="video",
        question="q",
        options=[("A", "a"), ("B", "b")],
        video_path=f"{name}.mp4",
        pair=pair,
        phase=phase,
    )


units_strategy = st.lists(st.sampled_from(["single", "keyed", "unit2", "unit3", "study_pair"]), min_size=1, max_size=14)


@settings(max_examples=150, deadline=None)
@given(units_strategy, st.integers(0, 50), st.integers(1, 4))
def test_page_order_is_seeded_whole_and_apart_when_possible(kinds: list[str], seed: int, n_keys: int) -> None:
    units, apart, group = [], {}, {}
    for n, kind in enumerate(kinds):
        if kind == "study_pair":
            units.append([_item(f"m{n}", f"sp{n}", 1), _item(f"r{n}", f"sp{n}", 2)])
        elif kind.startswith("unit"):
            units.append([_item(f"u{n}-{j}") for j in range(int(kind[-1]))])
            group.update({f"u{n}-{j}": f"unit{n}" for j in range(int(kind[-1]))})
        else:
            units.append([_item(f"s{n}")])
            if kind == "keyed":
                apart[f"s{n}"] = group[f"s{n}"] = f"key{n % n_keys}"
    order = page_order(units, seed, apart)
    assert order == page_order(units, seed, apart)
    assert sorted(i.item_id for i in order) == sorted(i.item_id for u in units for i in u)
    ids = [i.item_id for i in order]
    for n, kind in enumerate(kinds):  # a masked/raw pair stays together, masked first
        if kind == "study_pair":
            assert ids[ids.index(f"m{n}") + 1] == f"r{n}"
    # blocks: a study pair is one; apart if no group holds more than half of them (rounded up)
    blocks = [i for i in ids if not i.startswith("r")]
    sizes = Counter(group[i] for i in blocks if i in group)
    clashes = sum(group.get(a) is not None and group.get(a) == group.get(b) for a, b in zip(blocks, blocks[1:]))
    if not sizes or max(sizes.values()) <= (len(blocks) + 1) // 2:
        assert clashes == 0, (kinds, ids)
    else:  # the fewest any order allows: the surplus of the largest group
        assert clashes == max(sizes.values()) - 1 - (len(blocks) - max(sizes.values()))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=7), st.integers(0, 1000))
def test_arrange_apart_finds_an_order_whenever_one_exists(groups: list[str | None], seed: int) -> None:
    """Against every permutation of up to 7 blocks: no clash exactly when some order has none."""
    blocks = [(g, [_item(f"x{i}")]) for i, g in enumerate(groups)]
    _, clashes = arrange_apart(blocks, np.random.default_rng(seed))
    best = min(sum(a is not None and a == b for a, b in zip(p, p[1:])) for p in itertools.permutations(groups))
    assert clashes == best
