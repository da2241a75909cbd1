"""The offline extractor: colour/shape detection and tracking per chunk on the decoded frames, reporting
the same JSON as a VLM extractor (``schema``).

A ``ModelAdapter`` (so its calls are stored and cached by content like any stage): it reads only the
request's frames and their times, and the chunk bounds in the request's metadata; never a record.
Per chunk:

1. ``detect`` every frame (blobs of the scenes' palette, the ball);
2. track: detections join the chunk's objects of their colour by a one-to-one assignment (Hungarian
   on distance) -- a visible object within 4 small radii, a hidden one anywhere -- unless a known
   attribute conflicts (shape, size or a read number); an object keeps its id while hidden, as a VLM
   is asked to;
3. attributes: the majority of the object's complete sightings (number: of its trusted reads);
4. states, at the first frame that shows them: ``state`` lit/dark when first seen and at every change
   (held for two sightings); ``exits`` / ``enters`` when it vanishes / appears at the frame edge;
   ``goes_behind`` / ``emerges_from`` a large object when it vanishes / appears over one; ``passes_to``
   (when the ball leaves its holder for another) and ``receives`` (the ball, at the catch);
   ``collides_with`` when two blobs touch and both stay visible (the one that moved is the subject).
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidaudit.sdk import Capabilities, ErrorKind, ImagePart, ModelCallError, ModelSpec, Request, Response
from vidaudit.suites.faithful.framework.detect import Blob, FrameDetections, detect, small_radius
from vidaudit.suites.faithful.scene import HALO_GAP, HALO_WIDTH

EDGE_MARGIN = 2.0  # px beyond an object's radius that still counts as "at the edge"
TRACK_RADII = 4.0  # a visible object moves at most this many small radii between sightings


@dataclass
class _Obj:
    oid: str
    colour: str
    seen: list[tuple[int, Blob]] = field(default_factory=list)  # (frame position, blob)

    def votes(self, attr: str) -> Counter:
        vals = [getattr(b, attr) for _, b in self.seen if (b.complete or attr == "number")]
        return Counter(v for v in vals if v is not None)

    def known(self, attr: str):
        c = self.votes(attr)
        return c.most_common(1)[0][0] if c else None

    @property
    def last(self) -> tuple[int, Blob]:
        return self.seen[-1]


def _conflicts(o: _Obj, b: Blob, continuing: bool) -> bool:
    """A read number that differs always separates; shape and size (noisier on a moving blob) only
    when re-identifying an object after it was hidden."""
    if b.complete and not continuing:
        for attr in ("shape", "size"):
            k = o.known(attr)
            if k is not None and getattr(b, attr) is not None and getattr(b, attr) != k:
                return True
    k = o.known("number")
    return k is not None and b.number is not None and b.number != k


def _track(frames: list[FrameDetections], r_small: float) -> list[_Obj]:
    from scipy.optimize import linear_sum_assignment  # here: ~0.3 s of CPU to import

    objs: list[_Obj] = []
    for fi, fd in enumerate(frames):
        by_colour: dict[str, list[Blob]] = {}
        for b in fd.blobs:
            by_colour.setdefault(b.colour, []).append(b)
        for colour, blobs in by_colour.items():
            cands = [o for o in objs if o.colour == colour]
            big = 1e6
            cost = np.full((len(blobs), max(1, len(cands))), big)
            for i, b in enumerate(blobs):
                for j, o in enumerate(cands):
                    lf, lb = o.last
                    d = math.hypot(b.x - lb.x, b.y - lb.y)
                    if _conflicts(o, b, lf == fi - 1):
                        continue
                    if lf == fi - 1:
                        if d <= TRACK_RADII * r_small:
                            cost[i, j] = d
                    elif lf < fi:
                        cost[i, j] = 1000.0 + d  # hidden objects after every visible one
            rows, cols = linear_sum_assignment(cost) if cands else ([], [])
            taken = set()
            for i, j in zip(rows, cols, strict=True):
                if cost[i, j] < big:
                    cands[j].seen.append((fi, blobs[i]))
                    taken.add(i)
            for i, b in enumerate(blobs):
                if i not in taken:
                    objs.append(_Obj(oid=f"o{len(objs) + 1}", colour=colour, seen=[(fi, b)]))
    return objs


def _near_edge(b: Blob, w: int, h: int) -> bool:
    m = b.radius + EDGE_MARGIN
    return b.x < m or b.y < m or b.x > w - m or b.y > h - m


def _over_large(b: Blob, objs: list[_Obj], fi: int, me: _Obj) -> _Obj | None:
    """The large visible object whose disk contains the blob's position at frame ``fi`` (the nearest)."""
    best, best_d = None, math.inf
    for o in objs:
        if o is me or o.known("size") != "large":
            continue
        for f, ob in o.seen:
            if f == fi:
                d = math.hypot(ob.x - b.x, ob.y - b.y)
                if d < ob.radius + b.radius and d < best_d:
                    best, best_d = o, d
    return best


