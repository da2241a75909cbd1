"""Thin-strip colour bleed at 320x192 (docs/stress.md, cross_frame): each Table 10 mask on 4 synthetic clips, the
exact (unencoded) strip-masked frames against the H.264 file decoded back. Run: `python benchmarks/strip_bleed.py`."""

import tempfile
from pathlib import Path

import numpy as np

from vidaudit.suites.stress.cross_frame import synthetic
from vidaudit.suites.stress.cross_frame.options import TABLE10
from vidaudit.suites.stress.cross_frame.synthetic import synthetic_clip_job
from vidaudit.video.decode import iter_frames
from vidaudit.video.perturb.engine import _frames, _inputs, _plan, apply, resolve
from vidaudit.video.perturb.source import DEFAULT_BUDGET_BYTES

d = Path(tempfile.mkdtemp())
W, H = 320, 192
for i in range(4):
    synthetic_clip_job(i, 6, 6.0, W, H, str(d / f"c{i}.mp4"))
print(
    "config | strip px | masked px lit (>48) | visible px mean |err| | visible off >40 | shape px mean |err| | shape px nearest palette colour wrong"
)
PAL = np.array(list(synthetic.PALETTE.values()), int)
for n, S, v, o, k, *_ in TABLE10:
    spec = {"name": "strip_mask", "params": {"S": S, "v": v, "k": k, "orientation": o}}
    lit = err = far = nm = nv = serr = swrong = ns = 0
    for i in range(4):
        src = d / f"c{i}.mp4"
        op, p = resolve(spec)
        s, sec = _inputs(op, src, None)
        plan = _plan(op, p, s, sec, 0)
        exact = np.stack([f.copy() for f in _frames(op, p, plan, s, sec, 0, DEFAULT_BUDGET_BYTES)])
        out = d / f"m{n}-{i}.mp4"
        apply(src, spec, out)
        dec = np.stack(list(iter_frames(out))).astype(int)
        masked = exact.max(axis=3) == 0
        vis = ~masked
        lit += int((dec.max(axis=3)[masked] > 48).sum())
        nm += int(masked.sum())
        e = np.abs(dec - exact.astype(int))
        err += float(e.mean(axis=3)[vis].sum())
        nv += int(vis.sum())
        far += int((e.max(axis=3)[vis] > 40).sum())
        shape = vis & (np.abs(exact.astype(int) - 128).max(axis=3) > 20)
        serr += float(e.mean(axis=3)[shape].sum())
        ns += int(shape.sum())
        ex, de = exact[shape].astype(int), dec[shape]

        def near(a: np.ndarray) -> np.ndarray:
            return np.argmin(((a[:, None, :] - PAL[None]) ** 2).sum(-1), axis=1)

        swrong += int((near(ex) != near(de)).sum())
    strip = (W if o == "vertical" else H) / S
    print(
        f"{S}/{v}/{o}/{k} | {strip:.2f} | {100 * lit / nm:.1f}% | {err / nv:.1f} | {100 * far / nv:.1f}% | {serr / ns:.1f} | {100 * swrong / ns:.1f}%"
    )
