"""From tracks to the exact world record and the render log the pixel checks read.

Visibility is computed from geometry, frame by frame: ``offscreen`` (the shape's circumcircle is
outside the frame), ``hidden`` (inside a larger agent drawn on top of it, with a pixel to spare),
``partial`` (touching another thing or the frame edge) or ``full``. The visibility facts (``exits``,
``enters``, ``goes_behind``, ``emerges_from``) are read off its transitions, at the first frame
that shows the change; the other facts come from the episodes (a state toggle, a pass's release
and catch, a collision's first frame of contact). Every fact time is ``frame / fps``.

Observation intervals are closed: a run of visible frames from its first frame to the first frame
without the entity (the frame that shows the disappearance), or to the last frame of the video.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from vidaudit.suites.faithful.choreography import Episode, Tracks, _window_of
from vidaudit.suites.faithful.scene import BACKGROUND, BALL_RGB, HALO, HALO_GAP, HALO_WIDTH, Agent, SceneSpec, shape_gap
from vidaudit.suites.faithful.world import Entity, Fact, Gap, IdentityLink, Observation, WorldRecord

GENERATOR = "faithful/1"
BALL_ID = "ball"
Visibility = Literal["full", "partial", "hidden", "offscreen"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentLook(_Strict):
    rgb: tuple[int, int, int]
    shape: str
    size: str
    number: int
    radius: float
    text_rgb: tuple[int, int, int]


class AgentAt(_Strict):
    x: float
    y: float
    vis: Visibility
    lit: bool
    occluder: str | None = None


class FrameLog(_Strict):
    agents: dict[str, AgentAt]
    ball: tuple[float, float]
    holder: str | None


class RenderLog(_Strict):
    """What the simulator logged about the pixels: the look of each thing and where it is at check frames."""

    width: int
    height: int
    fps: float
    n_frames: int
    background: tuple[int, int, int]
    halo_rgb: tuple[int, int, int]
    halo_gap: float
    halo_width: int
    ball_rgb: tuple[int, int, int]
    ball_radius: float
    agents: dict[str, AgentLook]
    #: frame index (as a string key) -> positions at the frames the checks look at
    frames: dict[str, FrameLog]


@dataclass
class Simulation:
    spec: SceneSpec
    cast: list[Agent]
    tracks: Tracks
    vis: list[list[str]]  # [agent][frame]
    occluder: np.ndarray  # (n_agents, n_frames) index or -1
    world: WorldRecord
    log: RenderLog
    attempt: int


def z_order(cast: list[Agent]) -> list[int]:
    """Drawing order: small agents first, large ones on top (so a large agent can hide a small one)."""
    return sorted(range(len(cast)), key=lambda i: (cast[i].size == "large", i))


def visibility(spec: SceneSpec, cast: list[Agent], tracks: Tracks) -> tuple[list[list[str]], np.ndarray]:
    n, n_frames = len(cast), tracks.n_frames
    order = z_order(cast)
    rank = {i: k for k, i in enumerate(order)}
    halo = HALO_GAP + HALO_WIDTH
    vis = [["full"] * n_frames for _ in range(n)]
    occ = np.full((n, n_frames), -1, dtype=int)
    for f in range(n_frames):
        pos = tracks.pos[:, f]
        off = [
            (
                p[0] + a.radius < 0
                or p[0] - a.radius > spec.width
                or p[1] + a.radius < 0
                or p[1] - a.radius > spec.height
            )
            for p, a in zip(pos, cast, strict=True)
        ]
        for i, a in enumerate(cast):
            if off[i]:
                vis[i][f] = "offscreen"
                continue
            reach = a.footprint if tracks.lit[i, f] else a.radius  # a lit agent's ring must be hidden too
            hider = next(
                (
                    o
                    for o in order
                    if rank[o] > rank[i]
                    and not off[o]
                    and np.linalg.norm(pos[i] - pos[o]) + reach <= cast[o].inradius - 1.0
                ),
                None,
            )
            if hider is not None:
                vis[i][f], occ[i, f] = "hidden", hider
                continue
            p = pos[i]
            at_edge = not (a.radius <= p[0] <= spec.width - a.radius and a.radius <= p[1] <= spec.height - a.radius)
            near = any(
                not off[j] and np.linalg.norm(p - pos[j]) < a.radius + halo + cast[j].footprint
                for j in range(n)
                if j != i
            )
            near_ball = np.linalg.norm(p - tracks.ball[f]) < a.radius + halo + tracks.ball_radius
            vis[i][f] = "partial" if at_edge or near or near_ball else "full"
    return vis, occ


def _visible(v: str) -> bool:
    return v in ("full", "partial")


def _facts(spec: SceneSpec, cast: list[Agent], tracks: Tracks, vis: list[list[str]], occ: np.ndarray) -> list[dict]:
    """Raw facts as dicts (frame, subject, kind, predicate, object, value, episode)."""
    raw: list[dict] = []

    def add(
        frame: int, subject: str, kind: str, predicate: str, obj: str | None = None, value: str | None = None
    ) -> None:
        ep = _window_of(tracks.episodes, frame)
        raw.append(
            {
                "frame": frame,
                "subject": subject,
                "kind": kind,
                "predicate": predicate,
                "object": obj,
                "value": value,
                "episode": ep.id if ep else None,
            }
        )

    for i, a in enumerate(cast):
        for f in range(1, tracks.n_frames):
            before, now = vis[i][f - 1], vis[i][f]
            if _visible(before) and now == "hidden":
                add(f, a.id, "relation", "goes_behind", cast[int(occ[i, f])].id)
            elif before == "hidden" and _visible(now):
                add(f, a.id, "relation", "emerges_from", cast[int(occ[i, f - 1])].id)
            elif _visible(before) and now == "offscreen":
                add(f, a.id, "action", "exits")
            elif before == "offscreen" and _visible(now):
                add(f, a.id, "action", "enters")
            elif {before, now} == {"hidden", "offscreen"}:
                raise ValueError(f"{a.id} goes from {before} to {now} at frame {f}")
    for e in tracks.episodes:
        if e.kind == "state":
            add(e.marks["toggle"], cast[e.agents[0]].id, "attribute", "state", value=e.value)
        elif e.kind == "pass":
            h, r = e.agents
            add(e.marks["release"], cast[h].id, "relation", "passes_to", cast[r].id)
            add(e.marks["catch"], cast[r].id, "relation", "receives", BALL_ID)
        elif e.kind == "collide":
            add(
                _contact_frame(cast, tracks, e), cast[e.agents[0]].id, "relation", "collides_with", cast[e.agents[1]].id
            )
    return raw


def _contact_frame(cast: list[Agent], tracks: Tracks, e: Episode) -> int:
    """The first frame of the episode where the two shapes touch (separating-axis gap <= 0)."""
    a, b = e.agents
    for f in range(e.f0, e.f1):
        if shape_gap(cast[a], tracks.pos[a, f], cast[b], tracks.pos[b, f]) <= 0.0:
            return f
    raise ValueError(f"episode {e.id}: the shapes never touch")


def _runs(flags: list[bool]) -> list[tuple[int, int]]:
    """Maximal runs [start, stop) of True."""
    out, start = [], None
    for f, x in enumerate(flags + [False]):
        if x and start is None:
            start = f
        elif not x and start is not None:
            out.append((start, f))
            start = None
    return out


def build_world(
    spec: SceneSpec, cast: list[Agent], tracks: Tracks, vis: list[list[str]], occ: np.ndarray, attempt: int
) -> WorldRecord:
    fps, n_frames = spec.fps, tracks.n_frames
    raw = sorted(_facts(spec, cast, tracks, vis, occ), key=lambda r: (r["frame"], r["subject"], r["predicate"]))
    facts = [Fact(id=f"f{k + 1:02d}", t=r["frame"] / fps, **r) for k, r in enumerate(raw)]
    involved = {p for f in facts for p in f.participants}
    entities = [
        Entity(id=a.id, category="agent", attributes=a.attributes, name=a.name) for a in cast if a.id in involved
    ]
    observations: list[Observation] = []
    gaps: list[Gap] = []
    links: list[IdentityLink] = []
    for i, a in enumerate(cast):
        if a.id not in involved:
            continue
        runs = _runs([_visible(v) for v in vis[i]])
        spans = [(s / fps, (e if e < n_frames else n_frames - 1) / fps) for s, e in runs]
        observations += [Observation(entity=a.id, t_start=s, t_end=e) for s, e in spans]
        for k in range(len(runs) - 1):
            stop, nxt = runs[k][1], runs[k + 1][0]
            hidden = vis[i][stop] == "hidden"
            gid = f"g{len(gaps) + 1:02d}"
            gaps.append(
                Gap(
                    id=gid,
                    entity=a.id,
                    kind="occlusion" if hidden else "exit",
                    t_start=stop / fps,
                    t_end=nxt / fps,
                    cause=cast[int(occ[i, stop])].id if hidden else None,
                )
            )
            links.append(
                IdentityLink(entity=a.id, gap=gid, t_before=stop / fps, t_after=nxt / fps, evidence=list(a.evidence))
            )
    if BALL_ID in involved:
        entities.append(Entity(id=BALL_ID, category="item", attributes={"colour": "grey"}, name="the ball"))
        observations.append(Observation(entity=BALL_ID, t_start=0.0, t_end=(n_frames - 1) / fps))
    key = sorted({f.t for f in facts} | {g.t_start for g in gaps} | {g.t_end for g in gaps if g.t_end is not None})
    return WorldRecord(
        video_id=spec.video_id,
        source_video_id=spec.video_id,
        duration_s=n_frames / fps,
        fps=fps,
        domain="synthetic",
        entities=entities,
        facts=facts,
        key_timestamps=key,
        observations=observations,
        gaps=gaps,
        identity_links=links,
        provenance={
            "generator": GENERATOR,
            "seed": spec.seed,
            "attempt": attempt,
            "knobs": spec.knobs(),
            "unregistered_agents": [a.id for a in cast if a.id not in involved],
            "episodes": [
                {
                    "id": e.id,
                    "kind": e.kind,
                    "t_start": e.f0 / fps,
                    "t_end": e.f1 / fps,
                    "agents": [cast[i].id for i in e.agents],
                }
                for e in tracks.episodes
            ],
        },
    )


def check_frames(world: WorldRecord, n_frames: int) -> list[int]:
    """The frames the pixel checks look at: each fact's frame and the one before it, and both ends."""
    frames = {0, n_frames - 1}
    for f in world.facts:
        if f.frame is not None:
            frames.update({f.frame, max(0, f.frame - 1)})
    return sorted(frames)


