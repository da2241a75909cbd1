"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from vidaudit.core.types import Condition
from vidaudit.suites.counting.grid import GridPoint


def parse_condition(text: str, prompt: str, timestamps: bool = True) -> Condition:
    """``vidaudit.run.conditions.parse_condition``, or ``run.plan``'s in a vidaudit from before that module (the
    ``--before`` trees the side-by-side benchmarks run)."""
    try:
        from vidaudit.run.conditions import parse_condition as parse
    except ImportError:
        from vidaudit.run.plan import parse_condition as parse  # type: ignore[attr-defined,no-redef]
    return parse(text, prompt, timestamps)


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


REPO = Path(__file__).resolve().parents[1]


def _show(rev: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def modules_at(
    rev: str,
    names: Sequence[str],
    package: str,
    moved: Mapping[str, str] | None = None,
    optional: frozenset[str] = frozenset(),
) -> dict[str, types.ModuleType]:
    """The modules ``names`` as of git revision ``rev``, imported as ``package.*`` (where they import each
    other, they get each other's old copies): a side-by-side "before" in the same process. ``moved``: a
    module's name -> the name it had before a move, read from there at revisions older than the move;
    ``optional``: modules split out later, skipped at a revision that does not have them."""
    moved = dict(moved or {})
    mods: dict[str, types.ModuleType] = {}
    for name in names:
        path = "src/" + name.replace(".", "/") + ".py"
        try:
            try:
                src = _show(rev, path)
            except subprocess.CalledProcessError:
                if name in optional:
                    continue
                if name not in moved:
                    raise
                path = "src/" + moved[name].replace(".", "/") + ".py"
                src = _show(rev, path)
        except (OSError, subprocess.CalledProcessError) as e:
            raise SystemExit(
                f"cannot read {path} at {rev} with git ({e}); run from a clone that has {rev}, or pass --before none"
            ) from e
        for other in names:
            src = src.replace(other, package + other[len("vidaudit") :])
            if other in moved:
                src = src.replace(moved[other], package + other[len("vidaudit") :])
        new = package + name[len("vidaudit") :]
        parts = new.split(".")
        for k in range(1, len(parts)):  # parent packages, empty
            pkg = ".".join(parts[:k])
            if pkg not in sys.modules:
                sys.modules[pkg] = types.ModuleType(pkg)
                sys.modules[pkg].__path__ = []  # type: ignore[attr-defined]
        spec = importlib.util.spec_from_loader(new, loader=None)
        mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[new] = mod
        exec(compile(src, f"{rev}:{path}", "exec"), mod.__dict__)
        mods[name] = mod
    return mods
