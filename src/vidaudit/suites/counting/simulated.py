"""``simulated:SURFACE.csv``: a model whose accuracy per (domain, N, F) cell is read from a CSV.

It lets a researcher plan a study (how many seeds, which cells, which design) before paying for a
real model, and it gives every design a known surface to be tested against. It reads no pixels, so
it runs on a ``vidaudit generate counting --dry-run`` manifest (no video files).

Rules (documented in ``docs/running-models.md``):

- The CSV has the header ``domain,N,F,accuracy`` and one row per cell; every (domain, N, F) cell
  of the run's samples must have a row (N = 0 controls at their nominal F, 1.0 Hz); extra rows are
  allowed. Anything malformed is a ``ConfigError`` naming the row.
- Per trial, one generator seeded by the trial id draws, in this order, u (correct iff u < accuracy),
  the direction of a wrong count and its size, so a resumed or repeated run gives the same answers.
- A wrong count undercounts with probability 3/4 (the paper's models under-report events: recall
  well below precision, VOR < 1 for most of them), by d drawn uniformly from 1..max(1, ceil(N/2));
  it overcounts by d otherwise, and whenever N - d would be negative.
- The answer is the suite's own constant-answer text (counting: ``\\boxed{K}``), so the normal scorer
  parses it; no events are reported, so trace metrics are those of a model listing no timestamps.
- The CSV's sha256 is a request option, hence part of every trial id: editing the surface makes
  new trials instead of reusing answers drawn from the old one.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import time
from collections.abc import Mapping
from json.encoder import encode_basestring as _encode_str
from pathlib import Path

import numpy as np

from vidaudit.sdk import (
    Baselines,
    Capabilities,
    ConfigError,
    Draws,
    ModelSpec,
    Request,
    Response,
    Sample,
    SampleAnswerer,
    Usage,
    rng_from,
    unvalidated,
)

HEADER = ("domain", "N", "F", "accuracy")
#: probability that a wrong count is below the true one
UNDERCOUNT_P = 0.75

_CAPS = Capabilities(
    native_video=True, images=True, max_images=None, default_native_fps=None, concurrency=64, local=True, synthetic=True
)

#: every answer's usage: none (one immutable value for all, rather than a default built per response)
_NO_USAGE = Usage()

_GIVEN = frozenset({"text", "usage", "latency_s", "finish_reason", "model_version", "cost_usd"})
_KNOWN = tuple(Response.model_fields) == (
    "text",
    "usage",
    "latency_s",
    "finish_reason",
    "model_version",
    "cost_usd",
    "frames_sent",
    "frames_estimated",
)


def _response(text: str, latency_s: float, label: str) -> Response:
    """The answer's ``Response`` (no usage, no cost, finished), unvalidated when its values are of their fields' exact
    types (validation would return them as they are: ``tests/suites/counting/test_simulated_model.py`` compares
    the two)."""
    if _KNOWN and type(text) is str and type(latency_s) is float and type(label) is str:
        return unvalidated(
            Response,
            {
                "text": text,
                "usage": _NO_USAGE,
                "latency_s": latency_s,
                "finish_reason": "stop",
                "model_version": label,
                "cost_usd": 0.0,
                "frames_sent": None,
                "frames_estimated": False,
            },
            _GIVEN,
        )
    return Response(
        text=text, usage=_NO_USAGE, latency_s=latency_s, finish_reason="stop", model_version=label, cost_usd=0.0
    )


CellKey = tuple[str, int, float]
#: ``Draws.integers(1, high)`` draws for ``high`` below this (numpy's generator for larger counts)
_DRAWS_RANGE = 1 << 32


def cell_key(domain: str, n: int, f: float) -> CellKey:
    """The key a cell is looked up by (F rounded so that 1 and 1.0 are the same frequency)."""
    return (str(domain), int(n), round(float(f), 6))


def read_surface(path: str | Path) -> dict[CellKey, float]:
    """The CSV's cells: {(domain, N, F): accuracy}; a ConfigError names the first bad row."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(
            f"simulated: cannot read the surface CSV {path}: {e.strerror or e}; pass "
            "simulated:PATH with a CSV of domain,N,F,accuracy"
        ) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"simulated: {path} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or tuple(c.strip() for c in rows[0]) != HEADER:
        got = ",".join(rows[0]) if rows else "an empty file"
        raise ConfigError(f"simulated: {path} row 1 must be the header {','.join(HEADER)}, got {got!r}")
    out: dict[CellKey, float] = {}
    first_row: dict[CellKey, int] = {}
    for i, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue  # blank line
        where = f"simulated: {path} row {i} ({','.join(row)!r})"
        if len(row) != 4:
            raise ConfigError(f"{where}: expected 4 fields domain,N,F,accuracy, got {len(row)}")
        domain, n_text, f_text, acc_text = (c.strip() for c in row)
        if not domain:
            raise ConfigError(f"{where}: the domain is empty")
        try:
            n = int(n_text)
        except ValueError:
            raise ConfigError(f"{where}: N must be a non-negative integer, got {n_text!r}") from None
        try:
            f, acc = float(f_text), float(acc_text)
        except ValueError:
            raise ConfigError(f"{where}: F and accuracy must be numbers, got {f_text!r} and {acc_text!r}") from None
        if n < 0:
            raise ConfigError(f"{where}: N must be a non-negative integer, got {n}")
        if not (math.isfinite(f) and f > 0):
            raise ConfigError(f"{where}: F must be a positive frequency in Hz, got {f_text!r}")
        if not (math.isfinite(acc) and 0.0 <= acc <= 1.0):
            raise ConfigError(f"{where}: accuracy must be in [0, 1], got {acc_text!r}")
        key = cell_key(domain, n, f)
        if key in out:
            raise ConfigError(f"{where}: the cell {domain} N={n} F={f:g} is already given on row {first_row[key]}")
        out[key] = acc
        first_row[key] = i
    if not out:
        raise ConfigError(f"simulated: {path} has a header but no cells")
    return out


