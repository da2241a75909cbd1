"""Scripted episodes and the per-frame tracks they produce: where every agent and the ball are.

A scene is a sequence of non-overlapping episodes, each involving one or two agents:

- ``state``: an agent lights up (a ring appears) or goes dark;
- ``pass``: the ball holder throws the ball to another agent (a straight flight);
- ``collide``: one agent walks up to another (9 px short), steps into contact, then walks back;
- ``occlusion``: a small agent walks behind a large one, stays hidden, comes out and walks back;
- ``exit``: an agent walks out of the frame, stays out, re-enters at the same place, walks back;
- ``enter``: an agent that started outside the frame walks in to its place.

Between episodes every agent stands at its home position. After the tracks are laid out, every
frame is checked: no two things overlap unless the episode running then makes them (a collision,
an occlusion, the ball in its holder's hand), and nothing leaves the frame outside an exit or an
entry. A draw that breaks a check is discarded and redrawn from the next attempt's seed, so every
overlap and every disappearance on screen is one the world record logs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from vidaudit.suites.faithful.scene import HALO_GAP, HALO_WIDTH, Agent, SceneSpec, shape_gap

EPISODE_KINDS = ("state", "pass", "collide", "occlusion", "exit", "enter")
#: how often each kind is drawn for the events that are not occlusions
KIND_WEIGHTS = {"state": 3.0, "pass": 2.0, "collide": 2.0, "exit": 1.5, "enter": 0.6}
BALL = -1  # the ball's index in overlap pairs
LEAD_S, TAIL_S, MIN_GAP_S = 0.3, 1.1, 0.3
HIDE_S, OFFSCREEN_S, STATE_S = 0.6, 0.8, 0.6
CLEARANCE = 2.0  # pixels between things that must not touch
#: a collision's last frame before contact leaves this gap; the contact frame overlaps by CONTACT_OVERLAP
PRE_CONTACT_GAP, CONTACT_OVERLAP = 9.0, 2.0


class DrawFailed(Exception):
    """This draw breaks a constraint; the caller redraws with the next attempt's seed."""


@dataclass(frozen=True)
class Episode:
    id: str
    kind: str
    f0: int
    f1: int  # exclusive
    agents: tuple[int, ...]
    #: named frames: toggle (state), release and catch (pass), contact (collide)
    marks: dict[str, int] = field(default_factory=dict)
    value: str | None = None  # state: "lit" or "dark"
    #: pairs of things allowed to overlap inside the window (agent indices, BALL for the ball)
    allowed: tuple[tuple[int, int], ...] = ()


@dataclass
class Tracks:
    """Everything on screen, frame by frame."""

    pos: np.ndarray  # (n_agents, n_frames, 2) centre in pixels
    lit: np.ndarray  # (n_agents, n_frames) bool
    ball: np.ndarray  # (n_frames, 2)
    holder: np.ndarray  # (n_frames,) agent index, -1 while the ball flies
    episodes: list[Episode]
    ball_radius: float
    homes: np.ndarray  # (n_agents, 2)

    @property
    def n_frames(self) -> int:
        return self.pos.shape[1]


def ball_radius(spec: SceneSpec) -> float:
    return max(2.5, 0.35 * spec.small_radius)


def attach_offset(agent: Agent, r_ball: float) -> np.ndarray:
    """Where the held ball sits relative to its holder: upper right, clear of the ring."""
    d = agent.footprint + r_ball + 1.0
    return np.array([d, -d]) / math.sqrt(2.0)


def _speed(spec: SceneSpec) -> float:
    return 0.7 * min(spec.width, spec.height) / spec.fps  # pixels per frame


def _steps(distance: float, per_frame: float) -> int:
    return max(3, int(math.ceil(distance / per_frame)))


