"""Optimal one-to-one matching of reported to true event times within a tolerance window.

A pair (i, j) is allowed when ``|true[i] - reported[j]| <= delta``. Among all one-to-one
matchings of allowed pairs we take one that maximises the number of pairs K and, among those,
minimises the total absolute deviation (the rule of appendix C.15). This is an assignment
problem solved exactly with ``scipy.optimize.linear_sum_assignment``: an allowed pair costs
``deviation - B`` and a forbidden one 0, with ``B > (min(N, M) + 1) * delta`` so that one more
pair always outweighs any saving in deviation (small blocks use an equivalent exact DP, see
``_solve_block_dp``). Greedy first-fit (the papers' released code) is
not optimal: it can pair an early report with the wrong true event and lose a later pair.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from itertools import compress, count, repeat
from operator import add, and_, ge, le, sub

import numpy as np

from vidaudit.sdk import ConfigError

#: Absolute slack on the window: a report exactly on the window edge must not be lost to float rounding.
WINDOW_EPS = 1e-9


@dataclass(frozen=True)
class Matching:
    """Pairs as (true_index, reported_index), sorted by true index; ``total_deviation`` in seconds."""

    pairs: tuple[tuple[int, int], ...]
    total_deviation: float
    n_true: int
    n_reported: int

    @property
    def k(self) -> int:
        return len(self.pairs)

    @property
    def unmatched_true(self) -> list[int]:
        used = {i for i, _ in self.pairs}
        return [i for i in range(self.n_true) if i not in used]

    @property
    def unmatched_reported(self) -> list[int]:
        used = {j for _, j in self.pairs}
        return [j for j in range(self.n_reported) if j not in used]


#: Blocks with at most this many candidate cells are solved by the exact order-preserving DP in pure
#: Python (faster than building arrays); larger ones by assignment.
DP_MAX_CELLS = 64


def _solve_block_lsa(t: Sequence[float], r: Sequence[float], delta: float) -> list[tuple[int, int]]:
    """Optimal pairs (local indices) of one block, by assignment with a count-dominated cost.

    scipy.optimize is imported here, on the first block too large for the DP: it costs ~0.3 s of CPU to import,
    and most runs (every report of short traces, the demo's) never need it (issue 34's start-up rule)."""
    from scipy.optimize import linear_sum_assignment

    tt = np.asarray(t, dtype=float)
    rr = np.asarray(r, dtype=float)
    dev = np.abs(tt[:, None] - rr[None, :])
    allowed = dev <= delta + WINDOW_EPS
    big = (min(len(t), len(r)) + 1) * (delta + WINDOW_EPS) + 1.0
    rows, cols = linear_sum_assignment(np.where(allowed, dev - big, 0.0))
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=True) if allowed[i, j]]


def _solve_block_dp(t: Sequence[float], r: Sequence[float], delta: float) -> list[tuple[int, int]]:
    """Optimal pairs (local indices) of one block with both sides sorted by time.

    On a line an optimal matching never needs crossing pairs: if a1 < a2 are paired with
    b1 > b2, swapping gives two pairs that are still within delta and whose total deviation is
    no larger (|x - y| is a Monge cost). So an LCS-style DP over the two sorted sequences that
    maximises (K, -deviation) is exact.
    """
    n, m = len(t), len(r)
    w = delta + WINDOW_EPS
    # best[i][j] = (K, -deviation) using t[:i] and r[:j]; move[i][j] records the choice
    best = [[(0, 0.0)] * (m + 1) for _ in range(n + 1)]
    move = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        ti = t[i - 1]
        row, prev = best[i], best[i - 1]
        mv = move[i]
        for j in range(1, m + 1):
            cand, how = prev[j], 1
            if row[j - 1] > cand:
                cand, how = row[j - 1], 2
            d = abs(ti - r[j - 1])
            if d <= w:
                k, neg = prev[j - 1]
                pair = (k + 1, neg - d)
                if pair > cand:
                    cand, how = pair, 3
            row[j], mv[j] = cand, how
    pairs = []
    i, j = n, m
    while i > 0 and j > 0:
        how = move[i][j]
        if how == 3:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif how == 2:
            j -= 1
        else:
            i -= 1
    return pairs[::-1]


def match_times(true_times: Sequence[float], reported_times: Sequence[float], delta: float) -> Matching:
    """The optimal matching described in the module docstring.

    The allowed-pair graph splits, along the time axis, into independent blocks (runs of true
    events whose candidate windows share a report); 1 x 1 blocks are paired directly and larger
    ones solved by assignment, which keeps a 38,000-trial scoring run to seconds.
    """
    if not (isinstance(delta, (int, float)) and math.isfinite(delta) and delta >= 0):
        raise ConfigError(f"matching window delta must be a finite non-negative number of seconds, got {delta!r}")
    n, m = len(true_times), len(reported_times)
    if n == 0 or m == 0:
        return Matching((), 0.0, n, m)
    t_order = sorted(range(n), key=true_times.__getitem__)
    return match_presorted(t_order, [float(true_times[i]) for i in t_order], reported_times, delta)[0]


def match_presorted(
    t_order: Sequence[int],
    ts: Sequence[float],
    reported_times: Sequence[float],
    delta: float,
    edges: Edges | None = None,
) -> tuple[Matching, list[float]]:
    """:func:`match_times` given the true side already sorted (``t_order``: the true indices in time order, as
    ``sorted(range(N), key=true_times.__getitem__)`` gives them, or ``range(N)`` when the true times are in order;
    ``ts``: their times as floats), for a caller that matches many reports against one trace; also returns the
    reported times sorted, as floats. ``edges``: :func:`window_edges` of ``ts`` at ``delta + WINDOW_EPS``, when
    the caller keeps them.

    ``delta`` is not checked here, and both sides must be non-empty.
    """
    n, m = len(ts), len(reported_times)
    rs = sorted(map(float, reported_times))
    r_order: Sequence[int]
    if rs == reported_times:  # written in time order (the usual ledger): the order is the identity (ties kept)
        r_order = range(m)
    else:
        r_order = sorted(range(m), key=reported_times.__getitem__)
        rs = [float(reported_times[j]) for j in r_order]
    lo, hi = _bounds(ts, rs, delta + WINDOW_EPS, edges)
    single = _singles(lo, hi)
    pairs: list[tuple[int, int]]
    if single is not None:  # every block is one true time with one report: the pairs the loop below would make
        in_order = type(t_order) is range and type(r_order) is range  # both sides in order: so are the pairs
        if single is lo:  # the i-th true time with the i-th report, each: a faithful ledger
            total = reduce(add, map(abs, map(sub, ts, rs)), 0.0)  # the same sum, in the same order (zip stops at N)
            if in_order:
                return _matching_of(_diagonal(n)[1], total, n, m), rs
            firsts = lo
        else:
            firsts = list(map(lo.__getitem__, single))
            total = reduce(add, map(abs, map(sub, map(ts.__getitem__, single), map(rs.__getitem__, firsts))), 0.0)
        if in_order:
            return _matching_of(tuple(zip(single, firsts, strict=True)), total, n, m), rs
        pairs = list(zip(map(t_order.__getitem__, single), map(r_order.__getitem__, firsts), strict=True))
        return _matching(pairs, total, n, m), rs
    pairs = []
    total = 0.0
    for a, b in _block_runs(lo, hi):
        r0, r1 = lo[a], hi[b]  # lo and hi never decrease along sorted true times
        if b == a and r1 - r0 == 1:
            pairs.append((t_order[a], r_order[r0]))
            total += abs(ts[a] - rs[r0])
            continue
        if (b + 1 - a) * (r1 - r0) <= DP_MAX_CELLS:
            local = _solve_block_dp(ts[a : b + 1], rs[r0:r1], delta)
        else:
            local = _solve_block_lsa(ts[a : b + 1], rs[r0:r1], delta)
        for i, j in local:
            ti, rj = a + i, r0 + j
            pairs.append((t_order[ti], r_order[rj]))
            total += abs(ts[ti] - rs[rj])
    return _matching(pairs, total, n, m), rs


def _matching(pairs: list[tuple[int, int]], total: float, n: int, m: int) -> Matching:
    """``Matching(tuple(sorted(pairs)), total, n, m)`` without the frozen ``__init__``'s four setattrs."""
    return _matching_of(tuple(sorted(pairs)), total, n, m)


