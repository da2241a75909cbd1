"""The pixel detector: finds counting events in decoded frames, knowing nothing of the renderer.

It reads only pixels (and each frame's presentation time), so it is used twice: to verify that
every rendered video shows its trace (``vidaudit verify``), and as the ``ideal-observer`` model,
which runs it on exactly the frames a condition supplies. Given every frame it recovers every
event (at its frame +-1); given 1 fps it shows what such an input makes recoverable.

Per domain:
- bounce_ball: the ball is the most circular blob of the first frame; its centroid is tracked by
  colour, projected on the principal axis of motion; a contact is a reversal of direction.
- blinking: a frame is ON when many pixels differ from the first (OFF) frame; an event is an
  OFF -> ON onset.
- state_machine: an event is a frame that differs from the previous supplied frame.

Every feature is a pure function of a frame's pixels (and of the first frame's, or the previous
frame's), so a frame supplied as the same read-only array object as the one before it
(``iter_frames_reused`` does that for repeated frames) gets the previous frame's feature without
being looked at again: the detections are exactly those of analysing every frame, at a fraction of
the cost on clips made of runs of identical frames. A writable array is always analysed (a caller
may refill one buffer in place).

A frame may also be supplied as what changed, (index, time, patch, (x0, y0, x1, y1)): it is the frame
before it with the box replaced by ``patch`` (``render.render_checked`` knows from the scene's geometry
where a bouncing ball's frame changed). Every feature is a count or a sum over pixels, so it is updated
from the box alone: the previous frame's, less what the box held, plus what the patch holds; integers,
so exactly the values of analysing the whole frame (``tests/suites/counting/test_counting_patches.py``). Patches apply
to frames analysed at their own size (``analysed_at_full_size``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from vidaudit.sdk import ConfigError

ANALYSIS_WIDTH = 480  # frames wider than this are downscaled by an integer factor first
DIFF_LEVEL = 40  # a pixel "changed" when a channel moves by more than this
MIN_CHANGED_FRAC = 1e-3  # ... and a frame "changed" when more than this fraction of pixels did
MOVE_EPS_PX = 0.75  # ball displacement (full-res px) below which it is at rest


@dataclass(frozen=True)
class Detection:
    position: int  # index into the supplied frame sequence
    frame: int  # source frame index
    t: float  # presentation time in seconds
    label: str | None = None


def analysed_at_full_size(width: int) -> bool:
    """Whether frames ``width`` px wide are analysed without downscaling (the patches of a frame apply then)."""
    return -(-width // ANALYSIS_WIDTH) <= 1


def _small(rgb: np.ndarray) -> tuple[np.ndarray, int]:
    h, w = rgb.shape[:2]
    k = max(1, -(-w // ANALYSIS_WIDTH))
    if k == 1:
        return rgb, 1
    return cv2.resize(rgb, (w // k, h // k), interpolation=cv2.INTER_AREA), k


def _changed(a: np.ndarray, b: np.ndarray) -> int:
    r, g, bl = cv2.split(cv2.absdiff(a, b))
    return cv2.countNonZero(cv2.threshold(cv2.max(cv2.max(r, g), bl), DIFF_LEVEL, 255, cv2.THRESH_BINARY)[1])


def _background(rgb: np.ndarray) -> np.ndarray:
    """The mean colour (float64) of the pixels whose colour quantised to 3 bits per channel is the most common (the
    least such code on a tie; the code's arithmetic wraps at 8 bits): exact integer sums per channel, divided as
    numpy's ``mean`` divides (``tests/suites/counting/test_counting_patches.py`` holds it to the plain numpy
    statement)."""
    q = (rgb // 32).reshape(-1, 3)
    keys = q[:, 0] * 64 + q[:, 1] * 8 + q[:, 2]
    mask = (keys == np.argmax(np.bincount(keys))).view(np.uint8).reshape(rgb.shape[:2])
    sums = [int(cv2.sumElems(cv2.bitwise_and(c, c, mask=mask))[0]) for c in cv2.split(rgb)]
    return np.array(sums, np.float64) / cv2.countNonZero(mask)


def _foreground(rgb: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """1 where a pixel is off ``bg`` (truncated to integers) by more than DIFF_LEVEL in some channel, else 0 (uint8)."""
    b = bg.astype(np.uint8)
    r, g, bl = cv2.split(cv2.absdiff(rgb, (int(b[0]), int(b[1]), int(b[2]), 0)))  # type: ignore[call-overload]
    return cv2.threshold(cv2.max(cv2.max(r, g), bl), DIFF_LEVEL, 1, cv2.THRESH_BINARY)[1]


class _Ball:
    """Finds the ball in the first frame, then tracks its centroid by colour."""

    def __init__(self, first: np.ndarray) -> None:
        self.bg = _background(first)
        fg = _foreground(first, self.bg)
        n, labels, stats, _ = cv2.connectedComponentsWithStats(fg, connectivity=8)
        best, best_score = None, np.inf
        for i in range(1, n):
            x, y, w, h, area = stats[i]
            if area < 12:
                continue
            fill = area / float(w * h)
            score = abs(fill - np.pi / 4) + abs(np.log(w / h))
            if score < best_score:
                best, best_score = i, score
        self.found = best is not None
        if self.found:
            core = cv2.erode((labels == best).astype(np.uint8), np.ones((3, 3), np.uint8))
            pix = first[core.astype(bool)] if core.any() else first[labels == best]
            self.colour = pix.reshape(-1, 3).mean(axis=0)
            others = [self.bg] + [first[labels == i].reshape(-1, 3).mean(axis=0) for i in range(1, n) if i != best]
            nearest = min(float(np.linalg.norm(self.colour - o)) for o in others)
            self.tol = max(20.0, 0.3 * nearest)  # per-channel box half-width
            self.lo = np.clip(self.colour - self.tol, 0, 255).astype(np.uint8)
            self.hi = np.clip(self.colour + self.tol, 0, 255).astype(np.uint8)

    def moments(self, img: np.ndarray, x0: int = 0, y0: int = 0) -> tuple[int, int, int]:
        """(pixels, sum of x, sum of y) of the ball's colour in ``img``, whose top-left pixel is (x0, y0):
        integers, so that a box's can be added to and taken from a whole frame's exactly."""
        m = cv2.moments(cv2.inRange(img, self.lo, self.hi), binaryImage=True)
        n = int(m["m00"])
        return n, int(m["m10"]) + x0 * n, int(m["m01"]) + y0 * n

    @staticmethod
    def centroid(m: tuple[int, int, int]) -> tuple[float, float] | None:
        n, sx, sy = m
        return None if n == 0 else (sx / n, sy / n)


def _wall_label(direction: np.ndarray) -> str:
    dx, dy = direction
    if abs(dx) >= abs(dy):
        return "left" if dx < 0 else "right"
    return "top" if dy < 0 else "bottom"


def _reversals(pos: np.ndarray, positions: list[int], scale: int) -> list[tuple[int, str]]:
    """Contacts as direction reversals of the tracked centroid; returns (sequence position, wall)."""
    ok = ~np.isnan(pos[:, 0])
    if ok.sum() < 3:
        return []
    centre = pos[ok].mean(axis=0)
    cov = np.cov((pos[ok] - centre).T)
    axis = np.linalg.eigh(cov)[1][:, -1]
    s = (pos - centre) @ axis
    eps = MOVE_EPS_PX / scale
    out: list[tuple[int, str]] = []
    last_sign, zeros = 0, 0
    for j in range(len(s) - 1):
        if np.isnan(s[j]) or np.isnan(s[j + 1]):
            last_sign, zeros = 0, 0
            continue
        d = s[j + 1] - s[j]
        if abs(d) <= eps:
            zeros += 1
            continue
        sign = 1 if d > 0 else -1
        if last_sign and sign != last_sign and zeros <= 1:
            k = j  # extremum frame; on a tie (one zero step) take the later frame
            out.append((positions[k], _wall_label(pos[k] - centre)))
        last_sign, zeros = sign, 0
    return out


def _axis_positions(pos: np.ndarray) -> np.ndarray:
    """The tracked centroids projected on their principal axis (the axis ``_reversals`` reads)."""
    ok = ~np.isnan(pos[:, 0])
    centre = pos[ok].mean(axis=0)
    axis = np.linalg.eigh(np.cov((pos[ok] - centre).T))[1][:, -1]
    return (pos - centre) @ axis


@dataclass(frozen=True)
class Contact:
    """A bounce-ball contact read from pixels: the extremum frame (``Detection``'s) and, when both neighbours
    move, the contact instant in frames (``at``: 200.0 is frame 200's own time) from the V the ball traces."""

    position: int  # index into the supplied frame sequence of the extremum frame
    frame: int
    at: float | None  # contact time in source-frame units; None when a neighbour is at rest


def contact_times(frames: Iterable[tuple[Any, ...]]) -> list[Contact]:
    """Bounce-ball contacts with their sub-frame instants, for every frame of a clip supplied in order.

    The ball moves at one speed v (px per frame) towards a wall and away from it, so its distance from the
    wall is ``v |t - t_c|``: with the frames just before and after the extremum frame k (both moving),
    ``t_c = k + (d[k-1] - d[k+1]) / (2 v)``, v the median step of the moving frames. No frame need show the
    contact: the instant is read to a few hundredths of a frame, where the extremum is only the nearest
    frame (one early for a contact in the second half of a frame interval). A neighbour at rest (a lead-in or
    lead-out shorter than 1.5 frames: fps below 6 F) gives ``at`` None. ``frames`` as ``detect_events`` takes them
    (patches included)."""
    idx, _, pos, scale = _ball_track(frames)
    found = _reversals(pos, list(range(len(idx))), scale)
    if not found:
        return []
    s = _axis_positions(pos)
    steps = np.abs(np.diff(s))
    eps = MOVE_EPS_PX / scale
    moving = steps[steps > eps]
    v = float(np.median(moving)) if moving.size else 0.0
    out = []
    for k, _ in found:
        at = None
        if v > 0 and 2 <= k <= len(s) - 3 and steps[k - 2] > eps and steps[k + 1] > eps:
            towards_low = 2 * s[k] < s[k - 1] + s[k + 1]  # the wall lies at low s: distance grows with s
            d_before, d_after = (s[k - 1], s[k + 1]) if towards_low else (-s[k - 1], -s[k + 1])
            at = idx[k] + float(d_before - d_after) / (2 * v)
        out.append(Contact(position=k, frame=idx[k], at=at))
    return out


def _patch_view(
    frame: tuple[Any, ...], prev: np.ndarray | None, own: bool, scale: int
) -> tuple[np.ndarray, tuple[int, int, int, int], np.ndarray]:
    """Where a patch frame (index, time, patch, box) goes: the previous frame analysed (``prev``, copied unless it
    is already the caller's own copy, ``own``), the patch's box, and the view of that box in it, which the caller
    overwrites with the patch once it has read what was there."""
    if prev is None or scale != 1:
        raise ValueError("a patch needs a whole frame before it, analysed at its own size")
    x0, y0, x1, y1 = frame[3]
    if not own:
        prev = prev.copy()
    return prev, (x0, y0, x1, y1), prev[y0:y1, x0:x1]


def _ball_track(frames: Iterable[tuple[Any, ...]]) -> tuple[list[int], list[float], np.ndarray, int]:
    """(source frame indices, times, the ball's centroid per frame (NaN where not found), the analysis scale) of a
    bouncing ball's frames, supplied as ``detect_events`` takes them (patches included)."""
    idx: list[int] = []
    times: list[float] = []
    track: list[tuple[float, float]] = []
    ball: _Ball | None = None
    prev: np.ndarray | None = None
    moments = (0, 0, 0)  # the ball's in the previous frame analysed
    scale = 1
    last_rgb: np.ndarray | None = None
    own = False  # ``prev`` is this function's copy, which patches update in place
    for frame in frames:
        rgb: np.ndarray = frame[2]
        idx.append(int(frame[0]))
        times.append(float(frame[1]))
        if rgb is last_rgb and not rgb.flags.writeable:  # the same read-only array: same pixels, same centroid
            track.append(track[-1])
            continue
        last_rgb = rgb
        if len(frame) > 3:  # a patch of the previous frame
            prev, (x0, y0, _, _), before = _patch_view(frame, prev, own, scale)
            own = True
            c = None
            if ball is not None and ball.found:
                was, got = ball.moments(before, x0, y0), ball.moments(rgb, x0, y0)
                moments = (moments[0] - was[0] + got[0], moments[1] - was[1] + got[1], moments[2] - was[2] + got[2])
                c = _Ball.centroid(moments)
            track.append(c if c is not None else (np.nan, np.nan))
            before[...] = rgb
            continue
        img, scale = _small(rgb)
        if ball is None:
            ball = _Ball(img)
        c = None
        if ball.found:
            moments = ball.moments(img)
            c = _Ball.centroid(moments)
        track.append(c if c is not None else (np.nan, np.nan))
        prev, own = img, False
    return idx, times, np.array(track, dtype=np.float64).reshape(-1, 2), scale


def detect_events(domain: str, frames: Iterable[tuple[Any, ...]]) -> list[Detection]:
    """Events visible in ``frames``: (source frame index, time s, RGB array) in presentation order, or (index, time,
    patch, box) for a frame that is the one before it with ``box`` (x0, y0, x1, y1) replaced by ``patch`` (see
    the module docstring)."""
    if domain not in ("bounce_ball", "blinking", "state_machine"):
        raise ConfigError(f"the pixel detector knows no domain {domain!r}")
    if domain == "bounce_ball":
        idx, times, pos, scale = _ball_track(frames)
        return [
            Detection(position=k, frame=idx[k], t=times[k], label=lab)
            for k, lab in _reversals(pos, list(range(len(idx))), scale)
        ]
    idx = []
    times = []
    feats: list[float] = []
    first = prev = None
    n_pixels, scale = 1, 1
    last_rgb: np.ndarray | None = None
    own = False  # ``prev`` is this function's copy, which patches update in place
    for frame in frames:
        frame_index, t = frame[0], frame[1]
        rgb: np.ndarray = frame[2]
        idx.append(int(frame_index))
        times.append(float(t))
        if rgb is last_rgb and not rgb.flags.writeable:  # the same read-only array: same pixels, same feature
            feats.append(feats[-1] if domain == "blinking" else 0)  # a state: no pixel differs from the frame before
            continue
        last_rgb = rgb
        if len(frame) > 3:  # a patch of the previous frame
            prev, (x0, y0, x1, y1), before = _patch_view(frame, prev, own, scale)
            own = True
            if domain == "blinking":
                base = first[y0:y1, x0:x1]  # type: ignore[index]
                feats.append(feats[-1] - _changed(before, base) + _changed(rgb, base))
            else:
                feats.append(_changed(rgb, before))
            before[...] = rgb
            continue
        img, scale = _small(rgb)
        if first is None:
            first, n_pixels = img, img.shape[0] * img.shape[1]
        if domain == "blinking":
            feats.append(_changed(img, first))
        else:
            feats.append(0 if prev is None else _changed(img, prev))
        prev, own = img, False
    if not idx:
        return []
    min_changed = MIN_CHANGED_FRAC * n_pixels
    events: list[tuple[int, str | None]] = []
    if domain == "state_machine":
        events = [(k, None) for k, c in enumerate(feats) if c > min_changed]
    else:
        on = np.array(feats) > max(min_changed, 0.5 * max(feats))
        if on.mean() > 0.5:  # the first frame was ON: the majority state is OFF
            on = ~on
        events = [(k, "on") for k in range(len(on)) if k > 0 and on[k] and not on[k - 1]]
    return [Detection(position=k, frame=idx[k], t=times[k], label=lab) for k, lab in events]
