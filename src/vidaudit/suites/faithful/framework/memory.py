"""The trajectory memory as text: what retrieval and the answerer read, one JSON trajectory per line.

``truncate`` is the token-matched budget (``memory_tokens=K``): the memory G gets is cut to at most K
estimated tokens (characters / 4, ``models.pricing``), dropping first the states whose verb the question
does not use, oldest first, then those it uses, oldest first, then whole trajectories from the last; the
header and the note saying what was cut always stay (a K below them keeps nothing else).

``render`` writes a header, a line per note (e.g. an invalid summarise reply), a line per invalid chunk (an outcome the answerer is told about, not
an empty list), then the trajectories; ``read`` parses it back (the program answerer and the
model-retriever's reply check use it). ``shuffle_times`` is the shuffled-order ablation: the time
labels of all states are permuted across the whole memory (seeded by its content), each
trajectory's states re-sorted by their new times -- content and length are kept, order is gone.
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np

from vidaudit.sdk import CHARS_PER_TOKEN
from vidaudit.suites.faithful.framework.vocabulary import stems, words

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


def tokens_of(text: str) -> int:
    """Estimated tokens of a text (the pricing module's characters-per-token rule)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def truncate(
    trajs: list[dict],
    invalid: list[tuple[int, float, float, str]],
    notes: tuple[str, ...],
    question: str,
    max_tokens: int,
) -> tuple[list[dict], int]:
    """(trajectories, states dropped) whose rendered memory, with a note saying what was cut, fits in
    ``max_tokens`` estimated tokens (``max_tokens`` 0: no cap, nothing dropped)."""
    if max_tokens <= 0 or tokens_of(render(trajs, invalid, notes)) <= max_tokens:
        return trajs, 0
    asked = stems(question)

    def uses(s: list) -> bool:
        head = words(str(s[2]).replace("_", " "))[:1] + (words(str(s[3])) if s[3] is not None else [])
        return bool(stems(" ".join(head)) & asked)

    order = sorted(((uses(s), float(s[0]), i, j) for i, t in enumerate(trajs) for j, s in enumerate(t["states"])))

    def cut(k: int, drop_trajs: int = 0) -> list[dict]:
        gone = {(i, j) for _, _, i, j in order[:k]}
        kept = [
            {**t, "states": [s for j, s in enumerate(t["states"]) if (i, j) not in gone]} for i, t in enumerate(trajs)
        ]
        return kept[: len(kept) - drop_trajs]

    def fits(kept: list[dict], k: int) -> bool:
        note = f"memory truncated to {max_tokens} tokens (token-matched budget): {k} states dropped"
        return tokens_of(render(kept, invalid, (*notes, note))) <= max_tokens

    lo, hi = 1, len(order)
    if fits(cut(hi), hi):
        while lo < hi:  # the fewest states dropped that fit (monotone: fewer states, shorter text)
            mid = (lo + hi) // 2
            if fits(cut(mid), mid):
                hi = mid
            else:
                lo = mid + 1
        return cut(hi), hi
    drop = 1
    while drop < len(trajs) and not fits(cut(len(order), drop), len(order)):
        drop += 1
    return cut(len(order), drop), len(order)
