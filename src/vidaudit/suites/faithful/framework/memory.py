"""The trajectory memory as text: what retrieval and the answerer read, one JSON trajectory per line.

``render`` writes a header, a line per note (e.g. an invalid summarise reply), a line per invalid chunk (an outcome the answerer is told about, not
an empty list), then the trajectories; ``read`` parses it back (the program answerer and the
model-retriever's reply check use it). ``shuffle_times`` is the shuffled-order ablation: the time
labels of all states are permuted across the whole memory (seeded by its content), each
trajectory's states re-sorted by their new times -- content and length are kept, order is gone.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

HEADER = "Object trajectories of the video (one JSON object per line; times in seconds; states are [t, kind, predicate, value, object]):"


def render(trajs: list[dict], invalid: list[tuple[int, float, float, str]], notes: tuple[str, ...] = ()) -> str:
    lines = [HEADER, *(f"# {n}" for n in notes)]
    for m, t0, t1, why in invalid:
        lines.append(f"# chunk {m} [{t0:.2f}, {t1:.2f}) s: extraction invalid ({why}); its objects are missing")
    lines += [json.dumps(t, separators=(",", ":")) for t in trajs]
    return "\n".join(lines)


def read(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"states"' in line:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def shuffle_times(trajs: list[dict]) -> list[dict]:
    seed = int(hashlib.sha256(json.dumps(trajs, sort_keys=True).encode()).hexdigest()[:16], 16)
    rng = np.random.default_rng(seed)
    times = [s[0] for t in trajs for s in t["states"]]
    perm = [times[int(i)] for i in rng.permutation(len(times))]
    out, k = [], 0
    for t in trajs:
        states = []
        for s in t["states"]:
            states.append([perm[k], *s[1:]])
            k += 1
        out.append({**t, "states": sorted(states, key=lambda s: (s[0], s[2]))})
    return out