def _matching_of(pairs: tuple[tuple[int, int], ...], total: float, n: int, m: int) -> Matching:
    """``Matching(pairs, total, n, m)`` (``pairs`` already sorted) without the frozen ``__init__``'s setattrs."""
    matching = _new_object(Matching)
    _set_attr(matching, "__dict__", {"pairs": pairs, "total_deviation": total, "n_true": n, "n_reported": m})
    return matching


def _singles(lo: list[int], hi: list[int]) -> list[int] | None:
    """When every true time has at most one candidate report and no two share one (so every block of
    :func:`_block_runs` is one time and one report), the sorted true indices that have one; else None.
    When the i-th true time's one candidate is the i-th report, for every i, that list is ``lo`` itself."""
    starts, ends = _diagonal(len(lo))[0]
    if lo == starts and hi == ends:  # lo[i] = i, hi[i] = i + 1
        return lo
    widths = list(map(sub, hi, lo))
    if max(widths) > 1:
        return None
    single = list(compress(count(), widths))
    if len(set(map(lo.__getitem__, single))) != len(single):  # a report shared by two (consecutive) times
        return None
    return single


def is_diagonal(matching: Matching) -> bool:
    """Whether :func:`match_presorted` found, in its shortcut, that the i-th sorted true time's one candidate is the
    i-th sorted report, for every i (both sides in order): then :func:`diagonal_count` counts K at any narrower
    window. (False says nothing: the general path may have found the same pairs.)"""
    hit = _DIAGONALS.get(matching.n_true) if matching.n_true else None
    return hit is not None and matching.pairs is hit[1]


