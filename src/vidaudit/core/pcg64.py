"""The first draws of ``numpy.random.default_rng(seed)``, in pure Python: the same numbers, without building
a ``Generator``.

A model that draws a handful of numbers per trial from a generator seeded by the trial's id (``simulated``)
spent most of its time constructing the generator: ``default_rng`` runs numpy's ``SeedSequence`` (a 32-bit
hash mix of the seed into a pool of four words, then eight output words) and seeds a ``PCG64`` with them,
through several Python-level layers. ``Draws`` does the same arithmetic directly on Python ints:

- ``SeedSequence(seed).generate_state(4, uint64)`` for a seed below 2**64 (numpy's ``mix_entropy`` and
  ``generate_state``, with its hash constants precomputed: they do not depend on the seed);
- ``PCG64``'s seeding (``pcg_setseq_128_srandom_r``) and step (128-bit LCG, XSL-RR output);
- ``Generator.random()`` (53 bits of ``next_uint64``) and ``Generator.integers(low, high)`` for a range below
  2**32 - 1 (numpy's buffered 32-bit Lemire rejection, the two halves of a ``next_uint64`` in turn).

``tests/core/test_pcg64.py`` compares every draw with numpy's for arbitrary seeds and ranges.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

_M32 = 0xFFFFFFFF
_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1
# numpy/random/bit_generator.pyx
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
# numpy/random/src/pcg64/pcg64.h: PCG_DEFAULT_MULTIPLIER_128
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_DOUBLE = 1.0 / 9007199254740992.0  # 2**-53


def _hash_consts(init: int, mult: int, n: int) -> list[tuple[int, int]]:
    """The (xor, multiplier) pair of each of ``n`` successive ``hashmix`` calls (the constant advances per call)."""
    out, h = [], init
    for _ in range(n):
        nxt = (h * mult) & _M32
        out.append((h, nxt))
        h = nxt
    return out


def _hashmix(value: int, consts: tuple[int, int]) -> int:
    v = ((value ^ consts[0]) * consts[1]) & _M32
    return v ^ (v >> 16)


_A = _hash_consts(_INIT_A, _MULT_A, 16)  # mix_entropy: one per pool word, then 12 cross mixes
#: the two pool words a seed below 2**64 leaves at zero, mixed already
_POOL_2, _POOL_3 = _hashmix(0, _A[2]), _hashmix(0, _A[3])
#: (source word, destination word, xor, multiplier) of mix_entropy's 12 cross mixes, in order
_CROSS = tuple(
    (src, dst, *_A[4 + k]) for k, (src, dst) in enumerate((s, d) for s in range(4) for d in range(4) if s != d)
)
#: (pool word, xor, multiplier) of generate_state's 8 output words (4 uint64)
_OUT = tuple((i % 4, *c) for i, c in enumerate(_hash_consts(_INIT_B, _MULT_B, 8)))


def _seed_state_loops(seed: int) -> tuple[int, int]:
    """``seed_state`` as numpy's loops read (the reference the unrolled ``seed_state`` is generated from)."""
    if not 0 <= seed <= _M64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    p0 = _hashmix(seed & _M32, _A[0])
    p1 = _hashmix(seed >> 32, _A[1])  # numpy's pool treats a missing high word as 0: the same value
    pool = [p0, p1, _POOL_2, _POOL_3]
    for src, dst, x, y in _CROSS:
        h = ((pool[src] ^ x) * y) & _M32
        h ^= h >> 16
        r = (_MIX_MULT_L * pool[dst] - _MIX_MULT_R * h) & _M32
        pool[dst] = r ^ (r >> 16)
    w = []
    for i, x, y in _OUT:
        v = ((pool[i] ^ x) * y) & _M32
        w.append(v ^ (v >> 16))
    # uint32 words viewed as little-endian uint64s; PCG64 takes seed[0] as the high half of its 128-bit state
    return ((w[0] | w[1] << 32) << 64) | w[2] | w[3] << 32, ((w[4] | w[5] << 32) << 64) | w[6] | w[7] << 32