def render_log(
    spec: SceneSpec, cast: list[Agent], tracks: Tracks, vis: list[list[str]], occ: np.ndarray, frames: list[int]
) -> RenderLog:
    looks = {
        a.id: AgentLook(rgb=a.rgb, shape=a.shape, size=a.size, number=a.number, radius=a.radius, text_rgb=a.text_rgb)
        for a in cast
    }
    logged = {}
    for f in frames:
        agents = {
            a.id: AgentAt(
                x=float(tracks.pos[i, f, 0]),
                y=float(tracks.pos[i, f, 1]),
                vis=vis[i][f],
                lit=bool(tracks.lit[i, f]),
                occluder=cast[int(occ[i, f])].id if occ[i, f] >= 0 else None,
            )
            for i, a in enumerate(cast)
        }
        h = int(tracks.holder[f])
        logged[str(f)] = FrameLog(
            agents=agents,
            ball=(float(tracks.ball[f, 0]), float(tracks.ball[f, 1])),
            holder=cast[h].id if h >= 0 else None,
        )
    return RenderLog(
        width=spec.width,
        height=spec.height,
        fps=spec.fps,
        n_frames=tracks.n_frames,
        background=BACKGROUND,
        halo_rgb=HALO,
        halo_gap=HALO_GAP,
        halo_width=HALO_WIDTH,
        ball_rgb=BALL_RGB,
        ball_radius=tracks.ball_radius,
        agents=looks,
        frames=logged,
    )