def sample_cell(sample: Sample) -> CellKey:
    """The (domain, N, F) cell of a grid sample; a ConfigError for samples outside a grid (real videos)."""
    p = sample.params
    domain, n, f = p.get("domain"), p.get("n_events", sample.answer), p.get("frequency_hz")
    if domain is None or f is None or not isinstance(n, int) or isinstance(n, bool):
        raise ConfigError(
            f"simulated: sample {sample.sample_id} has no (domain, N, F) cell (params {dict(p)}); "
            "the simulated model answers grid samples only (vidaudit generate counting)"
        )
    return cell_key(domain, n, f)


def wrong_count(truth: int, direction: float, size: int) -> int:
    """A plausible wrong count: ``truth - size`` when ``direction < UNDERCOUNT_P`` and that is >= 0, else ``truth + size``."""
    if size < 1:
        raise ValueError(f"a wrong count differs by at least 1, got {size}")
    if direction < UNDERCOUNT_P and truth - size >= 0:
        return truth - size
    return truth + size


def _seed(trial_id: str) -> int:
    """``seed_from("simulated", trial_id)``: the canonical JSON of ``["simulated", trial_id]`` written out."""
    text = '["simulated",' + _encode_str(trial_id) + "]"
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def simulated_count(trial_id: str, truth: int, accuracy: float) -> int:
    """The count the simulated model answers for one trial (see the module docstring for the draws).

    The draws are ``rng_from("simulated", trial_id)``'s, made by ``core.pcg64.Draws`` (the same numbers without
    building a numpy generator per trial) unless a wrong count's range is past what it draws."""
    high = max(1, math.ceil(truth / 2)) + 1
    rng: Draws | np.random.Generator = (
        Draws(_seed(trial_id)) if high < _DRAWS_RANGE else rng_from("simulated", trial_id)
    )
    if float(rng.random()) < accuracy:
        return truth  # the later draws decide nothing (and nothing else reads this generator)
    direction = float(rng.random())
    size = int(rng.integers(1, high))
    return wrong_count(truth, direction, size)


class SimulatedAdapter(SampleAnswerer):
    """Answers each trial correctly with its cell's accuracy from the CSV (``simulated:PATH``)."""

    capabilities = _CAPS
    #: reads no pixels: runs on a dry-run manifest and is sent the prompt only
    needs_video = False

    def __init__(
        self, spec: ModelSpec, *, samples: Mapping[str, Sample] | None = None, suite=None, **_: object
    ) -> None:
        super().__init__(spec, samples=samples, suite=suite)
        if not spec.name:
            raise ConfigError("simulated needs a surface CSV: simulated:PATH (header domain,N,F,accuracy)")
        path = Path(spec.name)
        self.surface = read_surface(path)
        self._sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        missing = sorted({sample_cell(s) for s in self.samples.values()} - set(self.surface))
        if missing:
            listed = ", ".join(f"{d} N={n} F={f:g}" for d, n, f in missing[:5])
            raise ConfigError(
                f"simulated: {path} has no row for {len(missing)} cell(s) of the data (e.g. {listed}); "
                "add a row domain,N,F,accuracy for each (N = 0 controls at F = 1.0)"
            )
        #: each sample's (true count, cell accuracy), looked up on its first trial rather than on every one
        self._cells: dict[str, tuple[int, float]] = {}
        self._label = spec.label
        probe = next(iter(self.samples.values()), None)
        if probe is not None:  # a suite without a constant-answer format fails now, not mid-run
            Baselines.of(self.suite).constant_answer(probe, "0")

    def request_options(self) -> dict[str, object]:
        return {"surface_sha256": self._sha256}

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        sample = self.sample(request)
        sid = request.metadata["sample_id"]
        cell = self._cells.get(sid)
        if cell is None:
            cell = self._cells[sid] = (int(sample.answer), self.surface[sample_cell(sample)])
        truth, accuracy = cell
        k = simulated_count(request.trial_id, truth, accuracy)
        return _response(
            Baselines.of(self.suite).constant_answer(sample, str(k)), time.perf_counter() - t0, self._label
        )
