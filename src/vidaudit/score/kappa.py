"""Chance-corrected agreement between annotators: Cohen's kappa (two), Fleiss' kappa (any number), unanimity.

Labels are nominal (an option letter, yes/no). Every function takes one row per item: the labels its
annotators gave. A kappa is undefined when chance agreement is 1 (every annotator used one and the same
label throughout): those functions return None rather than pretend to 0 or 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two annotators who labelled the same items (``a[i]`` and ``b[i]`` for item i)."""
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa needs two label lists of one length, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def fleiss_kappa(rows: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa: ``rows[i]`` holds the labels of item i, the same number (at least two) per item."""
    if not rows:
        return None
    m = len(rows[0])
    if m < 2 or any(len(r) != m for r in rows):
        raise ValueError("fleiss_kappa needs the same number (at least two) of labels for every item")
    n = len(rows)
    totals: Counter[Hashable] = Counter()
    p_items = 0.0
    for r in rows:
        c = Counter(r)
        totals.update(c)
        p_items += (sum(v * v for v in c.values()) - m) / (m * (m - 1))
    p_bar = p_items / n
    p_e = sum((v / (n * m)) ** 2 for v in totals.values())
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def fleiss_from_counts(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa from the textbook layout: ``table[i][j]`` = how many annotators put item i in category j."""
    return fleiss_kappa([[j for j, k in enumerate(row) for _ in range(k)] for row in table])


def unanimity(rows: Sequence[Sequence[Hashable]]) -> float | None:
    """The share of items on which every annotator gave the same label (None for no items)."""
    if not rows:
        return None
    return sum(len(set(r)) == 1 for r in rows) / len(rows)


def agreement(rows: Sequence[Sequence[Hashable]]) -> dict[str, object]:
    """The agreement summary of a study: Cohen's kappa for two annotators, Fleiss' for more, and unanimity."""
    m = len(rows[0]) if rows else 0
    if m < 2:
        return {"method": None, "kappa": None, "n_items": len(rows), "n_annotators": m, "unanimity": None}
    kappa = cohen_kappa([r[0] for r in rows], [r[1] for r in rows]) if m == 2 else fleiss_kappa(rows)
    return {
        "method": "cohen" if m == 2 else "fleiss",
        "kappa": kappa,
        "n_items": len(rows),
        "n_annotators": m,
        "unanimity": unanimity(rows),
    }
