"""How often ``camera-flow`` names the right motion on a camera_motion dataset, at the frames conditions send.

``python -m vidaudit.suites.stress.camera_motion.measure DIR [--selection frames@4 --selection native@all]``
prints the accuracy per synthesis and selection and lists the misses. A selection is read the way a run
sends it: ``frames@K`` / ``frames#K`` as full-size images, ``native@all`` / ``native@K`` as the
half-size frames a pixel observer decodes from a video part.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from vidaudit.sdk import Timeline, at_fps, classify_motion, every_frame, iter_selected, load_samples, uniform_count


def selection_indices(selection: str, clock: Timeline) -> tuple[list[int], bool]:
    """(frame indices, half size) of a condition's text as a run sends them."""
    kind, _, arg = selection.replace("#", "@#").partition("@")
    if kind == "native" and arg == "all":
        return list(every_frame(clock).indices), True
    if kind == "native":
        return list(at_fps(clock, float(arg)).indices), True
    if kind == "frames" and arg.startswith("#"):
        return list(uniform_count(clock, int(arg[1:])).indices), False
    if kind == "frames":
        return list(at_fps(clock, float(arg)).indices), False
    raise SystemExit(f"unknown selection {selection!r}; use frames@K, frames#K, native@K or native@all")


def measure(data: Path, selections: Sequence[str]) -> dict[tuple[str, str], tuple[int, int, list[str]]]:
    """``{(synthesis, selection): (right, total, misses)}`` over every sample of ``data``."""
    out: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, []])
    for s in load_samples(data):
        for sel in selections:
            idx, half = selection_indices(sel, s.video.timeline)
            frames = [
                f for _, f in iter_selected(data / s.video.path, sorted(set(idx)), half=half, stream=s.video.stream)
            ]
            got, ev = classify_motion(frames)
            cell = out[(str(s.params.get("synthesis")), sel)]
            cell[0] += got == s.answer
            cell[1] += 1
            if got != s.answer:
                cell[2].append(
                    f"{s.sample_id} ({s.params.get('duration_s')} s @ {s.params.get('fps')}, "
                    f"speed {s.params.get('speed_px_s')}, zoom {s.params.get('zoom_max')} "
                    f"{s.params.get('zoom_curve')}): {got} " + ", ".join(f"{k}={v:.2f}" for k, v in ev.items())
                )
    return {k: (v[0], v[1], v[2]) for k, v in sorted(out.items())}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--selection", action="append", default=None)
    args = ap.parse_args(argv)
    res = measure(args.data, args.selection or ["frames@4", "native@all"])
    right = total = 0
    for (synth, sel), (k, n, misses) in res.items():
        right, total = right + k, total + n
        print(f"{synth:>3} {sel:<11} {k}/{n} = {100 * k / n:.1f}%")
        for m in misses:
            print(f"    miss {m}")
    print(f"all {right}/{total} = {100 * right / max(total, 1):.1f}%")


if __name__ == "__main__":
    main()
