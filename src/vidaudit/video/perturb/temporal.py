"""Temporal ops: they choose which source frame each output frame shows, never change its pixels.

Every one records ``map.source_frame[i]`` for every output frame ``i`` (and ``map.source_video[i]``
for ``scene_mix``), plus the ranges it touched as frame indices and presentation times in ``info``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import Field

from vidaudit.core.errors import ConfigError
from vidaudit.video.perturb.base import (
    Op,
    Params,
    Plan,
    SourceInfo,
    frame_range,
    need_video,
    span,
    t_of,
    to_frames,
    window,
)
from vidaudit.video.perturb.registry import register
from vidaudit.video.sampling import frame_on_screen

_MAX_DRAWS = 10_000


def _plan(src: SourceInfo, sf: list[int], info: dict[str, Any], **cols: list[Any]) -> Plan:
    fps = need_video("temporal op", src)
    return Plan(
        n_frames=len(sf), fps=fps, width=src.width, height=src.height, map={"source_frame": sf, **cols}, info=info
    )


def _splice(src: SourceInfo, a: int, b: int, inside: list[int]) -> list[int]:
    """The source's frames with the range [a, b) replaced by ``inside`` (source frames, in play order)."""
    return list(range(a)) + inside + list(range(b, src.n_frames))


def _over_range(src: SourceInfo, a: int, b: int, inside: list[int], touched: str, info: dict[str, Any]) -> Plan:
    """The plan of an op that changes one range [a, b) of the source and keeps the frames either side in place:
    ``inside`` plays instead of the range, which the plan's ``info`` records first, under ``touched``, then ``info``."""
    return _plan(src, _splice(src, a, b, inside), {touched: span(a, b, src.fps or 1), **info})


def _non_identity_permutation(rng: np.random.Generator, n: int, accept: Any = None) -> list[int]:
    """A uniform permutation of range(n) that is not the identity (and passes ``accept``), by rejection."""
    for _ in range(_MAX_DRAWS):
        perm = [int(x) for x in rng.permutation(n)]
        if perm != list(range(n)) and (accept is None or accept(perm)):
            return perm
    raise ConfigError(f"no permutation of {n} items satisfies the constraint")  # pragma: no cover


# --------------------------------------------------------------------------- reverse


class ReverseParams(Params):
    start_s: float = Field(0.0, ge=0, description="start of the reversed range (s)")
    end_s: float | None = Field(None, gt=0, description="end of the reversed range (s); null: the end of the clip")


