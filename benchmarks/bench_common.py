"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import time
from collections.abc import Callable

from vidaudit.suites.counting.grid import GridPoint


def parse_points(spec: str) -> list[GridPoint]:
    """``domain:N:F`` items separated by commas (seed 0)."""
    points = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        try:
            domain, n, f = item.split(":")
            points.append(GridPoint(domain, int(n), float(f), 0))
        except ValueError as e:
            raise SystemExit(f"bad --points item {item!r}: expected domain:N:F, e.g. bounce_ball:12:4") from e
    return points


def vm_hwm_mib() -> float:
    """This process's peak resident memory so far (Linux ``VmHWM``), in MiB; NaN where /proc has none."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    """Minimum wall time of ``repeats`` calls: the run least disturbed by other load."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