def diagonal_count(edges: Edges, rs: Sequence[float]) -> int:
    """K at a window whose :func:`window_edges` are ``edges``, narrower than one where the matching was the
    diagonal (:func:`is_diagonal`; ``rs`` the sorted reports): each true time's one possible candidate is then its
    own report, so K is the number of reports inside their own time's window (``lo[i] <= i < hi[i]`` of
    :func:`_bounds`, the same comparisons), what :func:`max_match_count_sorted` counts."""
    lows, highs = edges
    return sum(map(and_, map(le, lows, rs), map(ge, highs, rs)))


#: N -> ((lo, hi) when the i-th true time's one candidate is the i-th report, the pairs (i, i)); read only
_DIAGONALS: dict[int, tuple[tuple[list[int], list[int]], tuple[tuple[int, int], ...]]] = {}


def _diagonal(n: int) -> tuple[tuple[list[int], list[int]], tuple[tuple[int, int], ...]]:
    """The candidate bounds of N true times each with its own report, in order, and their pairs (kept per N)."""
    hit = _DIAGONALS.get(n)
    if hit is None:
        if len(_DIAGONALS) >= 1024:
            _DIAGONALS.clear()
        hit = _DIAGONALS[n] = ((list(range(n)), list(range(1, n + 1))), tuple(zip(range(n), range(n), strict=True)))
    return hit


_new_object = object.__new__
_set_attr = object.__setattr__


#: the window ends of each sorted true time, ``x - w`` and ``x + w`` for x in ts
Edges = tuple[tuple[float, ...], tuple[float, ...]]