@register
class Reverse(
    Op,
    name="reverse",
    kind="temporal",
    params=ReverseParams,
    summary="play a range (default: the whole clip) backwards",
):
    def plan(self, p: ReverseParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        a, b = frame_range(self.name, src, p.start_s, p.end_s)
        return _over_range(src, a, b, list(range(b - 1, a - 1, -1)), "reversed", {})


# --------------------------------------------------------------------------- shuffle_frames


class ShuffleFramesParams(Params):
    start_s: float = Field(0.0, ge=0, description="start of the shuffled range (s)")
    end_s: float | None = Field(None, gt=0, description="end of the shuffled range (s); null: the end of the clip")


@register
class ShuffleFrames(
    Op,
    name="shuffle_frames",
    kind="temporal",
    params=ShuffleFramesParams,
    summary="permute the frames of a range uniformly at random (never the identity)",
):
    def plan(
        self, p: ShuffleFramesParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None
    ) -> Plan:
        a, b = frame_range(self.name, src, p.start_s, p.end_s)
        if b - a < 2:
            raise ConfigError(f"{self.name}: the range holds {b - a} frame; a shuffle needs at least 2")
        perm = _non_identity_permutation(rng, b - a)
        moved = sum(1 for j, x in enumerate(perm) if j != x)
        return _over_range(src, a, b, [a + j for j in perm], "shuffled", {"frames_moved": moved})


# --------------------------------------------------------------------------- shuffle_segments


class ShuffleSegmentsParams(Params):
    segments: list[tuple[float, float]] | None = Field(
        None,
        description="annotated [start_s, end_s) segments, in time order, not overlapping; "
        "null: n_segments equal segments",
    )
    n_segments: int = Field(4, ge=2, le=256, description="equal segments when segments is null")
    query: Literal["order", "first", "last", "every"] = Field(
        "order", description="what must change: the order, the first segment, the last one, or every position"
    )
    gaps: Literal["keep", "drop"] = Field(
        "keep", description="frames outside the segments: kept in place between the reordered segments, or dropped"
    )


@register
class ShuffleSegments(
    Op,
    name="shuffle_segments",
    kind="temporal",
    params=ShuffleSegmentsParams,
    summary="reorder annotated variable-length segments so that the queried position changes",
):
    def _segments(self, p: ShuffleSegmentsParams, src: SourceInfo) -> list[tuple[int, int]]:
        fps = need_video(self.name, src)
        n = src.n_frames
        if p.segments is None:
            if p.n_segments > n:
                raise ConfigError(f"{self.name}: n_segments={p.n_segments} exceeds the {n} frames of the source")
            edges = [round(j * n / p.n_segments) for j in range(p.n_segments + 1)]
            return [(edges[j], edges[j + 1]) for j in range(p.n_segments)]
        if len(p.segments) < 2:
            raise ConfigError(f"{self.name}: needs at least 2 segments, got {len(p.segments)}")
        segs, last = [], 0
        for j, (s0, s1) in enumerate(p.segments):
            a, b = to_frames(s0, fps), to_frames(s1, fps)
            if not (0 <= s0 < s1) or b <= a:
                raise ConfigError(f"{self.name}: segment {j} [{s0:g}, {s1:g}) is empty at {fps:g} fps")
            if a < last:
                raise ConfigError(
                    f"{self.name}: segment {j} [{s0:g}, {s1:g}) overlaps or precedes the one before; "
                    "list segments in time order without overlap"
                )
            if b > n:
                raise ConfigError(f"{self.name}: segment {j} [{s0:g}, {s1:g}) runs past the {n / fps:g} s source")
            segs.append((a, b))
            last = b
        return segs

    def plan(
        self, p: ShuffleSegmentsParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None
    ) -> Plan:
        fps = need_video(self.name, src)
        segs = self._segments(p, src)
        m = len(segs)
        accept = {
            "order": None,
            "first": lambda perm: perm[0] != 0,
            "last": lambda perm: perm[-1] != m - 1,
            "every": lambda perm: all(perm[j] != j for j in range(m)),
        }[p.query]
        order = _non_identity_permutation(rng, m, accept)
        gaps = [(segs[j][1], segs[j + 1][0]) for j in range(m - 1)]
        sf: list[int] = []
        seg_col: list[int | None] = []

        def put(a: int, b: int, seg: int | None) -> None:
            sf.extend(range(a, b))
            seg_col.extend([seg] * (b - a))

        keep = p.gaps == "keep"
        if keep:
            put(0, segs[0][0], None)
        out_segments = []
        for slot, j in enumerate(order):
            start = len(sf)
            put(*segs[j], j)
            out_segments.append(
                {"slot": slot, "source_segment": j, **span(start, len(sf), fps), "source": span(*segs[j], fps)}
            )
            if keep and slot < m - 1:
                put(*gaps[slot], None)
        if keep:
            put(segs[-1][1], src.n_frames, None)
        info = {
            "segments_in": [{"segment": j, **span(a, b, fps)} for j, (a, b) in enumerate(segs)],
            "order": order,
            "segments_out": out_segments,
            "query": p.query,
            "first_segment": order[0],
            "last_segment": order[-1],
        }
        return _plan(src, sf, info, segment=seg_col)


# --------------------------------------------------------------------------- cut and temporal_gap


def _removal(src: SourceInfo, a: int, b: int, **info: Any) -> Plan:
    """The plan that removes [a, b): the frames either side meet at ``join_frame``."""
    fps = src.fps or 1
    removal = {
        "removed_s": round((b - a) / fps, 6),
        "join_frame": a,
        "join_t": t_of(a, fps),
        "visible": [span(0, a, fps), span(b, src.n_frames, fps)],
    }
    return _over_range(src, a, b, [], "removed", removal | info)


class CutParams(Params):
    duration_s: float = Field(2.0, gt=0, description="length of the removed range (s)")
    start_s: float | None = Field(None, ge=0, description="start of the removed range (s); null: drawn from the seed")


@register
class Cut(
    Op,
    name="cut",
    kind="temporal",
    params=CutParams,
    summary="remove a multi-second range (an abrupt jump cut); frames remain on both sides",
):
    def plan(self, p: CutParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        a, b = window(self.name, src, p.start_s, p.duration_s, rng, interior=True, what="cut")
        return _removal(src, a, b)


class TemporalGapParams(Params):
    start_s: float = Field(..., ge=0, description="start of the removed segment (s)")
    end_s: float = Field(..., gt=0, description="end of the removed segment (s)")
    label: str = Field("", description="what the removed segment shows (the missing action), recorded as is")


@register
class TemporalGap(
    Op,
    name="temporal_gap",
    kind="temporal",
    params=TemporalGapParams,
    summary="remove a named segment and present the rest as one whole clip",
):
    def plan(self, p: TemporalGapParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        a, b = frame_range(self.name, src, p.start_s, p.end_s)
        if a < 1 or b > src.n_frames - 1:
            fps = src.fps or 1
            raise ConfigError(
                f"{self.name}: the segment [{p.start_s:g}, {p.end_s:g}) s must leave frames before and "
                f"after it; start_s >= {1 / fps:.4g} and end_s <= {(src.n_frames - 1) / fps:.4g}"
            )
        return _removal(src, a, b, label=p.label)


# --------------------------------------------------------------------------- scene_mix


class SceneMixParams(Params):
    duration_s: float = Field(2.0, gt=0, description="length of the spliced range (s)")
    start_s: float | None = Field(
        None, ge=0, description="where the splice starts in the source (s); null: drawn from the seed"
    )
    second_start_s: float | None = Field(
        0.0, ge=0, description="where the spliced range starts in the second video (s); null: drawn from the seed"
    )
    mode: Literal["replace", "insert"] = Field(
        "replace", description="replace source frames (same length) or insert between them (longer)"
    )


@register
class SceneMix(
    Op,
    name="scene_mix",
    kind="temporal",
    params=SceneMixParams,
    summary="splice a range of a second video into the source",
    needs_second=True,
    version=2,  # 2: second_t is the span of the frames shown (a version-1 cache entry records the asked-for times)
):
    def plan(self, p: SceneMixParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        assert second is not None
        fps = need_video(self.name, src)
        fps2 = need_video(self.name + " (second video)", second)
        n, n2 = src.n_frames, second.n_frames
        length = to_frames(p.duration_s, fps)
        if p.mode == "replace":
            a, b = window(self.name, src, p.start_s, p.duration_s, rng, interior=True, what="splice")
        else:
            if p.start_s is None:
                a = int(rng.integers(1, n)) if n > 1 else 0
            else:
                a = to_frames(p.start_s, fps)
                if not 1 <= a <= n - 1:
                    raise ConfigError(
                        f"{self.name}: start_s={p.start_s:g} must leave frames before and after the "
                        f"insert; start_s must be in [{1 / fps:.4g}, {(n - 1) / fps:.4g}]"
                    )
            b = a
            if length < 1:
                raise ConfigError(f"{self.name}: duration_s={p.duration_s:g} is shorter than one frame")
        room2 = n2 / fps2 - p.duration_s
        if room2 < -1e-9:
            raise ConfigError(
                f"{self.name}: duration_s={p.duration_s:g} is longer than the {n2 / fps2:g} s second "
                f"video; duration_s must be at most {n2 / fps2:.4g}"
            )
        if p.second_start_s is None:
            c_s = float(rng.uniform(0, max(room2, 0.0)))
        else:
            c_s = p.second_start_s
            if c_s > room2 + 1e-9:
                raise ConfigError(
                    f"{self.name}: second_start_s={c_s:g} leaves less than duration_s={p.duration_s:g} "
                    f"of the second video; second_start_s must be in [0, {max(room2, 0):.4g}]"
                )
        mixed = [frame_on_screen(c_s + j / fps, fps2, n2) for j in range(length)]
        sf = _splice(src, a, b, mixed)
        vid = ["source"] * a + ["second"] * length + ["source"] * (n - b)
        # the record is of the frames shown, not of the times asked for: c_s falls inside a frame, and
        # duration_s is rounded to whole output frames, so [c_s, c_s + duration_s] could name second-video
        # time that is never on screen (or leave out some that is)
        shown = span(mixed[0], mixed[-1] + 1, fps2)
        info = {
            "mixed": span(a, a + length, fps),
            "mode": p.mode,
            "second_frames": shown["frames"],
            "second_t": shown["t"],
            "replaced": span(a, b, fps) if p.mode == "replace" else None,
        }
        return _plan(src, sf, info, source_video=vid)


# --------------------------------------------------------------------------- speed


class SpeedParams(Params):
    factor: float = Field(2.0, ge=0.125, le=8.0, description="playback speed: 2 = twice as fast, 0.5 = half speed")


@register
class Speed(
    Op,
    name="speed",
    kind="temporal",
    params=SpeedParams,
    summary="play faster (drop frames) or slower (repeat frames) at the same frame rate",
):
    def plan(self, p: SpeedParams, src: SourceInfo, rng: np.random.Generator, second: SourceInfo | None) -> Plan:
        fps = need_video(self.name, src)
        n = src.n_frames
        if p.factor == 1.0:
            raise ConfigError(f"{self.name}: factor=1 changes nothing; factor must be in [0.125, 8] and not 1")
        n_out = max(1, int(math.ceil(n / p.factor - 1e-9)))
        sf = [min(n - 1, int(math.floor(i * p.factor + 1e-9))) for i in range(n_out)]
        return _plan(
            src, sf, {"factor": p.factor, "duration_in_s": round(n / fps, 6), "duration_out_s": round(n_out / fps, 6)}
        )
