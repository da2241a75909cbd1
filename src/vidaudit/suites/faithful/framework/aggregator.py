"""The deterministic aggregator A_psi (H.5 (a), H.11): chunk observations -> trajectories, with no model call.

Observations are the objects each chunk's extraction lists. Four steps:

1. **Similarity** of an observation o_i of chunk a and o_j of a later chunk b, ``c in [0, 1]``:
   ``0`` if their categories differ, or a colour or a read number differs (the identity evidence),
   else ``W_ATTR * attr + W_POS * pos`` with ``attr`` the share of equal attributes among those both
   report (colour, shape, size, number; under the open schema every attribute either reports, free
   text compared without case or extra spaces) and ``pos = max(0, 1 - d / POS_SCALE)``, d the distance
   of o_i's last and o_j's first coarse position (normalised frame units); without a position (open
   schema), ``attr`` alone.
2. **Constraint filtering**: a candidate link needs ``0 <= t_j - t_i < dt_max`` (t_i = o_i's
   ``last_seen``, t_j = o_j's ``first_seen``) and ``c > tau_conf``; both strict.
3. **Conflict resolution**, one-to-one and prioritised by temporal adjacency: chunk pairs are taken
   in order of their distance (adjacent chunks first, then gap 2, ...); within a pair, a maximum-weight
   bipartite matching on c (Hungarian) among the observations still free (no successor yet for o_i,
   no predecessor yet for o_j). ``matching="greedy"`` instead accepts candidates in order of c. A
   link that would put two observations of one chunk in one identity is refused.
4. **Trajectories**: linked observations merge (each a chain); states are the union of theirs,
   sorted by time, never re-generated or dropped; relation objects point to the trajectory of the
   related observation; attributes are the majority of the members' reports. Unmatched
   observations stay singletons. ``linking=False`` (the identity-linking-off control) stops after
   step 0: every observation is its own trajectory.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from vidaudit.suites.faithful.framework.schema import (
    ChunkExtraction,
    ChunkObject,
    OpenChunkExtraction,
    OpenChunkObject,
    attributes_of,
)

W_ATTR, W_POS = 0.6, 0.4
POS_SCALE = 0.5
ATTRS = ("colour", "shape", "size", "number")
#: attributes that veto a link when both observations report them and they differ (the identity evidence)
HARD = ("colour", "number")


@dataclass(frozen=True)
class AggregatorSettings:
    dt_max: float = 15.0
    tau_conf: float = 0.75
    matching: Literal["bipartite", "greedy"] = "bipartite"
    linking: bool = True


@dataclass(frozen=True)
class Observation:
    chunk: int
    obj: ChunkObject | OpenChunkObject

    @property
    def key(self) -> tuple[int, str]:
        return (self.chunk, self.obj.id)


@dataclass
class Trajectory:
    id: str
    category: str
    attributes: dict[str, object]
    members: list[tuple[int, str]]
    seen: list[tuple[float, float]]
    #: (t, kind, predicate, value, object trajectory id)
    states: list[tuple[float, str, str, str | None, str | None]] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "category": self.category,
            "attributes": self.attributes,
            "seen": [[round(a, 2), round(b, 2)] for a, b in self.seen],
            "states": [[round(t, 2), k, p, v, o] for t, k, p, v, o in self.states],
        }


def similarity(a: ChunkObject | OpenChunkObject, b: ChunkObject | OpenChunkObject) -> float:
    """c(o_i, o_j) of step 1."""
    if a.category != b.category:
        return 0.0
    ea, eb = attributes_of(a), attributes_of(b)
    for hard in HARD:
        if ea.get(hard) is not None and eb.get(hard) is not None and _norm(ea[hard]) != _norm(eb[hard]):
            return 0.0
    keys = (
        ATTRS if not (isinstance(a, OpenChunkObject) or isinstance(b, OpenChunkObject)) else sorted(set(ea) | set(eb))
    )
    both = [k for k in keys if ea.get(k) is not None and eb.get(k) is not None]
    attr = sum(_norm(ea[k]) == _norm(eb[k]) for k in both) / len(both) if both else 0.0
    if a.position is None or b.position is None:  # open vocabulary without positions: attributes alone
        return attr
    (x0, y0), (x1, y1) = a.position.last, b.position.first
    pos = max(0.0, 1.0 - math.hypot(x1 - x0, y1 - y0) / POS_SCALE)
    return W_ATTR * attr + W_POS * pos


def _norm(v: object) -> object:
    """Free-text attribute values compare case- and space-insensitively ("White jersey" = "white  jersey")."""
    return " ".join(v.casefold().split()) if isinstance(v, str) else v


class _Links:
    """Chains of observations under construction: successor/predecessor and the chunks of each identity."""

    def __init__(self, obs: list[Observation]) -> None:
        self.parent = list(range(len(obs)))
        self.chunks = [{o.chunk} for o in obs]
        self.succ: dict[int, int] = {}
        self.pred: dict[int, int] = {}

    def root(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def can(self, i: int, j: int) -> bool:
        if i in self.succ or j in self.pred:
            return False
        ri, rj = self.root(i), self.root(j)
        return ri != rj and not (self.chunks[ri] & self.chunks[rj])

    def link(self, i: int, j: int) -> None:
        ri, rj = self.root(i), self.root(j)
        self.parent[rj] = ri
        self.chunks[ri] |= self.chunks[rj]
        self.succ[i], self.pred[j] = j, i


def _candidates(obs: list[Observation], s: AggregatorSettings) -> dict[tuple[int, int], float]:
    out = {}
    for i, a in enumerate(obs):
        for j, b in enumerate(obs):
            if b.chunk <= a.chunk:
                continue
            dt = b.obj.first_seen - a.obj.last_seen
            if not (0.0 <= dt < s.dt_max):
                continue
            c = similarity(a.obj, b.obj)
            if c > s.tau_conf:
                out[(i, j)] = c
    return out


def link(obs: list[Observation], s: AggregatorSettings) -> _Links:
    from scipy.optimize import linear_sum_assignment  # here: ~0.3 s of CPU to import

    links = _Links(obs)
    if not s.linking:
        return links
    cands = _candidates(obs, s)
    if s.matching == "greedy":
        for (i, j), _ in sorted(cands.items(), key=lambda kv: (-kv[1], obs[kv[0][1]].chunk - obs[kv[0][0]].chunk)):
            if links.can(i, j):
                links.link(i, j)
        return links
    pairs = sorted({(obs[i].chunk, obs[j].chunk) for i, j in cands}, key=lambda p: (p[1] - p[0], p[0]))
    for ca, cb in pairs:
        left = sorted({i for i, j in cands if obs[i].chunk == ca and obs[j].chunk == cb})
        right = sorted({j for i, j in cands if obs[i].chunk == ca and obs[j].chunk == cb})
        w = np.zeros((len(left), len(right)))
        for x, i in enumerate(left):
            for y, j in enumerate(right):
                if (i, j) in cands and links.can(i, j):
                    w[x, y] = cands[(i, j)]
        rows, cols = linear_sum_assignment(w, maximize=True)
        for x, y in sorted(zip(rows, cols, strict=True), key=lambda r: -w[r[0], r[1]]):
            i, j = left[x], right[y]
            if w[x, y] > 0 and links.can(i, j):  # re-checked: an earlier link of this pair may join them
                links.link(i, j)
    return links


def _consensus(members: Sequence[ChunkObject | OpenChunkObject]) -> dict[str, object]:
    dicts = [attributes_of(m) for m in members]
    keys = ATTRS if not any(isinstance(m, OpenChunkObject) for m in members) else sorted({k for d in dicts for k in d})
    out: dict[str, object] = {}
    for k in keys:
        votes = Counter(d.get(k) for d in dicts if d.get(k) is not None)
        out[k] = votes.most_common(1)[0][0] if votes else None
    return out


def aggregate(
    chunks: list[tuple[int, ChunkExtraction | OpenChunkExtraction]], settings: AggregatorSettings | None = None
) -> list[Trajectory]:
    """Trajectories from the valid chunks' extractions (``(chunk index, extraction)``)."""
    s = settings or AggregatorSettings()
    obs = [Observation(m, o) for m, ex in sorted(chunks, key=lambda c: c[0]) for o in ex.objects]
    links = link(obs, s)
    groups: dict[int, list[int]] = {}
    for i in range(len(obs)):
        groups.setdefault(links.root(i), []).append(i)
    ordered = sorted(groups.values(), key=lambda g: (min(obs[i].obj.first_seen for i in g), min(g)))
    tid_of: dict[tuple[int, str], str] = {}
    for n, g in enumerate(ordered, 1):
        for i in g:
            tid_of[obs[i].key] = f"T{n}"
    out = []
    for n, g in enumerate(ordered, 1):
        g = sorted(g, key=lambda i: (obs[i].chunk, obs[i].obj.first_seen))
        members = [obs[i].obj for i in g]
        states: list[tuple[float, str, str, str | None, str | None]] = sorted(
            (
                (st.t, st.kind, st.predicate, st.value, tid_of.get((obs[i].chunk, st.object)) if st.object else None)
                for i in g
                for st in obs[i].obj.states
            ),
            key=lambda x: (x[0], x[2]),
        )
        out.append(
            Trajectory(
                id=f"T{n}",
                category=members[0].category,
                attributes=_consensus(members),
                members=[obs[i].key for i in g],
                seen=[(m.first_seen, m.last_seen) for m in members],
                states=states,
            )
        )
    return out
