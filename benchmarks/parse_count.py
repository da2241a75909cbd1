"""Time the final-count parser before and after, side by side, on the scoring benchmark's responses.

Issue 24, fourth round: ``parse_count`` and the one ``boxed_spans`` call the timestamp extractor makes on the
same text (only when it holds "box", as ``suites/counting/timestamps._masked`` does), over the ~38,000
responses ``scoring.py`` generates. ``before`` is ``vidaudit.score.answers`` at ``--before`` (read with
``git show``, imported under another name); ``current`` is this tree. CPU time (``time.process_time``: the
machine is shared), repetitions alternate, best of ``--repeats`` per side (the least pass + collection); the
pass runs under ``core.gcpause.paused_gc`` as the score stage runs its pass, and the ``gc.collect()`` after
it is timed beside it. The outputs (value, method, span and the boxes, read in an untimed pass) must be
equal, or the script exits non-zero.

    python benchmarks/parse_count.py [--before a4d1acc] [--repeats 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import time
import types
from collections.abc import Callable

from bench_common import modules_at
from scoring import make_response, make_sample

from vidaudit.core.gcpause import paused_gc
from vidaudit.score import answers
from vidaudit.suites.counting.grid import grid


def texts(n: int) -> list[str]:
    """The responses ``scoring.py`` scores, in its order."""
    samples = [make_sample(p.domain, p.n_events, p.frequency_hz, p.seed) for p in grid()]
    return [make_response(samples[i % len(samples)], i // len(samples)) for i in range(n)]


def pass_of(mod: types.ModuleType) -> Callable[[list[str]], None]:
    """One scoring pass's parsing: the count, then the boxes the extractor masks; like scoring, keeps neither."""
    parse_count, boxed_spans = mod.parse_count, mod.boxed_spans

    def run(items: list[str]) -> None:
        for t in items:
            parse_count(t)
            if "box" in t:
                boxed_spans(t)

    return run


def outputs(mod: types.ModuleType, items: list[str]) -> list:
    """What the pass reads, for the comparison: the Parsed's repr, its value's type, and the boxes."""
    return [(repr(p), type(p.value), p.span, mod.boxed_spans(t)) for t in items for p in (mod.parse_count(t),)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="a4d1acc", help="git revision of the 'before' answers.py")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--trials", type=int, default=38_000)
    args = ap.parse_args()
    items = texts(args.trials)
    before = modules_at(args.before, ["vidaudit.score.answers"], "_answers_before")["vidaudit.score.answers"]
    impls = {"before": pass_of(before), "current": pass_of(answers)}
    best = dict.fromkeys(impls, (float("inf"), 0.0))
    print(f"load average at start {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for r in range(args.repeats):
        for name, fn in impls.items() if r % 2 == 0 else reversed(impls.items()):  # neither always goes first
            gc.collect()
            c0 = time.process_time()
            with paused_gc():
                fn(items)
            c1 = time.process_time()
            gc.collect()
            c2 = time.process_time()
            if c2 - c0 < sum(best[name]):
                best[name] = (c1 - c0, c2 - c1)
    same = outputs(before, items) == outputs(answers, items)  # the modules' Parsed are different classes
    print(f"CPU ms over {len(items)} responses, best of {args.repeats}:    pass     gc  total")
    for name, (run, coll) in best.items():
        print(
            f"  {name:8s} {'':33s} {run * 1e3:6.1f} {coll * 1e3:6.1f} {(run + coll) * 1e3:6.1f}"
            f"  ({(run + coll) / len(items) * 1e6:.2f} us per response)"
        )
    ratio = sum(best["before"]) / sum(best["current"])
    print(
        f"ratio before / current {ratio:.2f}x; identical: {same}; load average at end "
        f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
