"""Bulk passes that build many long-lived objects run with Python's cyclic garbage collector paused.

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
