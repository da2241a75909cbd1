"""Aggregate counting-suite trial records into the numbers of report.json.

A record is a flat dict: :func:`~vidaudit.suites.counting.scoring.score_trial` output plus
``model``, ``condition``, ``domain``, ``n_events``, ``frequency_hz``, ``status``, ``usage`` and
``cost_usd`` (other keys, e.g. ``trial_id``, ``suite``, ``model_role``, ``predicted``, are ignored).
One record is one planned trial.

Denominators, stated once:

- EM (exact match) is over every planned trial: a trial whose status is not ``ok`` (``api_error``,
  ``refused``, ``timeout``, ``pending``) is a wrong answer, and so is an unparseable one. Beside
  every EM stand ``n`` (planned trials), ``n_ok`` and ``completion`` = n_ok / n, and its Wilson 95%
  interval is over the planned trials. This holds everywhere EM appears: ``cells``, the
  ``trace_metrics`` blocks, ``regions``, ``per_n``, ``tolerance``, ``count_bins`` and
  ``paired_difference``; boundaries are computed from the cells, so errors count as wrong there
  too. ``em_ok`` (blocks only) is EM over completed trials, the paper's "non-errored records"
  (Table 6), for diagnosis; it is never the headline figure.
- ``em`` includes the N = 0 no-event controls (Table 1: "Final EM includes no-event controls");
  ``em_positive`` is the same over N >= 1 only.
- Trace metrics (VOR, P, R, F1, ACR, RFR) are means over ok positive-event trials with a trace
  (``n_positive``; N = 0 has no ratios, a failed call has no trace); ``macro`` is the unweighted
  mean over domains.
- Boundaries use positive counts only; N = 0 controls appear in ``cells`` and EM.

All JSON keys are strings: frequencies as "0.5", "1.0", counts as "1", "2".
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from itertools import chain, compress, repeat
from operator import and_, itemgetter, ne, not_, truth
from typing import Any

from vidaudit.sdk import DataError, paired_bootstrap
from vidaudit.sdk import wilson_interval as _wilson_interval
from vidaudit.suites.counting.aggregate_scan import TRACE_KEYS, Scan, require, scan, split
from vidaudit.suites.counting.boundaries import TAU, count_boundary, format_value, frequency_boundary
from vidaudit.suites.counting.taxonomy import TAXONOMY_KEYS

#: the same (k, n) recurs over thousands of cells and blocks; the interval is a pure function of them
wilson_interval = lru_cache(maxsize=65536)(_wilson_interval)

LOW_COUNT_MAX, HIGH_COUNT_MIN = 3, 5
LOW_FREQ_MAX, HIGH_FREQ_MIN = 2.0, 2.5
COUNT_BINS: tuple[tuple[str, int, float], ...] = (
    ("1-2", 1, 2), ("3-4", 3, 4), ("5-6", 5, 6), ("7-8", 7, 8), ("9-10", 9, 10), ("11-15", 11, 15),
    ("16-20", 16, 20), ("21-30", 21, 30), (">30", 31, float("inf")),
)
#: Table 1 Part B's four regions ("Part B uses N <= 3, N >= 5, F <= 2.0, and F >= 2.5 Hz"), in the
#: paper's row order, then the marginal regions. A predicate takes (N, F); the N = 0 controls
#: (rendered at nominal F = 1.0 Hz) satisfy N <= 3 and F <= 2.0, so they enter ``em`` of LCLF,
#: low_count and low_frequency (``em_positive`` leaves them out).
REGIONS: dict[str, Callable[[int, float], bool]] = {
    "low_count_low_frequency": lambda n, f: n <= LOW_COUNT_MAX and f <= LOW_FREQ_MAX,
    "high_count_low_frequency": lambda n, f: n >= HIGH_COUNT_MIN and f <= LOW_FREQ_MAX,
    "low_count_high_frequency": lambda n, f: n <= LOW_COUNT_MAX and f >= HIGH_FREQ_MIN,
    "high_count_high_frequency": lambda n, f: n >= HIGH_COUNT_MIN and f >= HIGH_FREQ_MIN,
    "low_count": lambda n, f: n <= LOW_COUNT_MAX,
    "high_count": lambda n, f: n >= HIGH_COUNT_MIN,
    "low_frequency": lambda n, f: f <= LOW_FREQ_MAX,
    "high_frequency": lambda n, f: f >= HIGH_FREQ_MIN,
}
PAPER_REGIONS: dict[str, str] = {
    "low_count_low_frequency": "LCLF", "high_count_low_frequency": "HCLF",
    "low_count_high_frequency": "LCHF", "high_count_high_frequency": "HCHF",
}


# --------------------------------------------------------------------------- helpers


def _key(r: dict[str, Any], name: str) -> Any:
    return require(r, name)


def _ok(r: dict[str, Any]) -> bool:
    return r.get("status", "ok") == "ok"


def _right(r: dict[str, Any]) -> bool:
    """Correct and completed: a failed trial is a wrong answer whatever its ``correct`` says."""
    return _ok(r) and r.get("correct") is True


def _mean(values: Iterable[Any]) -> float | None:
    """The mean of the values that are not None, each float()-ed, summed in order.

    A list's plain ``sum`` is that sum when its total is a float or an int: float() of a float is itself;
    sum() adds a bool or an int to a float total as float() of it, and adds the bools and ints before the
    first float exactly, as the float sum of those (integers far below 2**53) is; an int total k over n is
    float(k) / n, both correctly rounded. A total of another type (Decimal, Fraction, numpy) or a TypeError
    (None, str) takes the float() path."""
    if isinstance(values, (list, tuple)):  # a column with no gap: summed in C, same order
        if not values:
            return None
        try:
            total = sum(values)
        except TypeError:  # a None among them (or a str): float() each, below
            total = None
        if type(total) is float or type(total) is int:  # floats, bools and ints only
            return total / len(values)
        try:
            return sum(map(float, values)) / len(values)
        except TypeError:  # a None among them (or a value float() refuses: it refuses it again below)
            pass
    xs = [float(v) for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def _nested() -> defaultdict:
    return defaultdict(_nested)


def _plain(d: Any) -> Any:
    """Nested :func:`_nested` dicts as plain dicts (their leaves, blocks made here, kept as they are)."""
    if type(d) is defaultdict:
        return {k: _plain(v) for k, v in d.items()}
    return d


def _by(records: Iterable[dict[str, Any]], *names: str) -> dict[tuple, list[dict[str, Any]]]:
    out: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    get = itemgetter(*names)
    one = len(names) == 1
    for r in records:
        try:
            key = (get(r),) if one else get(r)
        except KeyError:
            for n in names:
                _key(r, n)  # raises the explanatory DataError
            raise
        out[key].append(r)
    return out


def _fkey(f: Any) -> str:
    return format_value(float(f)) if f is not None else "none"


def _ints(values: Sequence[Any]) -> int:
    """``sum(map(int, values))``: the plain sum when every value is an int already (int() of an int is itself; a
    total that is not an int had another type among them; int() is most of the cost)."""
    try:
        total = sum(values)
    except TypeError:
        total = None
    return total if type(total) is int else sum(map(int, values))


def _int_sum(values: Sequence[Any]) -> int:
    """``sum(int(v or 0) for v in values)``, in C while no value is None (or another int() refuses)."""
    try:
        return _ints(values)
    except (TypeError, ValueError):
        return sum(int(v or 0) for v in values)


def _truths(values: Sequence[Any]) -> int:
    """``sum(map(bool, values))``, counted in C."""
    return len(list(filter(None, values)))


def _em_block(s: Scan, cells: Iterable[int], columns: Sequence[list[Any]]) -> dict[str, Any]:
    """EM over planned trials (and over N >= 1), completion, parse failures: sums of the ``cells``' counts;
    the trace-metric means of ``columns`` (the cells' traced trials' TRACE_KEYS values, in record order)."""
    n = n_ok = right = n_positive = right_positive = unparseable = 0
    for c in cells:
        k = s.cell_right[c]
        n += s.cell_n[c]
        n_ok += s.cell_ok[c]
        right += k
        unparseable += s.cell_unparseable[c]
        if s.cell_positive[c]:
            n_positive += s.cell_n[c]
            right_positive += k
    block: dict[str, Any] = {"n": n, "n_ok": n_ok, "completion": n_ok / n if n else None, "correct": right,
                             **_em_counts(right, n), "n_em_positive": n_positive, "n_controls": n - n_positive,
                             **_em_counts(right_positive, n_positive, "em_positive"),
                             "em_ok": (right / n_ok) if n_ok else None, "n_positive": len(columns[0])}
    for name, values in zip(TRACE_KEYS, columns, strict=True):
        block[name] = _mean(values)
    block["parse_failure_rate"] = (unparseable / n_ok) if n_ok else None
    return block


def _em_counts(k: int, n: int, prefix: str = "em") -> dict[str, Any]:
    """EM of ``k`` right of ``n`` planned trials with its Wilson interval (``prefix`` names the keys)."""
    lo, hi = wilson_interval(k, n) if n else (None, None)
    return {prefix: k / n if n else None, f"{prefix}_ci_low": lo, f"{prefix}_ci_high": hi}


MACRO_KEYS = ("em", "em_positive", "completion", *TRACE_KEYS, "parse_failure_rate")


def _macro(blocks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: _mean(b.get(k) for b in blocks.values()) for k in MACRO_KEYS}
    for k in ("n", "n_ok", "n_em_positive", "n_controls", "n_positive"):
        out[k] = sum(b[k] for b in blocks.values())
    out["domains"] = sorted(blocks)
    return out


# --------------------------------------------------------------------------- sections


def _cells(s: Scan) -> list[dict[str, Any]]:
    """Accuracy per model x condition x domain x (N, F): correct over planned trials."""
    cells = []
    keys = s.cell_keys
    order = sorted(range(len(keys)), key=lambda c: (str(keys[c][0]), str(keys[c][1]), str(keys[c][2]),
                                                    int(keys[c][3]),
                                                    -1.0 if keys[c][4] is None else float(keys[c][4])))
    for c in order:
        model, cond, dom, n, f = keys[c]
        planned, n_ok, k = s.cell_n[c], s.cell_ok[c], s.cell_right[c]
        lo, hi = wilson_interval(k, planned)
        cells.append({"model": model, "condition": cond, "domain": dom, "n_events": int(n),
                      "frequency_hz": float(f) if f is not None else None, "n": planned, "n_ok": n_ok,
                      "n_errored": planned - n_ok, "completion": n_ok / planned, "correct": k,
                      "accuracy": k / planned, "ci_low": lo, "ci_high": hi})
    return cells


def _boundaries(cells: Sequence[dict[str, Any]], rule: str) -> tuple[dict, dict]:
    by_f: dict[tuple, dict[float, dict[int, tuple[int, int]]]] = defaultdict(lambda: defaultdict(dict))
    by_n: dict[tuple, dict[int, dict[float, tuple[int, int]]]] = defaultdict(lambda: defaultdict(dict))
    for c in cells:
        if c["n_events"] <= 0 or c["frequency_hz"] is None:
            continue
        g = (c["model"], c["condition"], c["domain"])
        by_f[g][c["frequency_hz"]][c["n_events"]] = (c["correct"], c["n"])
        by_n[g][c["n_events"]][c["frequency_hz"]] = (c["correct"], c["n"])
    cb, fb = _nested(), _nested()
    for (model, cond, dom), per_f in by_f.items():
        for f in sorted(per_f):
            cb[model][cond][dom][_fkey(f)] = count_boundary(per_f[f], rule=rule).value
    for (model, cond, dom), per_n in by_n.items():
        for n in sorted(per_n):
            fb[model][cond][dom][str(n)] = frequency_boundary(per_n[n], rule=rule).value
    return _plain(cb), _plain(fb)


def _larger(a: Any, b: Any) -> bool:
    """Whether boundary ``a`` beats ``b``: a tested count beats a below-range marker ("<1"), which beats None."""
    def rank(v: Any) -> tuple[int, float]:
        return ((2, float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool)
                else (1, 0.0) if isinstance(v, str) else (0, 0.0))
    return rank(a) > rank(b)


def max_count_boundary(count_boundaries: dict) -> dict:
    """Table 2's "maximum count boundary": the largest N*(F) "observed at any tested frequency and domain".

    Per model x condition: each domain's largest N*(F) over F with the frequencies that reach it,
    and ``all``, the largest over every domain and frequency with the domains that reach it. A
    domain where no frequency is reliable even at N = 1 has ``"<1"``.
    """
    out = _nested()
    for model, by_cond in count_boundaries.items():
        for cond, by_dom in by_cond.items():
            best_all: Any = None
            doms: list[str] = []
            for dom, by_f in sorted(by_dom.items()):
                best: Any = None
                at: list[float] = []
                for fk, v in by_f.items():
                    if _larger(v, best):
                        best, at = v, [float(fk)]
                    elif v == best and v is not None:
                        at.append(float(fk))
                out[model][cond][dom] = {"value": best, "frequencies_hz": sorted(at)}
                if _larger(best, best_all):
                    best_all, doms = best, [dom]
                elif best == best_all and best is not None:
                    doms.append(dom)
            out[model][cond]["all"] = {"value": best_all, "domains": doms}
    return _plain(out)


def per_n(cells: Sequence[dict[str, Any]]) -> dict:
    """Accuracy per N averaged over F (Figures 4, 6-8: "Final-answer exact match averaged over frequencies").

    ``accuracy`` is the mean over the tested frequencies of the cell accuracies (eq. 1, each over
    its planned trials); ``pooled_accuracy`` = correct / planned over the same cells, equal to it
    when every cell has as many trials; the Wilson interval is over the pooled trials. Only grid
    samples (with a frequency) enter: real videos have ``count_bins``. N = 0 has its one nominal F.
    """
    grouped: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for c in cells:
        if c["frequency_hz"] is not None:
            grouped[(c["model"], c["condition"], c["domain"], c["n_events"])].append(c)
    out = _nested()
    for (model, cond, dom, n), cs in sorted(grouped.items(), key=lambda kv: (str(kv[0][:3]), kv[0][3])):
        planned = sum(c["n"] for c in cs)
        k = sum(c["correct"] for c in cs)
        n_ok = sum(c["n_ok"] for c in cs)
        lo, hi = wilson_interval(k, planned)
        out[model][cond][str(dom)][str(n)] = {
            "accuracy": sum(c["accuracy"] for c in cs) / len(cs), "n_frequencies": len(cs),
            "frequencies_hz": sorted(c["frequency_hz"] for c in cs), "n": planned, "n_ok": n_ok,
            "completion": n_ok / planned, "correct": k, "pooled_accuracy": k / planned, "ci_low": lo, "ci_high": hi}
    return _plain(out)


def _trace_metrics(s: Scan) -> dict:
    out = _nested()
    for group in s.groups:
        model, cond = group.key
        blocks = {dom: _em_block(s, group.domain_cells[j], group.traced_values[j])
                  for dom, j in sorted(group.domains.items(), key=lambda kv: str(kv[0]))}
        for dom, b in blocks.items():
            out[model][cond][str(dom)] = b
        out[model][cond]["macro"] = _macro({str(d): b for d, b in blocks.items()})
    return _plain(out)


def _region_cells(s: Scan) -> list[tuple[int, ...]]:
    """The indices (in REGIONS) of the regions each cell's (N, F) falls in, decided once per (N, F); none for a
    real video (no frequency)."""
    preds = tuple(REGIONS.values())
    of_cell: dict[tuple[int, float], tuple[int, ...]] = {}
    out: list[tuple[int, ...]] = []
    for key in s.cell_keys:
        if key[4] is None:
            out.append(())
            continue
        cell = (int(key[3]), float(key[4]))
        where = of_cell.get(cell)
        if where is None:
            where = of_cell[cell] = tuple(i for i, pred in enumerate(preds) if pred(*cell))
        out.append(where)
    return out


class _Picker:
    """Selects, from columns in record order, the items whose label has a given bit, in that order: by
    copying the runs of equal labels that have it when the runs are long (records come cell by cell),
    else through a mask."""

    def __init__(self, labels: list[int]) -> None:
        n = len(labels)
        starts = [0, *compress(range(1, n), map(ne, labels[1:], labels[:-1]))] if n else []
        self.labels = labels
        self.runs: list[slice] | None = None
        if len(starts) * 4 <= n:
            self.runs = list(map(slice, starts, [*starts[1:], n]))
            self.run_labels = list(map(labels.__getitem__, starts))

    def __call__(self, columns: Sequence[list[Any]], bit: int) -> list[list[Any]]:
        if self.runs is not None:
            runs = list(compress(self.runs, map(and_, self.run_labels, repeat(bit))))
            return [list(chain.from_iterable(map(col.__getitem__, runs))) for col in columns]
        mask = list(map(and_, self.labels, repeat(bit)))
        return [list(compress(col, mask)) for col in columns]


def _regions(s: Scan) -> dict:
    """EM blocks per region and domain, per domain in order of first appearance in the region (its cells are in
    that order), of the records (and traced trials, in record order) of the cells inside the region."""
    out = _nested()
    names = tuple(REGIONS)
    where = _region_cells(s)
    bits = [sum(1 << i for i in w) for w in where]
    for group in s.groups:
        model, cond = group.key
        inside: list[dict[int, tuple[Any, list[int]]]] = [{} for _ in names]  # domain index -> (domain, cells)
        for c in group.cells:
            for i in where[c]:
                by_dom = inside[i]
                j = s.cell_domain[c]
                if j in by_dom:
                    by_dom[j][1].append(c)
                else:
                    by_dom[j] = (s.cell_keys[c][2], [c])
        pick = [_Picker(list(map(bits.__getitem__, cells))) for cells in group.traced_cells]
        for i, (region, by_dom) in enumerate(zip(names, inside, strict=True)):
            blocks: dict[str, dict[str, Any]] = {}
            for j, (dom, cells) in by_dom.items():
                blocks[str(dom)] = _em_block(s, cells, pick[j](group.traced_values[j], 1 << i))
            for dom, b in sorted(blocks.items()):
                out[model][cond][region][dom] = b
            out[model][cond][region]["macro"] = _macro(blocks) if blocks else None
    return _plain(out)


def _taxonomy_totals(taxonomies: list[Any], read: bool, true_events: list[int], reported: list[Any],
                     rfr: list[Any], acr: list[Any], n_not_scored: int) -> dict[str, int]:
    """One domain's Table 8 row from its traced trials' columns (those with a taxonomy); ``read``: the
    taxonomies are their TAXONOMY_KEYS values already (every one had them all)."""
    if read:  # int(v or 0) of each value (every key is there: tax.get(k, 0) is the value)
        tot = {k: _int_sum(col) for k, col in zip(TAXONOMY_KEYS, zip(*taxonomies), strict=True)}
    else:
        try:  # column sums in C; int() of each value as the loop reads it (None, or a missing key: the loop)
            tot = {k: _ints(col) for k, col in zip(TAXONOMY_KEYS, zip(*map(_TAXONOMY_GET, taxonomies)),
                                                   strict=True)}
        except (KeyError, TypeError, ValueError):  # (no record at all: the loop's zeros)
            tot = _taxonomy_sums(taxonomies)
    tot.update(true_events=sum(true_events), reported_events=_int_sum(reported), videos=len(taxonomies),
               videos_not_scored=n_not_scored, rfr_videos=_truths(rfr), acr_videos=_truths(acr))
    return tot


_TAXONOMY_GET = itemgetter(*TAXONOMY_KEYS)


def _taxonomy_sums(taxonomies: list[Any]) -> dict[str, int]:
    """The taxonomy totals read record by record (any record: missing keys and None count 0)."""
    tot = dict.fromkeys(TAXONOMY_KEYS, 0)
    for tax in taxonomies:
        for k in TAXONOMY_KEYS:
            tot[k] += int(tax.get(k, 0) or 0)
    return tot


def _taxonomy(s: Scan) -> dict:
    """Table 8 per model x condition: ``all``, then each domain; ``all`` adds up the domains (integer counts).
    A domain's row is over its traced trials with a taxonomy; ``videos_not_scored`` counts its failed
    positive-event grid trials (its cells' planned minus ok)."""
    out = _nested()
    t = s.traced
    counts = [int(k[3]) for k in s.cell_keys]
    unscored = [n - n_ok if positive and key[4] is not None else 0 for key, n, n_ok, positive in
                zip(s.cell_keys, s.cell_n, s.cell_ok, s.cell_positive, strict=True)]
    for group in s.groups:
        model, cond = group.key
        a, b = group.t_start, group.t_stop
        taxonomies = t["taxonomy"][a:b]
        try:  # every one has every key (then each is a non-empty dict): read in one lookup each
            taxonomies, read = list(map(_TAXONOMY_GET, taxonomies)), True
            cells, pos_domains = s.traced_cell[a:b], t["domain"][a:b]
            columns = [taxonomies, *(t[name][a:b] for name in ("n_reported", "rfr", "acr"))]
        except (KeyError, TypeError):  # only those with a taxonomy count
            has, read = list(map(truth, taxonomies)), False
            cells, pos_domains = list(compress(s.traced_cell[a:b], has)), list(compress(t["domain"][a:b], has))
            columns = [list(compress(col, has)) for col in
                       (taxonomies, *(t[name][a:b] for name in ("n_reported", "rfr", "acr")))]
        dom = list(map(s.cell_domain.__getitem__, cells))
        columns.insert(1, list(map(counts.__getitem__, cells)))
        first = {j: pos_domains[dom.index(j)] for j in dict.fromkeys(dom)}  # each domain as its first record has it
        parts = split(dom, columns, len(group.domains)) if len(first) > 1 else None
        per_domain = []
        for j, d in sorted(first.items(), key=lambda kv: str((kv[1],))):
            tax, true_events, reported, rfr, acr = columns if parts is None else parts[j]
            per_domain.append((str(d), _taxonomy_totals(tax, read, true_events, reported, rfr, acr,
                                                        sum(map(unscored.__getitem__, group.domain_cells[j])))))
        total = dict.fromkeys((*TAXONOMY_KEYS, "true_events", "reported_events", "videos"), 0)
        total.update(videos_not_scored=sum(map(unscored.__getitem__, group.cells)), rfr_videos=0, acr_videos=0)
        for _, tot in per_domain:
            for k in total:
                if k != "videos_not_scored":
                    total[k] += tot[k]
        out[model][cond]["all"] = total
        for label, tot in per_domain:
            out[model][cond][label] = tot
    return _plain(out)


def _tolerance(s: Scan) -> dict:
    """Table 9: EM over the full grid (planned trials); VOR, P, R, F1, ACR, RFR over positive-event trials.

    Each window's rows are read once and split into one column per metric (the same values, in record
    order, as reading each metric of each row: the means are the same floats)."""
    out = _nested()
    tolerances = s.traced["tolerance"]
    for group in s.groups:
        model, cond = group.key
        n = group.stop - group.start
        n_ok = sum(map(s.cell_ok.__getitem__, group.cells))
        em = _em_counts(sum(map(s.cell_right.__getitem__, group.cells)), n)  # over every planned trial
        vor = _mean(s.traced_values[0][group.t_start:group.t_stop])
        tols = tolerances[group.t_start:group.t_stop]
        for k, rows in _windows(tols):
            try:
                metrics: list[Any] = list(zip(*map(_TOLERANCE_GET, rows))) or [()] * len(_TOLERANCE_METRICS)
            except KeyError:  # a row without every metric (not score_trial's): read each with .get
                metrics = [[x.get(m) for x in rows] for m in _TOLERANCE_METRICS]
            out[model][cond][k] = {"em": em["em"], "n": n, "completion": n_ok / n, "vor": vor,
                                   "n_positive": len(rows),
                                   **{m: _mean(col) for m, col in zip(_TOLERANCE_METRICS, metrics, strict=True)}}
    return _plain(out)


def _windows(tols: list[Any]) -> list[tuple[str, list[Any]]]:
    """Each tolerance window (in order of first appearance) with the rows the records have for it, in record
    order (a record's ``tolerance`` None or missing: no rows). Every record with the same windows (score_trial's):
    one lookup a record."""
    first = tols[0] if tols else None
    if type(first) is dict and first:
        keys = list(first)
        try:
            if sum(map(len, tols)) == len(keys) * len(tols):  # then each has them all, and no other
                if len(keys) == 1:
                    return [(keys[0], list(map(itemgetter(keys[0]), tols)))]
                return list(zip(keys, map(list, zip(*map(itemgetter(*keys), tols))), strict=True))
        except (KeyError, TypeError):  # a record without one of them (then another has one more), or None
            pass
    if None in tols or {} in tols:  # (r.get("tolerance") or {}: the same when every record has rows)
        tols = [t or {} for t in tols]
    out = []
    for k in dict.fromkeys(chain.from_iterable(tols)):  # in order of first appearance
        try:
            rows = list(map(itemgetter(k), tols))
        except KeyError:  # a record without this window
            rows = [t[k] for t in tols if k in t]
        out.append((k, rows))
    return out


_TOLERANCE_METRICS = ("precision", "recall", "f1", "acr", "rfr")
_TOLERANCE_GET = itemgetter(*_TOLERANCE_METRICS)
_ERROR_COUNTS = ("n_dropped_timestamps", "n_frame_mentions", "n_frame_out_of_range")


def _errors(s: Scan) -> dict:
    out = _nested()
    for group in s.groups:
        model, cond = group.key
        a, b = group.start, group.stop
        n, ok = b - a, s.ok[a:b]
        n_ok = sum(ok)
        by_status: dict[str, int] = defaultdict(int)
        for status, k in Counter(map(str, compress(s.column["status"][a:b], map(not_, ok)))).items():
            by_status[status] += k
        unparse = sum(s.unparseable[a:b])
        out[model][cond] = {"n_trials": n, "n_ok": n_ok, "n_errored": dict(sorted(by_status.items())),
                            "completion": n_ok / n if n else None, "error_rate": (n - n_ok) / n if n else None,
                            "n_unparseable": unparse, "parse_failure_rate": unparse / n_ok if n_ok else None,
                            **{k: _int_sum(list(compress(s.column[k][a:b], ok))) for k in _ERROR_COUNTS}}
    return _plain(out)


def _token_sums(usages: Sequence[Any]) -> dict[str, int]:
    """Each token count summed over the records (only numbers, not booleans, count), by name."""
    first = usages[0] if usages else None
    if type(first) is dict and first:  # every record with the same names: a column each, summed in C if all ints
        names = list(first)
        try:
            if sum(map(len, usages)) == len(names) * len(usages):  # then each has them all, and no other
                rows = list(map(itemgetter(*names), usages))
                values = list(zip(*rows)) if len(names) > 1 else [rows]
                if all(set(map(type, col)) == {int} for col in values):
                    return dict(sorted(zip(names, map(sum, values))))
        except (KeyError, TypeError):  # one without one of them (then another has one more), or not a dict
            pass
    totals: dict[str, int] = defaultdict(int)
    for usage in usages:
        for k, v in (usage or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                totals[k] += int(v)
    return dict(sorted(totals.items()))


def _usage(s: Scan) -> dict:
    out = _nested()
    for group in s.groups:
        model, cond = group.key
        a, b = group.start, group.stop
        tokens = _token_sums(s.column["usage"][a:b])
        costs = s.column["cost_usd"][a:b]
        try:  # added in record order from 0.0, as the loop did
            cost, unknown = sum(map(float, costs), 0.0), 0
        except TypeError:  # an unknown cost (None) among them
            known = [c for c in costs if c is not None]
            cost, unknown = sum(map(float, known), 0.0), len(costs) - len(known)
        out[model][cond] = {**tokens, "cost_usd": cost, "n_cost_unknown": unknown, "n_trials": b - a}
    return _plain(out)


def _count_bins(s: Scan) -> dict:
    """:func:`count_bins` of the scanned records, from their cells' counts."""
    out = _nested()
    labels = [count_bin(int(key[3])) for key in s.cell_keys]
    for group in s.groups:
        model, cond = group.key
        per: dict[str, list[int]] = {}
        for c in group.cells:
            label = labels[c]
            if label is not None:
                t = per.setdefault(label, [0, 0, 0])
                t[0] += s.cell_n[c]
                t[1] += s.cell_ok[c]
                t[2] += s.cell_right[c]
        for label, row in _bin_rows(per).items():
            out[model][cond][label] = row
    return _plain(out)


def _bin_rows(per: dict[str, list[int]]) -> dict[str, dict[str, Any]]:
    """Each count bin's row, in ``COUNT_BINS`` order, from its [planned, ok, right] counts (bins with none left out)."""
    rows = {}
    for label, _, _ in COUNT_BINS:
        if label in per:
            n, n_ok, k = per[label]
            lo, hi = wilson_interval(k, n)
            rows[label] = {"n": n, "n_ok": n_ok, "completion": n_ok / n, "correct": k, "accuracy": k / n,
                           "ci_low": lo, "ci_high": hi}
    return rows


# --------------------------------------------------------------------------- public API


def aggregate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The report.json numbers of a counting run (see the module docstring for denominators)."""
    s = scan(records)
    cells = _cells(s)
    cb, fb = _boundaries(cells, "point")
    cbw, fbw = _boundaries(cells, "wilson_lower")
    return {
        "n_records": len(records),
        "cells": cells,
        "count_boundary": cb,
        "frequency_boundary": fb,
        "count_boundary_wilson": cbw,
        "frequency_boundary_wilson": fbw,
        "max_count_boundary": max_count_boundary(cb),
        "max_count_boundary_wilson": max_count_boundary(cbw),
        "boundary_rules": {"count_boundary": "point", "frequency_boundary": "point",
                           "count_boundary_wilson": "wilson_lower", "frequency_boundary_wilson": "wilson_lower",
                           "max_count_boundary": "point", "max_count_boundary_wilson": "wilson_lower",
                           "tau": TAU, "errors": "wrong"},
        "per_n": per_n(cells),
        "trace_metrics": _trace_metrics(s),
        "regions": _regions(s),
        "taxonomy": _taxonomy(s),
        "tolerance": _tolerance(s),
        "errors": _errors(s),
        "usage": _usage(s),
        "count_bins": _count_bins(s),
    }


def paired_difference(records: list[dict[str, Any]], a: tuple[str, str], b: tuple[str, str], *,
                      n_boot: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """EM(b) - EM(a) over samples planned in both arms (a failed trial is wrong), bootstrapped by source video."""
    arms: list[dict[str, dict[str, Any]]] = []
    for model, cond in (a, b):
        arm: dict[str, dict[str, Any]] = {}
        for r in records:
            if r.get("model") == model and r.get("condition") == cond:
                sid = _key(r, "sample_id")
                if sid in arm:
                    raise DataError(f"sample {sid!r} is scored twice for {model} / {cond}; "
                                    "deduplicate the records before pairing")
                arm[sid] = r
        arms.append(arm)
    shared = sorted(set(arms[0]) & set(arms[1]))
    if not shared:
        raise DataError(f"no sample is planned under both {a} and {b}; check the model and condition names")
    xa = [float(_right(arms[0][s])) for s in shared]
    xb = [float(_right(arms[1][s])) for s in shared]
    groups = [arms[0][s].get("group_id") or s for s in shared]
    res = paired_bootstrap(xa, xb, groups, n_boot=n_boot, seed=seed)
    return {"a": list(a), "b": list(b), "difference": "em_b - em_a", **res.to_dict(),
            "n_only_a": len(set(arms[0]) - set(shared)), "n_only_b": len(set(arms[1]) - set(shared)),
            "n_not_ok_a": sum(not _ok(arms[0][s]) for s in shared),
            "n_not_ok_b": sum(not _ok(arms[1][s]) for s in shared)}


def count_bin(n: int) -> str | None:
    for label, lo, hi in COUNT_BINS:
        if lo <= n <= hi:
            return label
    return None


def count_bins(records: list[dict[str, Any]]) -> dict[str, Any]:
    """EM by true-count bin (1-2, 3-4, ..., >30) per model and condition: the real-video transfer view.

    Over planned trials, like every EM (a failed trial is wrong), with the completion beside it.
    """
    out = _nested()
    for (model, cond), rs in _by(records, "model", "condition").items():
        per: dict[str, list[int]] = {}
        for r in rs:
            label = count_bin(int(_key(r, "n_events")))
            if label is not None:
                t = per.setdefault(label, [0, 0, 0])
                t[0] += 1
                t[1] += _ok(r)
                t[2] += _right(r)
        for label, row in _bin_rows(per).items():
            out[model][cond][label] = row
    return _plain(out)