def _unrolled_source() -> str:
    """``_seed_state_loops`` written out as straight-line code on locals, its constants inlined (a seed per trial:
    the loops' indexing and tuple unpacking were an eighth of its cost)."""
    lines = [
        "def seed_state(seed):",
        "    if not 0 <= seed <= 0xFFFFFFFFFFFFFFFF:",
        "        raise ValueError(f'seed must be in [0, 2**64), got {seed}')",
        f"    h = (((seed & 0xFFFFFFFF) ^ {_A[0][0]}) * {_A[0][1]}) & 0xFFFFFFFF",
        "    p0 = h ^ (h >> 16)",
        f"    h = (((seed >> 32) ^ {_A[1][0]}) * {_A[1][1]}) & 0xFFFFFFFF",
        "    p1 = h ^ (h >> 16)",
        f"    p2 = {_POOL_2}",
        f"    p3 = {_POOL_3}",
    ]
    for src, dst, x, y in _CROSS:
        lines += [
            f"    h = ((p{src} ^ {x}) * {y}) & 0xFFFFFFFF",
            f"    r = ({_MIX_MULT_L} * p{dst} - {_MIX_MULT_R} * (h ^ (h >> 16))) & 0xFFFFFFFF",
            f"    p{dst} = r ^ (r >> 16)",
        ]
    for k, (i, x, y) in enumerate(_OUT):
        lines += [f"    v = ((p{i} ^ {x}) * {y}) & 0xFFFFFFFF", f"    w{k} = v ^ (v >> 16)"]
    lines.append("    return ((w0 | w1 << 32) << 64) | w2 | w3 << 32, ((w4 | w5 << 32) << 64) | w6 | w7 << 32")
    return "\n".join(lines) + "\n"


def _compiled() -> Callable[[int], tuple[int, int]]:
    space: dict[str, Any] = {}
    exec(compile(_unrolled_source(), "<vidaudit.core.pcg64 seed_state>", "exec"), space)  # noqa: S102
    return cast(Callable[[int], tuple[int, int]], space["seed_state"])


#: ``SeedSequence(seed).generate_state(4, uint64)`` as PCG64 takes it: (initial state, stream), 128 bits each
#: (``_seed_state_loops`` unrolled; ``tests/core/test_pcg64.py`` checks both against numpy)
seed_state = _compiled()


class Draws:
    """``numpy.random.default_rng(seed)``'s ``random()`` and small-range ``integers()``, drawn in pure Python."""

    __slots__ = ("_state", "_inc", "_half")

    def __init__(self, seed: int) -> None:
        state, stream = seed_state(seed)
        inc = ((stream << 1) | 1) & _M128
        self._inc = inc
        self._state = ((inc + state) * _PCG_MULT + inc) & _M128  # srandom_r: step, add the state, step
        self._half: int | None = None  # the high half of a next_uint64 that next_uint32 kept

    def next_uint64(self) -> int:
        s = self._state = (self._state * _PCG_MULT + self._inc) & _M128
        x = ((s >> 64) ^ s) & _M64
        r = s >> 122
        return ((x >> r) | (x << (64 - r))) & _M64

    def next_uint32(self) -> int:
        if self._half is not None:
            half, self._half = self._half, None
            return half
        v = self.next_uint64()
        self._half = v >> 32
        return v & _M32

    def random(self) -> float:
        """``Generator.random()``: a float in [0, 1)."""
        return (self.next_uint64() >> 11) * _DOUBLE

    def integers(self, low: int, high: int) -> int:
        """``Generator.integers(low, high)`` (``high`` excluded) for ``high - low`` below 2**32 - 1."""
        span = high - low - 1  # numpy's inclusive range
        if span < 0:
            raise ValueError(f"low >= high ({low} >= {high})")
        if span >= _M32:
            raise ValueError(f"a range of {span + 1} numbers is past what Draws.integers draws (2**32 - 1)")
        if span == 0:
            return low  # numpy draws nothing
        excl = span + 1
        m = self.next_uint32() * excl
        if (m & _M32) < excl:
            threshold = (_M32 - span) % excl
            while (m & _M32) < threshold:
                m = self.next_uint32() * excl
        return low + (m >> 32)