def _visible_at(o: _Obj) -> dict[int, Blob]:
    return dict(o.seen)


def _lit_states(o: _Obj, times: list[float]) -> list[dict]:
    seq = [(f, b.lit) for f, b in o.seen if b.lit is not None]
    if not seq:
        return []
    out = [
        {
            "t": times[seq[0][0]],
            "kind": "attribute",
            "predicate": "state",
            "value": "lit" if seq[0][1] else "dark",
            "object": None,
        }
    ]
    cur = seq[0][1]
    for k in range(1, len(seq)):
        f, v = seq[k]
        held = k + 1 >= len(seq) or seq[k + 1][1] == v
        if v != cur and held:
            cur = v
            out.append(
                {
                    "t": times[f],
                    "kind": "attribute",
                    "predicate": "state",
                    "value": "lit" if v else "dark",
                    "object": None,
                }
            )
    return out


def _ball_states(
    frames: list[FrameDetections], objs: list[_Obj], times: list[float], r_ball: float, ball_id: str
) -> dict[str, list[dict]]:
    """passes_to / receives from the sequence of ball holders (None while it flies)."""
    holders = _ball_holders(frames, objs, r_ball)
    _drop_brief_holds(holders)
    return _handovers(holders, objs, times, ball_id)


def _ball_holders(frames: list[FrameDetections], objs: list[_Obj], r_ball: float) -> list[tuple[int, int | None]]:
    """(frame, the object within reach of the ball and nearest it, or None) for every frame that shows the ball."""
    vis = [_visible_at(o) for o in objs]
    holders: list[tuple[int, int | None]] = []
    for fi, fd in enumerate(frames):
        if fd.ball is None:
            continue
        bx, by = fd.ball
        best, best_d = None, math.inf
        for k in range(len(objs)):
            b = vis[k].get(fi)
            if b is None:
                continue
            reach = b.radius + HALO_GAP + HALO_WIDTH + 2 * r_ball + 3.0
            d = math.hypot(b.x - bx, b.y - by)
            if d <= reach and d < best_d:
                best, best_d = k, d
        holders.append((fi, best))
    return holders


def _drop_brief_holds(holders: list[tuple[int, int | None]]) -> None:
    """A hold is the ball beside an agent for at least three sightings in a row (a flight passes others by): a
    shorter run, unless at either end of the sightings, becomes flight (None), in place."""
    runs: list[list[int]] = []
    for k, (_, h) in enumerate(holders):
        if runs and holders[runs[-1][-1]][1] == h:
            runs[-1].append(k)
        else:
            runs.append([k])
    for run in runs:
        if len(run) < 3 and run[0] != 0 and run[-1] != len(holders) - 1:
            for k in run:
                holders[k] = (holders[k][0], None)


def _handovers(
    holders: list[tuple[int, int | None]], objs: list[_Obj], times: list[float], ball_id: str
) -> dict[str, list[dict]]:
    """passes_to at the release (the first flight sighting after a hold) and receives at the catch, each time
    the holder changes."""
    out: dict[str, list[dict]] = {}
    prev_holder, released_at = None, None
    for fi, h in holders:
        if h is None:
            if prev_holder is not None and released_at is None:
                released_at = fi
            continue
        if prev_holder is not None and h != prev_holder:
            t_rel = times[released_at if released_at is not None else fi]
            out.setdefault(objs[prev_holder].oid, []).append(
                {"t": t_rel, "kind": "relation", "predicate": "passes_to", "value": None, "object": objs[h].oid}
            )
            out.setdefault(objs[h].oid, []).append(
                {"t": times[fi], "kind": "relation", "predicate": "receives", "value": None, "object": ball_id}
            )
        if h is not None:
            prev_holder, released_at = h, None
    return out


