"""Cross-frame integration ops: strip masking (Reveal Algorithm 3) and the Sequential Mosaic (B.3).

Strip masking. Each frame is cut into ``S`` strips (vertical: columns; strip ``j`` spans pixels
``[floor(j L / S), floor((j + 1) L / S))`` of the frame's width or height ``L``). The strips are shuffled
into ``n_sets = ceil(S / v)`` coverage sets, ``v`` strips each and the last one short (``S - (n_sets - 1) v``
strips: 8 at the defaults), such that two strips of one set are at least ``delta`` strips apart. Every
source frame becomes ``k`` output frames (output fps = ``k`` x source fps, so the duration is kept);
output frame ``o`` shows source frame ``o // k`` with only the strips of set ``o mod n_sets`` on black.
The set index keeps cycling across source frames, so every strip is visible in any ``n_sets``
consecutive output frames whatever ``k`` is. ``check_strip_coverage`` checks that on the frames a
model is actually sent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any, Literal

import cv2
import numpy as np
from pydantic import Field, model_validator

from vidaudit.core.errors import ConfigError
from vidaudit.video.perturb.base import Op, Params, Plan, SourceInfo, need_video, to_frames
from vidaudit.video.perturb.registry import register

_SOLVER_TRIES = 200


# --------------------------------------------------------------------------- coverage sets


def strip_bounds(S: int, length: int) -> list[tuple[int, int]]:
    return [(j * length // S, (j + 1) * length // S) for j in range(S)]


def set_sizes(S: int, v: int) -> list[int]:
    n = math.ceil(S / v)
    return [v] * (n - 1) + [S - (n - 1) * v]


def delta_bound(S: int, v: int) -> int:
    """The largest delta that counting allows: a set of v strips spans (v - 1) delta + 1 <= S strips, and
    any delta consecutive strips lie in distinct sets, so delta <= n_sets."""
    n = math.ceil(S / v)
    spread = S if v == 1 else (S - 1) // (v - 1)
    return max(1, min(n, spread))


def _solve(S: int, v: int, delta: int, rng: np.random.Generator) -> list[int] | None:
    """A random assignment of strips to sets with the quotas of ``set_sizes`` and same-set strips >= delta
    apart: left to right, each strip takes a set allowed there, chosen with weight quota / (1 + slack), and
    a set with no slack left is taken at once. Returns the set of each strip, or None after all tries."""
    quota = set_sizes(S, v)
    n = len(quota)
    if delta >= n and max(quota) - min(quota) > 1:
        return None  # delta = n forces a period-n pattern, whose sets differ in size by at most 1
    for _ in range(_SOLVER_TRIES):
        rem, last, assign = quota[:], [-(10**9)] * n, [-1] * S
        for j in range(S):
            dead = False
            allowed, slack = [], []
            for c in range(n):
                if rem[c] == 0:
                    continue
                s = (S - 1) - (max(j, last[c] + delta) + (rem[c] - 1) * delta)
                if s < 0:
                    dead = True
                    break
                if j - last[c] >= delta:
                    allowed.append(c)
                    slack.append(s)
            if dead or not allowed:
                break
            tight = [c for c, s in zip(allowed, slack, strict=True) if s == 0]
            if tight:
                c = tight[int(rng.integers(len(tight)))]
            else:
                w = np.array([rem[c] / (1.0 + s) for c, s in zip(allowed, slack, strict=True)])
                c = allowed[int(rng.choice(len(allowed), p=w / w.sum()))]
            assign[j], rem[c], last[c] = c, rem[c] - 1, j
        else:
            return assign
    return None


def coverage_sets(S: int, v: int, delta: int | None, rng: np.random.Generator) -> tuple[int, list[list[int]]]:
    """(delta, sets): ``delta`` None takes the largest feasible value (5 at S = 128, v = 24)."""
    bound = delta_bound(S, v)
    if delta is not None:
        if delta > bound:
            raise ConfigError(
                f"strip_mask: delta={delta} is infeasible for S={S}, v={v}; delta must be in "
                f"[1, {bound}] (a set of {v} strips spans (v-1)*delta+1 <= S strips, and delta <= "
                f"n_sets = {math.ceil(S / v)})"
            )
        candidates = [delta]
    else:
        candidates = list(range(bound, 0, -1))
    for d in candidates:
        assign = _solve(S, v, d, rng)
        if assign is not None:
            sets: list[list[int]] = [[] for _ in set_sizes(S, v)]
            for j, c in enumerate(assign):
                sets[c].append(j)
            return d, sets
    raise ConfigError(
        f"strip_mask: found no partition of {S} strips into sets of {v} with delta={delta}; "
        f"try a smaller delta (at most {bound - 1}) or leave it null"
    )


def separation_problems(sets: Sequence[Sequence[int]], delta: int) -> list[str]:
    out = []
    for c, st in enumerate(sets):
        s = sorted(st)
        gaps = [b - a for a, b in pairwise(s)]
        if gaps and min(gaps) < delta:
            out.append(f"set {c} has strips {min(gaps)} apart, closer than delta={delta}")
    return out


# --------------------------------------------------------------------------- strip_mask


class StripMaskParams(Params):
    S: int = Field(128, ge=2, le=8192, description="number of strips")
    v: int = Field(24, ge=1, le=8192, description="visible strips per output frame (the last set is shorter)")
    k: int = Field(4, ge=1, le=64, description="masked duplicates per source frame; output fps = k x source fps")
    orientation: Literal["vertical", "horizontal"] = Field("vertical", description="vertical strips are columns")
    delta: int | None = Field(
        None, ge=1, description="minimum distance (in strips) between two strips of one set; null: the largest feasible"
    )

    @model_validator(mode="after")
    def _v_below_s(self) -> StripMaskParams:
        if self.v >= self.S:
            raise ValueError(f"v={self.v} must be smaller than S={self.S} (v = S masks nothing)")
        return self


@register
class StripMask(
    Op,
    name="strip_mask",
    kind="integration",
    params=StripMaskParams,
    summary="Algorithm 3: k masked duplicates per frame, each showing one coverage set of strips on black",
):
    def plan(self, p: StripMaskParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        fps = need_video(self.name, src)
        length = src.width if p.orientation == "vertical" else src.height
        if length < p.S:
            raise ConfigError(
                f"{self.name}: S={p.S} strips do not fit in the {length} px "
                f"{'width' if p.orientation == 'vertical' else 'height'}; S must be in [2, {length}]"
            )
        delta, sets = coverage_sets(p.S, p.v, p.delta, rng)
        n_sets = len(sets)
        n_out = src.n_frames * p.k
        if n_out < n_sets:
            raise ConfigError(
                f"{self.name}: {src.n_frames} source frames x k={p.k} give {n_out} masked frames, fewer "
                f"than the {n_sets} coverage sets, so some strips would never be shown; need at least "
                f"{math.ceil(n_sets / p.k)} source frames, a larger k or a larger v"
            )
        set_index = [o % n_sets for o in range(n_out)]
        info = {
            "S": p.S,
            "v": p.v,
            "k": p.k,
            "delta": delta,
            "orientation": p.orientation,
            "n_sets": n_sets,
            "sets": sets,
            "set_sizes": [len(s) for s in sets],
            "strip_px": [list(b) for b in strip_bounds(p.S, length)],
            "coverage_window": n_sets,
            "visible_fraction": [
                round(sum(b - a for a, b in (strip_bounds(p.S, length)[j] for j in s)) / length, 6) for s in sets
            ],
            "fps_factor": p.k,
        }
        return Plan(
            n_frames=n_out,
            fps=fps * p.k,
            width=src.width,
            height=src.height,
            map={
                "source_frame": [o // p.k for o in range(n_out)],
                "set_index": set_index,
                "visible_strips": [sets[c] for c in set_index],
            },
            info=info,
        )

    def prepare(self, p: StripMaskParams, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        h, w = plan.height, plan.width
        masks = []
        for st in plan.info["sets"]:
            m = np.zeros((h, w, 3), np.uint8)
            for j in st:
                a, b = plan.info["strip_px"][j]
                if p.orientation == "vertical":
                    m[:, a:b] = 255
                else:
                    m[a:b, :] = 255
            masks.append(m)
        return {"masks": masks, "sets": plan.map["set_index"], "buf": np.empty((h, w, 3), np.uint8)}

    def frame(self, i: int, src: np.ndarray | None, state: Any) -> np.ndarray:
        assert src is not None
        return cv2.bitwise_and(src, state["masks"][state["sets"][i]], dst=state["buf"])


def _meta_parts(meta: Any) -> tuple[str, int, dict[str, list[Any]], dict[str, Any]]:
    if hasattr(meta, "model_dump"):
        meta = meta.model_dump(mode="json")
    if not isinstance(meta, Mapping):
        raise TypeError("meta must be a PerturbMeta or its JSON dict")
    return str(meta.get("op")), int(meta.get("n_frames", 0)), dict(meta.get("map") or {}), dict(meta.get("info") or {})


def _coprime_stride(s: int, n: int) -> int:
    t = max(1, s)
    while math.gcd(t, n) != 1:
        t += 1
    return t


def check_strip_coverage(meta: Any, sent_indices: Iterable[int]) -> list[str]:
    """Problems with showing a strip-masked video through the frames ``sent_indices`` (output frame indices,
    as a sampler picked them); an empty list means the trial may run.

    Refused: frames outside the video; frames that together leave some strips never visible (a stride
    that shares a factor with ``n_sets`` shows only some sets); a window of ``n_sets`` consecutive frames
    sent that misses a strip; coverage sets in ``meta`` closer than ``delta``."""
    op, n_frames, cols, info = _meta_parts(meta)
    if op != "strip_mask":
        return [f"not a strip_mask video (op={op})"]
    sent = [int(i) for i in sent_indices]
    if not sent:
        return ["no frames are sent"]
    problems: list[str] = []
    bad = sorted({i for i in sent if not 0 <= i < n_frames})
    if bad:
        problems.append(f"frames {bad[:5]} are outside the {n_frames}-frame masked video")
    sets = [list(s) for s in info["sets"]]
    n_sets, S = len(sets), int(info["S"])
    problems += separation_problems(sets, int(info["delta"]))
    set_index = cols.get("set_index") or [o % n_sets for o in range(n_frames)]
    frames = sorted({i for i in sent if 0 <= i < n_frames})
    if not frames:
        return problems
    shown = sorted({set_index[i] for i in frames})
    missing = sorted(set(range(S)) - {j for c in shown for j in sets[c]})
    if missing:
        diffs = {b - a for a, b in pairwise(frames)}
        why = ""
        if len(diffs) == 1:
            s = diffs.pop()
            g = math.gcd(s, n_sets)
            if g > 1:
                why = (
                    f"; the frames sent are every {s}th output frame and {s} shares the factor {g} with the "
                    f"{n_sets} coverage sets; use a stride coprime with {n_sets} (e.g. {_coprime_stride(s, n_sets)})"
                    " or send every frame"
                )
        elif len(frames) < n_sets:
            why = f"; only {len(frames)} frames are sent, fewer than the {n_sets} coverage sets"
        problems.append(
            f"the {len(frames)} frames sent show coverage sets {shown} of {n_sets}, so {len(missing)} of "
            f"{S} strips are never visible (strips {missing[:8]}{'...' if len(missing) > 8 else ''})" + why
        )
        return problems
    full = set(range(S))
    failing = []
    for w in range(len(frames) - n_sets + 1):
        win = frames[w : w + n_sets]
        if {j for i in win for j in sets[set_index[i]]} != full:
            failing.append(win)
    if failing:
        problems.append(
            f"{len(failing)} of {len(frames) - n_sets + 1} windows of {n_sets} consecutive frames sent "
            f"miss some strips (first: output frames {failing[0]}); every strip must be visible within "
            f"any {n_sets} consecutive frames sent; sample with a regular stride coprime with {n_sets}"
        )
    return problems


# --------------------------------------------------------------------------- mosaic


QUADRANTS = ("top_left", "top_right", "bottom_left", "bottom_right")


def quadrant_boxes(width: int, height: int) -> list[list[int]]:
    xm, ym = width // 2, height // 2
    return [[0, 0, xm, ym], [xm, 0, width, ym], [0, ym, xm, height], [xm, ym, width, height]]


class _MosaicParams(Params):
    still_s: float | None = Field(
        None, ge=0, description="which frame of a video is the still (s); null: the middle frame (ignored for an image)"
    )
    fps: float = Field(1.0, gt=0, le=240, description="output frame rate")
    hold: int = Field(1, ge=1, le=1000, description="output frames per picture")


class MosaicParams(_MosaicParams):
    order: Literal["reading", "random"] = Field(
        "reading", description="quadrant order: top-left, top-right, bottom-left, bottom-right; or drawn"
    )


class MosaicSpatialParams(_MosaicParams):
    layout: Literal["reconstructed", "tiled"] = Field(
        "reconstructed",
        description="the four quadrants in place (the still itself), or the four masked frames "
        "of mosaic shrunk into a 2x2 grid",
    )


def _still_index(op: str, p: _MosaicParams, src: SourceInfo) -> int:
    if src.still:
        return 0
    if p.still_s is None:
        return src.n_frames // 2
    i = to_frames(p.still_s, src.fps or 1)
    if i >= src.n_frames:
        raise ConfigError(
            f"{op}: still_s={p.still_s:g} is past the end of the {src.duration_s:g} s source; "
            f"still_s must be in [0, {(src.n_frames - 1) / (src.fps or 1):.4g}]"
        )
    return i


def _mosaic_plan(src: SourceInfo, p: _MosaicParams, still: int, info: dict[str, Any], **cols: list[Any]) -> Plan:
    """The plan of a Sequential Mosaic op: every output frame made from the still, at ``fps``; ``cols`` are the map
    columns beside ``source_frame`` and ``info`` what the op records after the still and the quadrant boxes."""
    n = len(next(iter(cols.values())))
    boxes = quadrant_boxes(src.width, src.height)
    return Plan(
        n_frames=n,
        fps=p.fps,
        width=src.width,
        height=src.height,
        map={"source_frame": [still] * n, **cols},
        info={
            "still_frame": still,
            "quadrants": [{"quadrant": q, "name": QUADRANTS[q], "box_px": b} for q, b in enumerate(boxes)],
            **info,
        },
    )


@register
class Mosaic(
    Op,
    name="mosaic",
    kind="integration",
    params=MosaicParams,
    summary="Sequential Mosaic: a 4-frame video, frame t showing only quadrant t of a still",
    accepts_still=True,
):
    def plan(self, p: MosaicParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        still = _still_index(self.name, p, src)
        order = [0, 1, 2, 3] if p.order == "reading" else [int(q) for q in rng.permutation(4)]
        quad = [order[i // p.hold] for i in range(4 * p.hold)]
        return _mosaic_plan(src, p, still, {"order": order}, quadrant=quad)

    def prepare(self, p: MosaicParams, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        return {"boxes": quadrant_boxes(plan.width, plan.height), "quad": plan.map["quadrant"]}

    def frame(self, i: int, src: np.ndarray | None, state: Any) -> np.ndarray:
        assert src is not None
        x0, y0, x1, y1 = state["boxes"][state["quad"][i]]
        out = np.zeros_like(src)
        out[y0:y1, x0:x1] = src[y0:y1, x0:x1]
        return out


@register
class MosaicSpatial(
    Op,
    name="mosaic_spatial",
    kind="integration",
    params=MosaicSpatialParams,
    summary="the Sequential Mosaic's spatial control: the same four quadrants as one 2x2 image",
    accepts_still=True,
):
    def plan(
        self, p: MosaicSpatialParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None
    ) -> Plan:
        still = _still_index(self.name, p, src)
        info: dict[str, Any] = {"layout": p.layout}
        if p.layout == "tiled":
            info["cells_px"] = quadrant_boxes(src.width, src.height)  # cell q holds mosaic frame q, shrunk
        return _mosaic_plan(src, p, still, info, quadrants=[[0, 1, 2, 3]] * p.hold)

    def prepare(self, p: MosaicSpatialParams, plan: Plan, src: SourceInfo, rng: np.random.Generator) -> Any:
        return {"layout": p.layout, "boxes": quadrant_boxes(plan.width, plan.height), "done": None}

    def frame(self, i: int, src: np.ndarray | None, state: Any) -> np.ndarray:
        assert src is not None
        if state["layout"] == "reconstructed":
            return src
        if state["done"] is None:
            out = np.zeros_like(src)
            for q, (x0, y0, x1, y1) in enumerate(state["boxes"]):
                masked = np.zeros_like(src)
                bx0, by0, bx1, by1 = state["boxes"][q]
                masked[by0:by1, bx0:bx1] = src[by0:by1, bx0:bx1]
                out[y0:y1, x0:x1] = cv2.resize(masked, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)
            state["done"] = out
        done: np.ndarray = state["done"]
        return done
