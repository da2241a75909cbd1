"""Cohen's and Fleiss' kappa: textbook values, and properties that hold for any labels."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.score.kappa import agreement, cohen_kappa, fleiss_from_counts, fleiss_kappa, unanimity

LABELS = st.sampled_from("ABCD")


def test_cohen_textbook() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> po 0.7, pe 0.5, kappa 0.4 (Wikipedia's example)
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_fleiss_textbook() -> None:
    # Fleiss (1971) as tabulated on Wikipedia: 10 items, 14 raters, 5 categories; P=0.378, Pe=0.213, kappa=0.210
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_from_counts(table) == pytest.approx(0.20993, abs=5e-5)


def test_undefined_and_errors() -> None:
    assert cohen_kappa(["A", "A"], ["A", "A"]) is None  # one label throughout: chance agreement is 1
    assert fleiss_kappa([["A", "A", "A"]]) is None
    assert cohen_kappa([], []) is None and unanimity([]) is None
    with pytest.raises(ValueError):
        cohen_kappa(["A"], ["A", "B"])
    with pytest.raises(ValueError):
        fleiss_kappa([["A", "B"], ["A"]])
    assert agreement([["A"], ["B"]])["kappa"] is None  # one annotator: no agreement to measure


@given(st.lists(LABELS, min_size=2, max_size=40))
def test_perfect_agreement_is_one(labels: list[str]) -> None:
    if len(set(labels)) < 2:
        labels = [*labels, "Z" if labels[0] != "Z" else "Y"]
    assert cohen_kappa(labels, labels) == pytest.approx(1.0)
    assert fleiss_kappa([[x, x, x] for x in labels]) == pytest.approx(1.0)
    assert unanimity([[x, x] for x in labels]) == 1.0


@settings(max_examples=60)
@given(st.lists(st.tuples(LABELS, LABELS), min_size=1, max_size=40))
def test_cohen_symmetric_and_bounded(pairs: list[tuple[str, str]]) -> None:
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    k = cohen_kappa(a, b)
    assert k == cohen_kappa(b, a) or (k is not None and k == pytest.approx(cohen_kappa(b, a)))
    if k is not None:
        assert -1.0 - 1e-9 <= k <= 1.0 + 1e-9


@settings(max_examples=60)
@given(st.integers(2, 5).flatmap(lambda m: st.lists(st.lists(LABELS, min_size=m, max_size=m), min_size=1, max_size=30)))
def test_fleiss_bounded_and_order_free(rows: list[list[str]]) -> None:
    k = fleiss_kappa(rows)
    if k is None:
        return
    m = len(rows[0])
    assert -1.0 / (m - 1) - 1e-9 <= k <= 1.0 + 1e-9  # Fleiss' lower bound is -1/(m-1)
    assert fleiss_kappa([list(reversed(r)) for r in reversed(rows)]) == pytest.approx(k)
    u = unanimity(rows)
    assert u is not None and 0.0 <= u <= 1.0