def _collisions(objs: list[_Obj], times: list[float], n: int) -> dict[str, list[dict]]:
    vis = [_visible_at(o) for o in objs]
    out: dict[str, list[dict]] = {}
    in_contact: set[tuple[int, int]] = set()
    for fi in range(n):
        now: set[tuple[int, int]] = set()
        for i in range(len(objs)):
            for j in range(i + 1, len(objs)):
                a, b = vis[i].get(fi), vis[j].get(fi)
                if a is None or b is None or a.complete or b.complete:
                    continue
                if math.hypot(a.x - b.x, a.y - b.y) < a.radius + b.radius + 2.0:
                    now.add((i, j))
        for i, j in now - in_contact:
            # an occlusion begins and ends the same way: a collision is a touch with both visible around it
            around = range(max(0, fi - 5), min(n, fi + 6))
            if not all(f in vis[i] and f in vis[j] for f in around):
                continue

            def moved(k: int, fi: int = fi) -> float:
                pts = [(f, b) for f, b in objs[k].seen if fi - 6 <= f <= fi]
                return math.hypot(pts[-1][1].x - pts[0][1].x, pts[-1][1].y - pts[0][1].y) if pts else 0.0

            s, o = (i, j) if moved(i) >= moved(j) else (j, i)
            out.setdefault(objs[s].oid, []).append(
                {"t": times[fi], "kind": "relation", "predicate": "collides_with", "value": None, "object": objs[o].oid}
            )
        in_contact = now
    return out


def _appearance(b: Blob, objs: list[_Obj], fi: int, o: _Obj, t: float, w: int, h: int) -> dict | None:
    """How ``o``, out of view before frame ``fi``, comes into view there: ``enters`` at the frame edge, or
    ``emerges_from`` a large object it is over (None: neither)."""
    over = _over_large(b, objs, fi, o)
    if _near_edge(b, w, h):
        return {"t": t, "kind": "action", "predicate": "enters", "value": None, "object": None}
    if over is not None:
        return {"t": t, "kind": "relation", "predicate": "emerges_from", "value": None, "object": over.oid}
    return None


def _disappearance(b: Blob, objs: list[_Obj], fi: int, o: _Obj, t: float, w: int, h: int) -> dict | None:
    """How ``o``, last seen as ``b`` at frame ``fi``, leaves view at time ``t``: ``exits`` at the frame edge, or
    ``goes_behind`` a large object it is over (None: neither)."""
    if _near_edge(b, w, h):
        return {"t": t, "kind": "action", "predicate": "exits", "value": None, "object": None}
    over = _over_large(b, objs, fi, o)
    if over is not None:
        return {"t": t, "kind": "relation", "predicate": "goes_behind", "value": None, "object": over.oid}
    return None


def _visibility_states(o: _Obj, objs: list[_Obj], times: list[float], w: int, h: int, n: int) -> list[dict]:
    """The states the gaps in ``o``'s sightings make: how it first comes into view (when not at the chunk's
    start), and at every gap how it leaves view and how it comes back."""
    out: list[dict] = []
    first_f, first_b = o.seen[0]
    if first_f > 0:
        came = _appearance(first_b, objs, first_f, o, times[first_f], w, h)
        if came is not None:
            out.append(came)
    fs = [f for f, _ in o.seen]
    for k in range(len(fs)):
        f = fs[k]
        nxt = fs[k + 1] if k + 1 < len(fs) else None
        if nxt == f + 1 or (nxt is None and f == n - 1):
            continue
        went = _disappearance(dict(o.seen)[f], objs, f, o, times[f + 1], w, h)
        if went is not None:
            out.append(went)
        if nxt is not None:
            back = _appearance(dict(o.seen)[nxt], objs, nxt, o, times[nxt], w, h)
            if back is not None:
                out.append(back)
    return out


