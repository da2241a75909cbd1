"""Bulk passes that build many long-lived objects run with Python's cyclic garbage collector paused (or, for a
run, collecting its young objects less often).

Scoring a run builds a record per trial (dicts, lists, tuples: about 17 containers each) and keeps them
all; every 700 container allocations the collector walks the young ones, and as the kept records age it
walks them again and again, none of which frees anything (records hold no reference cycles). On the
paper's 38,000 responses that was 0.7-0.8 s of a 5.9 s pass (benchmarks/README.md, "Scoring"). Reference
counting still frees everything that is not cyclic while the collector is paused, and the collector
runs again, as before, when the pass ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The block runs with the cyclic collector off; it is turned back on after (if it was on before)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


#: allocations between two collections of the youngest generation inside ``roomy_young_gc`` (Python's default: 700)
YOUNG_THRESHOLD = 100_000


@contextmanager
def roomy_young_gc(young: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """The block runs with the collector on but a young generation of ``young`` allocations.

    A run holds each trial's objects (its plan, request, response and attempt) for a few thousand allocations,
    the lanes' read-ahead windows: with 700 they outlive two young collections and are promoted to the oldest
    generation, which every full collection then walks again, with the samples and everything imported (a
    tenth of a simulated run's CPU, benchmarks/README.md "Streamed runs"). With a larger young generation
    most die young. Every model's lane holds its own window, so what a run keeps alive grows with the models run
    at once: 15 simulated models (their windows and 128 workers each) outlived a young generation of 10,000 and
    spent a tenth of their CPU in the collector again, 100,000 holds them (benchmarks/README.md, "Harness CPU
    per trial"). Cycles are still collected; the thresholds are restored after, errors included."""
    before = gc.get_threshold()
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
