"""Check a rendered world against its record using only decoded pixels and the render log.

Every pixel of a check frame is labelled with the nearest colour of the scene's palette
(background, ring, ball, digit colours and each agent colour). Then, at each check frame (every
fact's frame and the one before it):

- an agent logged fully visible shows a blob of its colour centred where the log puts it, with its
  ring exactly when the log says it is lit;
- an agent logged hidden or out of frame shows no pixel of its colour anywhere (outside the disks
  of visible agents of the same colour, i.e. its look-alike);
- the ball is where the log puts it.

And per fact, the change it names is visible between its frame and the one before: a state
toggle flips the ring, ``goes_behind``/``exits`` make the agent vanish and ``emerges_from``/``enters``
make it appear, a pass moves the ball out of the passer's hand and a catch puts it in the
receiver's, and a collision brings two shapes that were apart a frame before into contact.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import cv2
import numpy as np

from vidaudit.sdk import Sample, read_frames, sha256_file
from vidaudit.suites.faithful.scene import INRADIUS
from vidaudit.suites.faithful.simulate import AgentAt, FrameLog, RenderLog
from vidaudit.suites.faithful.world import Fact, WorldRecord
from vidaudit.suites.faithful.worldfile import read_world_file

TEXT_COLOURS = ((0, 0, 0), (255, 255, 255))
MIN_FILL = 0.45  # share of a fully visible agent's inner disk in its colour
MIN_RING = 0.6  # share of ring samples in the ring colour when lit
MAX_RING_DARK = 0.15
MAX_STRAY = 2  # pixels of a vanished agent's colour tolerated (compression)
TOUCH_PX = 7.0  # eroded blobs this close touch (their shapes are 9 px apart a frame before contact)


class Palette:
    """Nearest-colour labels: ``names[k]`` for label k."""

    def __init__(self, log: RenderLog) -> None:
        colours: dict[str, tuple[int, int, int]] = {
            "background": log.background,
            "ring": log.halo_rgb,
            "ball": log.ball_rgb,
            "text_black": TEXT_COLOURS[0],
        }
        for look in log.agents.values():
            colours.setdefault(_colour_key(look.rgb), look.rgb)
        self.names = list(colours)
        self.rgb = np.array([colours[n] for n in self.names], dtype=np.float32)
        # nearest palette colour for every colour quantised to 5 bits per channel (a 32^3 lookup table)
        q = np.arange(32, dtype=np.float32) * 8 + 4
        grid = np.stack(np.meshgrid(q, q, q, indexing="ij"), axis=-1).reshape(-1, 1, 3)
        self._lut = ((grid - self.rgb[None, :, :]) ** 2).sum(axis=2).argmin(axis=1).astype(np.uint8).reshape(32, 32, 32)

    def label(self, img: np.ndarray) -> np.ndarray:
        q = img >> 3
        return self._lut[q[..., 0], q[..., 1], q[..., 2]]

    def index(self, rgb: tuple[int, int, int]) -> int:
        return self.names.index(_colour_key(rgb))


def _colour_key(rgb: tuple[int, int, int]) -> str:
    return f"agent_{rgb[0]:02x}{rgb[1]:02x}{rgb[2]:02x}"


@functools.lru_cache(maxsize=4)
def _axes(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(h, dtype=np.float32)[:, None], np.arange(w, dtype=np.float32)[None, :]


def _disk(shape: tuple[int, int], x: float, y: float, r: float) -> np.ndarray:
    yy, xx = _axes(int(shape[0]), int(shape[1]))
    return (xx - x) ** 2 + (yy - y) ** 2 <= r * r


def _ring_share(labels: np.ndarray, ring: int, x: float, y: float, radius: float) -> float | None:
    h, w = labels.shape
    hits, n = 0, 0
    for a in np.linspace(0, 2 * np.pi, 32, endpoint=False):
        px, py = int(round(x + radius * np.cos(a))), int(round(y + radius * np.sin(a)))
        if 0 <= px < w and 0 <= py < h:
            n += 1
            hits += int(labels[py, px] == ring)
    return hits / n if n else None


class FrameCheck:
    def __init__(self, log: RenderLog, palette: Palette, frame: int, img: np.ndarray) -> None:
        self.log, self.pal, self.frame = log, palette, frame
        self.at: FrameLog = log.frames[str(frame)]
        self.labels = palette.label(img)

    def colour_mask(self, agent_id: str) -> np.ndarray:
        return self.labels == self.pal.index(self.log.agents[agent_id].rgb)

    def present(self, agent_id: str) -> int:
        """Pixels of the agent's colour within its circumradius (+1) of its logged position."""
        a, look = self.at.agents[agent_id], self.log.agents[agent_id]
        return int((self.colour_mask(agent_id) & _disk(self.labels.shape, a.x, a.y, look.radius + 1)).sum())

    def stray(self, agent_id: str) -> int:
        """Solid pixels (3x3 blocks) of the agent's colour where it would show if it were not hidden or gone.

        Hidden: inside its own disk (which lies inside the occluder). Out of frame: anywhere outside
        the disks of the visible things (their anti-aliased edges blend into other colours).
        """
        a, look = self.at.agents[agent_id], self.log.agents[agent_id]
        solid = cv2.erode(self.colour_mask(agent_id).astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
        if a.vis == "hidden":
            return int((solid & _disk(self.labels.shape, a.x, a.y, look.radius)).sum())
        for other, at in self.at.agents.items():
            if at.vis in ("full", "partial"):
                o = self.log.agents[other]
                solid &= ~_disk(self.labels.shape, at.x, at.y, o.radius + self.log.halo_gap + self.log.halo_width + 2)
        solid &= ~_disk(self.labels.shape, *self.at.ball, self.log.ball_radius + 2)
        return int(solid.sum())

    def agent_problems(self, agent_id: str) -> list[str]:
        a: AgentAt = self.at.agents[agent_id]
        look = self.log.agents[agent_id]
        where = f"frame {self.frame}: {agent_id}"
        if a.vis in ("hidden", "offscreen"):
            n = self.stray(agent_id)
            return [f"{where} is logged {a.vis} but {n} pixels of its colour show"] if n > MAX_STRAY else []
        if a.vis == "partial":
            return (
                [] if self.present(agent_id) >= 3 else [f"{where} is logged visible but no pixel of its colour shows"]
            )
        inner = _disk(self.labels.shape, a.x, a.y, 0.9 * look.radius * _inradius(look.shape))
        fill = float(self.colour_mask(agent_id)[inner].mean()) if inner.any() else 0.0
        problems = []
        if fill < MIN_FILL:
            problems.append(f"{where}: only {fill:.0%} of its inner disk shows its colour")
        window = self.colour_mask(agent_id) & _disk(self.labels.shape, a.x, a.y, look.radius + 1)
        ys, xs = np.nonzero(window)
        if len(xs):
            dx, dy = float(xs.mean()) - a.x, float(ys.mean()) - a.y
            tol = max(1.5, 0.2 * look.radius)
            if (dx * dx + dy * dy) ** 0.5 > tol:
                problems.append(f"{where}: its blob is centred {dx:+.1f},{dy:+.1f} px from the logged position")
        share = _ring_share(
            self.labels,
            self.pal.names.index("ring"),
            a.x,
            a.y,
            look.radius + self.log.halo_gap + self.log.halo_width / 2,
        )
        if share is not None and a.lit and share < MIN_RING:
            problems.append(f"{where} is logged lit but its ring shows on {share:.0%} of the circle")
        if share is not None and not a.lit and share > MAX_RING_DARK:
            problems.append(f"{where} is logged dark but a ring shows on {share:.0%} of the circle")
        return problems

    def ball_at(self, x: float, y: float) -> float:
        disk = _disk(self.labels.shape, x, y, max(1.0, 0.7 * self.log.ball_radius))
        return float((self.labels[disk] == self.pal.names.index("ball")).mean()) if disk.any() else 0.0

    def ball_problems(self) -> list[str]:
        share = self.ball_at(*self.at.ball)
        return [] if share >= 0.5 else [f"frame {self.frame}: the ball is not at its logged position ({share:.0%})"]

    def separation(self, a: str, b: str) -> float:
        """Pixels between the two agents' blobs: each blob is its colour within its circumradius (split by the
        nearer outline for look-alikes of one colour), eroded by one pixel so that anti-aliased fringes (a ring's
        edge, a seam blurred by chroma subsampling) do not count as shape."""
        yy, xx = _axes(*self.labels.shape)
        masks = []
        at_a, at_b = self.at.agents[a], self.at.agents[b]
        ra, rb = self.log.agents[a].radius, self.log.agents[b].radius
        da = np.sqrt((xx - at_a.x) ** 2 + (yy - at_a.y) ** 2) - ra
        db = np.sqrt((xx - at_b.x) ** 2 + (yy - at_b.y) ** 2) - rb
        twins = self.log.agents[a].rgb == self.log.agents[b].rgb
        for agent, mine, other in ((a, da, db), (b, db, da)):
            m = self.colour_mask(agent) & (mine <= 1.0)
            if twins:
                m &= mine <= other
            masks.append(cv2.erode(m.astype(np.uint8), np.ones((3, 3), np.uint8)))
        if not masks[0].any() or not masks[1].any():
            return float("inf")
        dist = cv2.distanceTransform((masks[0] == 0).astype(np.uint8), cv2.DIST_L2, 3)
        return float(dist[masks[1] > 0].min())


def _inradius(shape: str) -> float:
    return INRADIUS[shape]


def _attach(log: RenderLog, at: FrameLog, agent_id: str) -> tuple[float, float]:
    a, look = at.agents[agent_id], log.agents[agent_id]
    d = (look.radius + log.halo_gap + log.halo_width + log.ball_radius + 1.0) / 2**0.5
    return a.x + d, a.y - d


def check_video(world: WorldRecord, log: RenderLog, path: str | Path) -> list[str]:
    """Problems found in the video at ``path`` (empty: the pixels show the record)."""
    frames = sorted(int(k) for k in log.frames)
    imgs = read_frames(path, frames)
    if imgs.shape[1:3] != (log.height, log.width):
        return [f"the video is {imgs.shape[2]}x{imgs.shape[1]}, the log says {log.width}x{log.height}"]
    pal = Palette(log)
    checks = {f: FrameCheck(log, pal, f, img) for f, img in zip(frames, imgs, strict=True)}
    problems: list[str] = []
    for c in checks.values():
        for agent_id in c.at.agents:
            problems += c.agent_problems(agent_id)
        problems += c.ball_problems()
    for fact in world.facts:
        if fact.frame is None or fact.frame == 0:
            continue
        now, before = checks[fact.frame], checks[fact.frame - 1]
        change = _CHANGES.get(fact.predicate)
        problem = change(log, fact, now, before) if change else None
        if problem:
            what = (
                f"fact {fact.id} ({fact.subject} {fact.predicate} {fact.object or fact.value or ''}) "
                f"at frame {fact.frame}"
            )
            problems.append(f"{what}: {problem}")
    return problems


#: what a fact's change looks like between the frame before it and its own: one check per kind of change, each
#: returning the problem (None when the pixels and the log show the change)
_ChangeCheck = Callable[[RenderLog, Fact, FrameCheck, FrameCheck], str | None]


def _toggle_shown(log: RenderLog, fact: Fact, now: FrameCheck, before: FrameCheck) -> str | None:
    """A state fact: the log lights (or darkens) the ring at the fact's frame and not before."""
    s, want = fact.subject, fact.value == "lit"
    if now.at.agents[s].lit != want or before.at.agents[s].lit == want:
        return "the log does not show the toggle"
    return None


def _vanishes(log: RenderLog, fact: Fact, now: FrameCheck, before: FrameCheck) -> str | None:
    """goes_behind / exits: the agent shows the frame before and is hidden or gone, with no stray pixel, at the
    fact's frame."""
    s = fact.subject
    if before.present(s) < 3 or now.at.agents[s].vis not in ("hidden", "offscreen") or now.stray(s) > MAX_STRAY:
        return "the agent does not vanish at that frame"
    return None


def _appears(log: RenderLog, fact: Fact, now: FrameCheck, before: FrameCheck) -> str | None:
    """emerges_from / enters: the agent is hidden or gone the frame before and shows at the fact's frame."""
    s = fact.subject
    if now.present(s) < 3 or before.at.agents[s].vis not in ("hidden", "offscreen") or before.stray(s) > MAX_STRAY:
        return "the agent does not appear at that frame"
    return None


def _leaves_hand(log: RenderLog, fact: Fact, now: FrameCheck, before: FrameCheck) -> str | None:
    """passes_to: the ball is in the passer's hand the frame before and out of it at the fact's frame."""
    s = fact.subject
    if before.ball_at(*_attach(log, before.at, s)) < 0.5 or now.ball_at(*_attach(log, now.at, s)) > 0.2:
        return "the ball does not leave the passer's hand at that frame"
    return None


def _reaches_hand(log: RenderLog, fact: Fact, now: FrameCheck, before: FrameCheck) -> str | None:
    """receives: the ball is in the receiver's hand at the fact's frame and was not the frame before."""
    s = fact.subject
    if now.ball_at(*_attach(log, now.at, s)) < 0.5 or before.ball_at(*_attach(log, before.at, s)) > 0.2:
        return "the ball does not reach the receiver at that frame"
    return None


def _meets(log: RenderLog, fact: Fact, now: FrameCheck, before: FrameCheck) -> str | None:
    """collides_with: two shapes apart the frame before touch at the fact's frame."""
    if fact.object is None:
        return "the collision names no other shape"
    if now.separation(fact.subject, fact.object) > TOUCH_PX or before.separation(fact.subject, fact.object) <= TOUCH_PX:
        return "the shapes do not meet at that frame"
    return None


_CHANGES: dict[str, _ChangeCheck] = {
    "state": _toggle_shown,
    "goes_behind": _vanishes,
    "exits": _vanishes,
    "emerges_from": _appears,
    "enters": _appears,
    "passes_to": _leaves_hand,
    "receives": _reaches_hand,
    "collides_with": _meets,
}


def verify_dataset(
    root: str | Path,
    samples: Sequence[Sample],
    *,
    workers: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, list[str]]:
    """Problems per sample id: each video is checked once and its problems go to every sample on it. The videos are
    checked in this process, one after another (``workers``, the verification role's shared argument, is unused)."""
    root = Path(root)
    by_video: dict[str, list[Sample]] = {}
    for s in samples:
        by_video.setdefault(s.video.path, []).append(s)
    problems: dict[str, list[str]] = {}
    for i, (rel, group) in enumerate(sorted(by_video.items()), 1):
        first = group[0]
        path = root / rel
        world_rel = first.params.get("world")
        if not world_rel:
            found = ["the sample names no world file (an imported release has no record to check pixels against)"]
        elif not path.is_file():
            found = [f"video missing: {path}"]
        elif first.video.sha256 and sha256_file(path) != first.video.sha256:
            found = [f"sha256 of {path} does not match the manifest (file changed or corrupt)"]
        else:
            wf = read_world_file(root / world_rel, first.params.get("world_sha256"))
            found = check_video(wf.world, wf.render, path) if wf.render else ["the world file has no render log"]
        if found:
            for s in group:
                problems[s.sample_id] = found
        if on_progress:
            on_progress(i, len(by_video))
    return problems