def window_edges(ts: Sequence[float], w: float) -> Edges:
    """Where each sorted true time's window ``w`` starts and ends: the bisection keys of :func:`_bounds`, for a
    caller that matches many reports against one trace (the same floats as computing them per call)."""
    n = len(ts)
    return tuple(map(sub, ts, repeat(w, n))), tuple(map(add, ts, repeat(w, n)))  # tuples: a kept one is not tracked


def _bounds(
    ts: Sequence[float], rs: Sequence[float], w: float, edges: Edges | None = None
) -> tuple[list[int], list[int]]:
    """Each sorted true time's candidate reports ``rs[lo[i]:hi[i]]`` (within ``w``; both sequences sorted);
    ``edges``: :func:`window_edges` of ``ts`` at ``w``, when the caller keeps them."""
    lows, highs = edges if edges is not None else window_edges(ts, w)
    n = len(lows)
    lo = list(map(bisect_left, repeat(rs, n), lows))  # [bisect_left(rs, x - w) for x in ts]
    hi = list(map(bisect_right, repeat(rs, n), highs))
    return lo, hi


def _block_runs(lo: list[int], hi: list[int]) -> list[tuple[int, int]]:
    """The independent blocks ``(a, b)`` of the allowed-pair graph from the candidate bounds (:func:`_bounds`):
    maximal runs of true times ``ts[a..b]`` with candidates, each one's window sharing a report with the one
    before."""
    n = len(lo)
    blocks: list[tuple[int, int]] = []
    a = 0
    while a < n:
        if lo[a] >= hi[a]:
            a += 1
            continue
        b = a
        while b + 1 < n and lo[b + 1] < hi[b + 1] and lo[b + 1] < hi[b]:
            b += 1
        blocks.append((a, b))
        a = b + 1
    return blocks


def max_match_count(true_times: Sequence[float], reported_times: Sequence[float], delta: float) -> int:
    """K of :func:`match_times` (the most pairs within ``delta``) without finding the pairs.

    The fixed-window sensitivity metrics need only K. Within each block of ``match_times`` a true
    event may take the reports of a contiguous run of the sorted reports (the same test: within
    its bisected range and ``|t - r| <= delta + WINDOW_EPS``), and both ends of the runs never
    decrease along the sorted true events; for such intervals, giving each true event in turn the
    earliest report still free in its run is a maximum matching. A 1 x 1 block is one pair, as
    there. Linear after sorting, where the optimal (K, deviation) matching is not.
    """
    if not (isinstance(delta, (int, float)) and math.isfinite(delta) and delta >= 0):
        raise ConfigError(f"matching window delta must be a finite non-negative number of seconds, got {delta!r}")
    if not true_times or not reported_times:
        return 0
    return max_match_count_sorted(sorted(float(x) for x in true_times), sorted(float(x) for x in reported_times), delta)


def max_match_count_sorted(ts: Sequence[float], rs: Sequence[float], delta: float, edges: Edges | None = None) -> int:
    """:func:`max_match_count` of floats already sorted ascending, for a caller that counts at several windows
    (``edges``: :func:`window_edges` of ``ts`` at ``delta + WINDOW_EPS``, when the caller keeps them).

    ``delta`` is not checked here (the caller's windows are constants).
    """
    n, m = len(ts), len(rs)
    if n == 0 or m == 0:
        return 0
    w = delta + WINDOW_EPS
    lo, hi = _bounds(ts, rs, w, edges)
    single = _singles(lo, hi)
    if single is not None:
        return len(single)
    k = 0
    for a, b in _block_runs(lo, hi):
        if b == a and hi[a] - lo[a] == 1:
            k += 1
        else:
            free = lo[a]
            for i in range(a, b + 1):
                x, j, end = ts[i], max(free, lo[i]), hi[i]
                while j < end and abs(x - rs[j]) > w:
                    j += 1
                if j < end:
                    k += 1
                    free = j + 1
                else:
                    free = max(free, lo[i])
    return k