def _lerp(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """n + 1 points from a to b inclusive."""
    k = np.arange(n + 1)[:, None] / n
    return a[None, :] + (b - a)[None, :] * k


def _homes(spec: SceneSpec, cast: list[Agent], r_ball: float, rng: np.random.Generator) -> np.ndarray:
    ext = [a.footprint + 2 * r_ball + 1.0 for a in cast]
    out: list[np.ndarray] = []
    for i in range(len(cast)):
        for _ in range(400):
            p = np.array(
                [rng.uniform(ext[i] + 1, spec.width - ext[i] - 1), rng.uniform(ext[i] + 1, spec.height - ext[i] - 1)]
            )
            if all(
                np.linalg.norm(p - q) >= cast[i].footprint + cast[j].footprint + 2 * r_ball + 3
                for j, q in enumerate(out)
            ):
                out.append(p)
                break
        else:
            raise DrawFailed("no room for the agents' home positions")
    return np.array(out)


def _edge(spec: SceneSpec, home: np.ndarray, agent: Agent) -> tuple[np.ndarray, np.ndarray]:
    """(E, O): the centre on the nearest frame edge (half visible) and just outside it (hidden)."""
    x, y = home
    dists = {"left": x, "right": spec.width - x, "top": y, "bottom": spec.height - y}
    side = min(dists, key=lambda k: dists[k])
    normal = {"left": (-1, 0), "right": (1, 0), "top": (0, -1), "bottom": (0, 1)}[side]
    edge = {"left": (0.0, y), "right": (float(spec.width), y), "top": (x, 0.0), "bottom": (x, float(spec.height))}[side]
    e = np.array(edge, dtype=float)
    return e, e + np.array(normal, dtype=float) * (agent.radius + 3.0)


def contact_distance(a: Agent, pa: np.ndarray, b: Agent, pb: np.ndarray, overlap: float = 1.0) -> float:
    """The centre distance, with ``a`` moving straight at ``b``, at which the shapes overlap by ``overlap`` px."""
    u = (pb - pa) / np.linalg.norm(pb - pa)
    lo, hi = 0.0, float(np.linalg.norm(pb - pa))  # distances from b: lo overlaps, hi (start) is apart
    for _ in range(40):
        mid = (lo + hi) / 2
        if shape_gap(a, pb - u * mid, b, pb) > -overlap:
            hi = mid
        else:
            lo = mid
    return lo


def _kinds(spec: SceneSpec, rng: np.random.Generator) -> list[str]:
    others = list(KIND_WEIGHTS)
    w = np.array([KIND_WEIGHTS[k] for k in others])
    draws = [others[int(i)] for i in rng.choice(len(others), size=spec.events - spec.occlusions, p=w / w.sum())]
    n_enter_max = max(0, (spec.agents - 2) // 2)
    while draws.count("enter") > n_enter_max:
        draws[draws.index("enter")] = "state"
    kinds = draws + ["occlusion"] * spec.occlusions
    return [kinds[int(i)] for i in rng.permutation(len(kinds))]


#: one episode's plan from step 1 of a layout: its kind, the agents in it, and the sizes step 3 needs
_Plan = tuple[str, tuple[int, ...], dict]


@dataclass
class _Planner:
    """Step 1 of a layout: who takes part in each episode and how long it lasts.

    Holds what carries from one episode to the next (who is on screen, who is lit, who holds the ball, the
    repeats still owed). Each ``_plan_<kind>`` makes the rng draws the single loop always made, in the same
    order, so a seed keeps its world.
    """

    spec: SceneSpec
    cast: list[Agent]
    rng: np.random.Generator
    homes: np.ndarray
    r_ball: float
    speed: float
    late: list[int]
    on_screen: set[int]
    holder: int
    repeats: int
    lit: list[bool]
    entered: set[int] = field(default_factory=set)
    relit: set[int] = field(default_factory=set)  # agents that lit up and went dark again: can be lit twice
    exited: list[int] = field(default_factory=list)  # agents that left and came back: can leave again

    def plan(self, kind: str) -> _Plan:
        pool = sorted(self.on_screen)
        if kind == "state":
            return self._plan_state(pool)
        if kind == "pass":
            return self._plan_pass(pool)
        if kind == "collide":
            return self._plan_collide(pool)
        if kind == "occlusion":
            return self._plan_occlusion(pool)
        if kind == "exit":
            return self._plan_exit(pool)
        if kind == "enter":
            return self._plan_enter()
        raise ValueError(kind)  # pragma: no cover

    def _plan_state(self, pool: list[int]) -> _Plan:
        """An agent lights up or goes dark; spends a repeat (or prepares one) while any are owed."""
        rng, lit = self.rng, self.lit
        dark = [i for i in pool if not lit[i]]
        again = sorted(i for i in self.relit if i in pool and not lit[i])
        lit_now = [i for i in pool if lit[i]]
        if self.repeats and again:  # light an agent up a second time
            a = int(rng.choice(again))
            self.repeats -= 1
            self.relit.discard(a)
        elif self.repeats and lit_now and not self.relit:  # prepare a repeat: a lit agent goes dark
            a = int(rng.choice(lit_now))
            self.relit.add(a)
        else:
            a = int(rng.choice(dark if dark and rng.random() < 0.8 else pool))
        plan: _Plan = (
            "state",
            (a,),
            {"value": "dark" if lit[a] else "lit", "length": max(3, round(STATE_S * self.spec.fps))},
        )
        lit[a] = not lit[a]
        return plan

    def _plan_pass(self, pool: list[int]) -> _Plan:
        """The holder throws the ball to another agent; the flight is long enough to be seen at ball speed."""
        cast, homes, r_ball, holder = self.cast, self.homes, self.r_ball, self.holder
        receivers = [i for i in pool if i != holder]
        if not receivers:
            raise DrawFailed("no receiver for a pass")
        r = int(self.rng.choice(receivers))
        dist = float(
            np.linalg.norm(
                (homes[r] + attach_offset(cast[r], r_ball)) - (homes[holder] + attach_offset(cast[holder], r_ball))
            )
        )
        n_fl = _steps(dist, 1.4 * self.speed)
        self.holder = r
        return ("pass", (holder, r), {"flight": n_fl, "length": n_fl + 5})

    def _plan_collide(self, pool: list[int]) -> _Plan:
        """One agent walks up to another, short of contact, then one step into it."""
        cast, homes = self.cast, self.homes
        a, b = (int(x) for x in self.rng.choice(pool, size=2, replace=False))
        contact = contact_distance(cast[a], homes[a], cast[b], homes[b], overlap=CONTACT_OVERLAP)
        near = contact_distance(cast[a], homes[a], cast[b], homes[b], overlap=-PRE_CONTACT_GAP)
        n_ap = _steps(float(np.linalg.norm(homes[b] - homes[a])) - near, self.speed)
        return ("collide", (a, b), {"contact": contact, "near": near, "approach": n_ap, "length": 2 * n_ap + 3})

    def _plan_occlusion(self, pool: list[int]) -> _Plan:
        """A small, unlit agent (not the holder) hides behind a large one of another colour."""
        cast, homes, holder, lit = self.cast, self.homes, self.holder, self.lit
        pairs = [
            (a, b)
            for a in pool
            for b in pool
            if cast[a].size == "small"
            and cast[b].size == "large"
            and cast[a].colour != cast[b].colour
            and a != holder
            and not lit[a]
        ]
        if not pairs:
            raise DrawFailed("no small, unlit agent can hide behind a large one")
        a, b = pairs[int(self.rng.integers(len(pairs)))]
        v = (homes[a] - homes[b]) / np.linalg.norm(homes[a] - homes[b])
        p_vis = homes[b] + v * (cast[b].radius - 0.5 * cast[a].radius + 3.0)
        n_ap = _steps(float(np.linalg.norm(homes[a] - p_vis)), self.speed)
        n_hide = max(2, round(HIDE_S * self.spec.fps))
        return (
            "occlusion",
            (a, b),
            {"p_vis": p_vis, "approach": n_ap, "hide": n_hide, "length": 2 * n_ap + n_hide + 3},
        )

    def _plan_exit(self, pool: list[int]) -> _Plan:
        """An agent other than the holder leaves by its nearest edge (the same one again while repeats are owed)."""
        movers = [i for i in pool if i != self.holder]
        if not movers:
            raise DrawFailed("nobody can leave")
        again = [i for i in self.exited if i in movers]
        if self.repeats and again:  # the same agent leaves a second time
            a = int(self.rng.choice(again))
            self.repeats -= 1
        else:
            a = int(self.rng.choice(movers))
        self.exited.append(a)
        e, o = _edge(self.spec, self.homes[a], self.cast[a])
        n_w = _steps(float(np.linalg.norm(self.homes[a] - e)), self.speed)
        n_off = max(2, round(OFFSCREEN_S * self.spec.fps))
        return ("exit", (a,), {"e": e, "o": o, "walk": n_w, "off": n_off, "length": 2 * n_w + n_off + 2})

    def _plan_enter(self) -> _Plan:
        """The next late agent walks in from its nearest edge (no draw: the late ones were drawn up front)."""
        a = next(i for i in self.late if i not in self.entered)
        self.entered.add(a)
        self.on_screen.add(a)
        e, o = _edge(self.spec, self.homes[a], self.cast[a])
        n_w = _steps(float(np.linalg.norm(self.homes[a] - e)), self.speed)
        return ("enter", (a,), {"e": e, "o": o, "walk": n_w, "length": n_w + 2})


def _schedule(spec: SceneSpec, plans: list[_Plan], rng: np.random.Generator) -> tuple[int, int, np.ndarray]:
    """Step 2 of a layout: (lead, gap, extra), the first frame, the least gap between episodes and the random
    slack before each one; raises DrawFailed, with the fix, when the episodes do not fit the duration."""
    n_frames, fps = spec.n_frames, spec.fps
    lead, tail, gap = round(LEAD_S * fps), round(TAIL_S * fps), max(2, round(MIN_GAP_S * fps))
    busy = sum(p[2]["length"] for p in plans) + gap * (len(plans) - 1)
    slack = n_frames - lead - tail - busy
    if slack < 0:
        raise DrawFailed(
            f"{spec.events} events need about {(busy + lead + tail) / fps:.1f} s at this size; "
            f"raise --duration above {spec.duration_s:g} s or lower --events"
        )
    cuts = np.sort(rng.integers(0, slack + 1, size=len(plans)))
    return lead, gap, np.diff(np.concatenate([[0], cuts]))


@dataclass
class _Painter:
    """Step 3 of a layout: writes each planned episode into the frame-by-frame arrays (agents' positions, lit
    rings, the ball's holder) and returns the Episode the world record logs."""

    homes: np.ndarray
    pos: np.ndarray
    lit: np.ndarray
    hold: np.ndarray

    def paint(self, eid: str, plan: _Plan, f0: int) -> Episode:
        kind, who, info = plan
        f1 = f0 + info["length"]
        if kind == "state":
            return self._state(eid, who, info, f0, f1)
        if kind == "pass":
            return self._pass(eid, who, info, f0, f1)
        if kind == "collide":
            return self._collide(eid, who, info, f0, f1)
        if kind == "occlusion":
            return self._occlusion(eid, who, info, f0, f1)
        if kind == "exit":
            return self._exit(eid, who, info, f0, f1)
        if kind == "enter":
            return self._enter(eid, who, info, f0, f1)
        raise ValueError(kind)  # pragma: no cover

    def _state(self, eid: str, who: tuple[int, ...], info: dict, f0: int, f1: int) -> Episode:
        """The ring toggles halfway through the window and stays so."""
        t = f0 + info["length"] // 2
        self.lit[who[0], t:] = info["value"] == "lit"
        return Episode(eid, "state", f0, f1, who, {"toggle": t}, info["value"])

    def _pass(self, eid: str, who: tuple[int, ...], info: dict, f0: int, f1: int) -> Episode:
        """Nobody holds the ball from its release until the catch; the receiver holds it from then on."""
        h, r = who
        fr = f0 + 2
        fc = fr + info["flight"] - 1
        self.hold[fr:fc] = -1
        self.hold[fc:] = r
        return Episode(eid, "pass", f0, f1, who, {"release": fr, "catch": fc}, allowed=((BALL, h), (BALL, r)))

    def _collide(self, eid: str, who: tuple[int, ...], info: dict, f0: int, f1: int) -> Episode:
        a, b = who
        homes = self.homes
        n_ap = info["approach"]
        u = (homes[b] - homes[a]) / np.linalg.norm(homes[b] - homes[a])
        go = _lerp(homes[a], homes[b] - u * info["near"], n_ap)  # to PRE_CONTACT_GAP px short of contact
        touch = (homes[b] - u * info["contact"])[None, :]  # then one step into contact
        path = np.concatenate([go, touch, go[::-1]])  # and back home
        self.pos[a, f0 : f0 + len(path)] = path
        return Episode(eid, "collide", f0, f1, who, {"contact": f0 + n_ap + 1}, allowed=((a, b),))

    def _occlusion(self, eid: str, who: tuple[int, ...], info: dict, f0: int, f1: int) -> Episode:
        """Walk to where the small agent is still seen, stand hidden at the large one's centre, walk back."""
        a, b = who
        n_ap, n_hide = info["approach"], info["hide"]
        go = _lerp(self.homes[a], info["p_vis"], n_ap)
        hidden = np.repeat(self.homes[b][None, :], n_hide, axis=0)
        path = np.concatenate([go, hidden, go[::-1]])
        self.pos[a, f0 : f0 + len(path)] = path
        return Episode(eid, "occlusion", f0, f1, who, allowed=((a, b),))

    def _exit(self, eid: str, who: tuple[int, ...], info: dict, f0: int, f1: int) -> Episode:
        """Walk to the edge, wait just outside it, walk back the same way."""
        a = who[0]
        go = _lerp(self.homes[a], info["e"], info["walk"])
        out = np.repeat(info["o"][None, :], info["off"], axis=0)
        path = np.concatenate([go, out, go[::-1]])
        self.pos[a, f0 : f0 + len(path)] = path
        return Episode(eid, "exit", f0, f1, who)

    def _enter(self, eid: str, who: tuple[int, ...], info: dict, f0: int, f1: int) -> Episode:
        """One frame just outside the edge, the walk in, then home for the rest of the video."""
        a = who[0]
        come = _lerp(info["e"], self.homes[a], info["walk"])
        self.pos[a, f0 : f0 + 1] = info["o"]
        self.pos[a, f0 + 1 : f0 + 1 + len(come)] = come
        self.pos[a, f0 + 1 + len(come) :] = self.homes[a]
        return Episode(eid, "enter", f0, f1, who)


def _ball_track(
    pos: np.ndarray, hold: np.ndarray, episodes: list[Episode], cast: list[Agent], r_ball: float
) -> np.ndarray:
    """The ball, frame by frame: in its holder's hand, or in flight between release and catch."""
    n_frames = pos.shape[1]
    ball = np.zeros((n_frames, 2))
    for ep in episodes:
        if ep.kind == "pass":
            h, r = ep.agents
            a_pt = pos[h, ep.marks["release"] - 1] + attach_offset(cast[h], r_ball)
            b_pt = pos[r, ep.marks["catch"]] + attach_offset(cast[r], r_ball)
            n_fl = ep.marks["catch"] - ep.marks["release"] + 1
            flight = _lerp(a_pt, b_pt, n_fl)[1:]
            ball[ep.marks["release"] : ep.marks["catch"] + 1] = flight
    for fr in range(n_frames):
        if hold[fr] >= 0:
            ball[fr] = pos[hold[fr], fr] + attach_offset(cast[hold[fr]], r_ball)
    return ball


def layout(spec: SceneSpec, cast: list[Agent], rng: np.random.Generator) -> Tracks:
    """One draw of the scene's tracks; raises DrawFailed when the draw breaks a constraint."""
    n_frames = spec.n_frames
    r_ball = ball_radius(spec)
    homes = _homes(spec, cast, r_ball, rng)
    speed = _speed(spec)
    kinds = _kinds(spec, rng)
    n = len(cast)
    late = [int(i) for i in rng.permutation(n)[: kinds.count("enter")]]
    on_screen = set(range(n)) - set(late)
    holder0 = int(rng.choice(sorted(on_screen)))

    # 1. who takes part and how long each episode lasts (agents stand at home between episodes)
    planner = _Planner(spec, cast, rng, homes, r_ball, speed, late, on_screen, holder0, spec.repeats, [False] * n)
    plans = [planner.plan(kind) for kind in kinds]

    # 2. place the episodes in time with random slack between them
    lead, gap, extra = _schedule(spec, plans, rng)

    # 3. the frame-by-frame tracks
    painter = _Painter(
        homes,
        np.repeat(homes[:, None, :], n_frames, axis=1).astype(float),
        np.zeros((n, n_frames), dtype=bool),
        np.full(n_frames, -1, dtype=int),
    )
    for a in late:
        painter.pos[a, :, :] = _edge(spec, homes[a], cast[a])[1]
    painter.hold[:] = holder0
    episodes: list[Episode] = []
    f = lead
    for k, (plan, pad) in enumerate(zip(plans, extra, strict=True)):
        f += int(pad) + (gap if k else 0)
        episodes.append(painter.paint(f"e{k + 1:02d}", plan, f))
        f = episodes[-1].f1
    ball = _ball_track(painter.pos, painter.hold, episodes, cast, r_ball)
    tracks = Tracks(
        pos=painter.pos,
        lit=painter.lit,
        ball=ball,
        holder=painter.hold,
        episodes=episodes,
        ball_radius=r_ball,
        homes=homes,
    )
    check_overlaps(spec, cast, tracks)
    return tracks


def _window_of(episodes: list[Episode], frame: int) -> Episode | None:
    for e in episodes:
        if e.f0 <= frame < e.f1:
            return e
    return None


def check_overlaps(spec: SceneSpec, cast: list[Agent], tracks: Tracks) -> None:
    """Raise DrawFailed if two things touch, or something leaves the frame, outside an episode that makes it."""
    n = len(cast)
    halo = HALO_GAP + HALO_WIDTH
    for f in range(tracks.n_frames):
        ep = _window_of(tracks.episodes, f)
        allowed = {frozenset(p) for p in (ep.allowed if ep else ())}
        allowed.add(frozenset((BALL, int(tracks.holder[f]))))
        leaving = ep.agents if ep and ep.kind in ("exit", "enter") else ()
        things: list[tuple[int, np.ndarray, float]] = []
        for i in range(n):
            p, r = tracks.pos[i, f], cast[i].radius
            inside = r + 1 <= p[0] <= spec.width - r - 1 and r + 1 <= p[1] <= spec.height - r - 1
            offscreen = p[0] + r < 0 or p[0] - r > spec.width or p[1] + r < 0 or p[1] - r > spec.height
            if not inside and not offscreen and i not in leaving:
                raise DrawFailed(f"agent {i} crosses the frame edge at frame {f} outside an exit or entry")
            if not offscreen:  # (late entrants wait outside the frame until their entry)
                things.append((i, p, r + halo))
        b = tracks.ball[f]
        rb = tracks.ball_radius
        if not (rb <= b[0] <= spec.width - rb and rb <= b[1] <= spec.height - rb):
            raise DrawFailed(f"the ball leaves the frame at frame {f}")
        things.append((BALL, b, rb))
        for x in range(len(things)):
            for y in range(x + 1, len(things)):
                (i, p, r), (j, q, s) = things[x], things[y]
                if frozenset((i, j)) in allowed:
                    continue
                if np.linalg.norm(p - q) < r + s + CLEARANCE:
                    raise DrawFailed(f"{i} and {j} touch at frame {f} outside any episode that allows it")