def _object_json(o: _Obj, times: list[float], w: int, h: int) -> dict[str, Any]:
    """An agent in the schema's JSON (its states filled in later): majority attributes, first and last sighting."""
    f0, b0 = o.seen[0]
    f1, b1 = o.seen[-1]
    return {
        "id": o.oid,
        "category": "agent",
        "attributes": {
            "colour": o.colour,
            "shape": o.known("shape"),
            "size": o.known("size"),
            "number": o.known("number"),
        },
        "first_seen": times[f0],
        "last_seen": times[f1],
        "position": {
            "first": [round(b0.x / w, 3), round(b0.y / h, 3)],
            "last": [round(b1.x / w, 3), round(b1.y / h, 3)],
        },
        "states": [],
    }


def _ball_json(
    ball_id: str, ball_frames: list[tuple[int, tuple[float, float]]], times: list[float], w: int, h: int
) -> dict[str, Any]:
    """The ball in the schema's JSON: an item with no states of its own (passes and catches are its holders')."""
    (f0, p0), (f1, p1) = ball_frames[0], ball_frames[-1]
    return {
        "id": ball_id,
        "category": "item",
        "attributes": {"colour": "grey", "shape": None, "size": None, "number": None},
        "first_seen": times[f0],
        "last_seen": times[f1],
        "position": {
            "first": [round(p0[0] / w, 3), round(p0[1] / h, 3)],
            "last": [round(p1[0] / w, 3), round(p1[1] / h, 3)],
        },
        "states": [],
    }


def extract_chunk(images: list[np.ndarray], times: list[float]) -> dict:
    """The chunk's objects and states (the schema's JSON object) from its frames, in time order."""
    if not images:
        return {"objects": []}
    frames = [detect(img, t) for img, t in zip(images, times, strict=True)]
    h, w = images[0].shape[:2]
    r_small = small_radius(w, h)
    objs = _track(frames, r_small)
    # drop flickers: an object seen once, incomplete, is compression noise or a sliver at an edge
    objs = [o for o in objs if len(o.seen) > 1 or o.seen[0][1].complete]
    n = len(frames)
    states: dict[str, list[dict]] = {o.oid: _lit_states(o, times) for o in objs}
    for o in objs:
        states[o.oid].extend(_visibility_states(o, objs, times, w, h, n))
    for oid, ss in _collisions(objs, times, n).items():
        states[oid].extend(ss)
    out_objs = [_object_json(o, times, w, h) for o in objs]
    ball_frames = [(fi, fd.ball) for fi, fd in enumerate(frames) if fd.ball is not None]
    ball_id = f"o{len(objs) + 1}"
    for oid, ss in _ball_states(frames, objs, times, max(2.5, 0.35 * r_small), ball_id).items():
        states[oid].extend(ss)
    for d in out_objs:
        d["states"] = sorted(states[d["id"]], key=lambda s: (s["t"], s["predicate"]))
    if ball_frames:
        out_objs.append(_ball_json(ball_id, ball_frames, times, w, h))
    return {"objects": out_objs}


class OfflineExtractor:
    """E with no VLM: ``extract_chunk`` on the request's images; answers the schema's JSON."""

    capabilities = Capabilities(native_video=False, images=True, concurrency=2, local=True, synthetic=True)
    role = "model"

    def __init__(self, spec: ModelSpec | None = None, **_: object) -> None:
        self.spec = spec or ModelSpec(provider="object-centric", name="offline-extractor")

    async def aclose(self) -> None:
        return None

    async def generate(self, request: Request) -> Response:
        return await asyncio.to_thread(self._extract, request)

    def _extract(self, request: Request) -> Response:
        t0 = time.perf_counter()
        imgs = [(p.t, p.image) for p in request.parts if isinstance(p, ImagePart)]
        if not imgs:
            raise ModelCallError(ErrorKind.BAD_REQUEST, "offline extractor: the request has no frames")
        out = extract_chunk([i for _, i in imgs], [t for t, _ in imgs])
        seen = tuple(p.frame_index for p in request.parts if isinstance(p, ImagePart))
        return Response.computed(json.dumps(out, sort_keys=True), t0, "offline-extractor-1", frames_sent=seen)
