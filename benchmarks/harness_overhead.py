"""Time the harness's own overhead side by side: planning the paper's design, and preparing one request.

Two measurements in one process, each the best of ``--repeats`` runs (the machine may be shared, and
the minimum is the least disturbed figure):

1. plan (dry run): the ``paper`` preset (2,190 samples) written as a dry-run manifest by
   ``generate(..., dry_run=True)`` into a temp dir (timed on its own, not part of the goal), then
   ``prepare_stream(..., check_files=False)`` + ``dry_run_rows`` -- the ``vidaudit run --dry-run`` path --
   for one API model spec over native, frames@{1,2,4,8,10,16} and keyframes with the
   structured_trace prompt, plus the four other prompts at native. Goal: < 10 s.
2. per-trial preparation: a few videos rendered for real by ``generate`` on a small grid; for each,
   ``RequestBuilder(...)(planned)`` (select, exact decode through a FrameCache, request parts) then
   ``OpenAIAdapter.build_kwargs(request)`` (JPEG-encode, base64, provider kwargs), at frames@1 and
   frames@16, cold (a fresh FrameCache) and warm (the same trial again on the warm cache).
   Goal: frames@16 warm < 0.3 s per trial.

Each measurement is also made on a baseline, in the same process right after it, and the ratio
baseline / current is printed (``--no-baseline`` skips them):

1. the plan with frame selections recomputed for every trial (``at_fps``, ``uniform_count`` and
   ``selection_sha256`` un-memoised: the code before they were memoised);
2. requests with every frame JPEG-encoded on every request (the memo of read-only frames' JPEG bytes
   in ``models.provider_content`` bypassed: the code before it).

When a goal is missed (or with ``--profile``) the top cProfile entries of that measurement are printed.
A whole run's harness CPU per trial, beside the bare asyncio + SQLite floor that stores it as durably, is
``harness_trial.py``'s (and beside inspect_ai and lmms-eval, ``harness_peers.py``'s).
No model is called: the adapters only build requests, and their API keys are dummies set in this
process's environment under a benchmark-only variable name (a real key in the environment is never read).

    python benchmarks/harness_overhead.py [--repeats 3] [--plan-repeats 2] [--model gemini:gemini-2.5-flash]
                                          [--points domain:N:F,...] [--no-baseline] [--skip-plan] [--skip-prep]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_common import best_of, parse_condition, parse_points

from vidaudit.core.errors import ConfigError
from vidaudit.core.registry import get_suite
from vidaudit.core.types import Condition, ModelSpec
from vidaudit.models.base import Capabilities
from vidaudit.models.openai_compat import OpenAIAdapter
from vidaudit.run.plan import PlannedTrial, PlanStream
from vidaudit.run.request import PlanRequest
from vidaudit.run.request_builder import RequestBuilder
from vidaudit.run.session import dry_run_rows, prepare_stream
from vidaudit.suites.counting.generate import generate
from vidaudit.suites.counting.grid import GridPoint, preset
from vidaudit.video.frame_cache import FrameCache

#: Benchmark-only key variable: adapters are pointed at it with ``api_key_env`` so that a real key
#: that happens to be in the environment is never read. Nothing is called, so any value works.
DUMMY_KEY_ENV = "VIDAUDIT_BENCH_DUMMY_KEY"

#: The paper's sampling interventions and event-centred keyframes (Low-Frequency Trap, section 6).
SAMPLING = ("native", "frames@1", "frames@2", "frames@4", "frames@8", "frames@10", "frames@16", "keyframes")
#: Its prompting interventions (section 6) besides structured_trace, each at native.
OTHER_PROMPTS = ("direct", "multi_turn_verification", "thinking", "role_prompting")
#: Hosted OpenAI takes no native video (check_servable refuses it), so the design needs a spec that does.
DEFAULT_PLAN_MODEL = "gemini:gemini-2.5-flash"
REQUEST_MODEL = "openai:gpt-4o"
DEFAULT_POINTS = "bounce_ball:12:4,blinking:6:2,state_machine:12:4,bounce_ball:0:1"
GOAL_PLAN_S = 10.0
GOAL_WARM_16_S = 0.3


def paper_conditions() -> list[Condition]:
    """The 12 conditions of the paper's design: 8 presentations x structured_trace, 4 more prompts at native."""
    return [parse_condition(c, "structured_trace") for c in SAMPLING] + [
        parse_condition("native", p) for p in OTHER_PROMPTS
    ]


def model_options() -> dict[str, dict[str, Any]]:
    """Options per provider: the dummy key, and no on-disk Gemini upload cache (nothing is uploaded)."""
    return {
        "openai": {"api_key_env": DUMMY_KEY_ENV},
        "anthropic": {"api_key_env": DUMMY_KEY_ENV},
        "gemini": {"api_key_env": DUMMY_KEY_ENV, "use_disk_cache": False},
    }


def best_cpu_of(repeats: int, fn: Callable[[], object]) -> tuple[float, float]:
    """(minimum wall time, minimum CPU time of this process) over ``repeats`` calls; on a loaded machine the
    CPU time is the steadier figure, and the gap between the two shows how much the load cost."""
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def profile_top(fn: Callable[[], object], n: int = 15) -> str:
    """The ``n`` entries with the most cumulative time for one call of ``fn``."""
    prof = cProfile.Profile()
    prof.runcall(fn)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("cumulative").print_stats(n)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    return "\n".join(lines[start:]).rstrip()


# -- baselines (patched in this process only, then restored) ----------------------------------------


@contextmanager
def unmemoised_selection() -> Iterator[None]:
    """Baseline 1: every trial's frame selection and its hash recomputed, as before ``at_fps``,
    ``uniform_count`` and ``selection_sha256`` were memoised (``__wrapped__`` is the function itself)."""
    import vidaudit.run.plan as plan_mod

    saved = plan_mod.at_fps, plan_mod.uniform_count, plan_mod.selection_sha256
    plan_mod.at_fps, plan_mod.uniform_count, plan_mod.selection_sha256 = (f.__wrapped__ for f in saved)
    try:
        yield
    finally:
        plan_mod.at_fps, plan_mod.uniform_count, plan_mod.selection_sha256 = saved


class _NoMemo:
    def get(self, key: int, quality: int) -> None:
        return None

    def put(self, image: Any, quality: int, data: bytes) -> None:
        pass


@contextmanager
def jpeg_every_time() -> Iterator[None]:
    """Baseline 2: every frame JPEG-encoded on every request, as before read-only frames' JPEG bytes were
    memoised in ``models.provider_content``."""
    import vidaudit.models.provider_content as rb

    saved = rb._JPEG_MEMO
    rb._JPEG_MEMO = _NoMemo()  # type: ignore[assignment]
    try:
        yield
    finally:
        rb._JPEG_MEMO = saved


# -- 1. planning the paper's design ---------------------------------------------------------------


@dataclass
class PlanResult:
    samples: int
    conditions: int
    trials: int
    frames: int
    manifest_s: float
    prepare_s: float
    rows_s: float
    plan_only_s: float
    prepare_cpu_s: float
    rows_cpu_s: float

    @property
    def total_s(self) -> float:
        return self.prepare_s + self.rows_s

    @property
    def total_cpu_s(self) -> float:
        return self.prepare_cpu_s + self.rows_cpu_s


def make_dry_manifest(data: Path, repeats: int) -> tuple[int, float]:
    """(samples, seconds): the paper preset's dry-run manifest, as ``vidaudit generate --dry-run`` writes it."""
    points = preset("paper")

    def make_manifest() -> None:
        shutil.rmtree(data, ignore_errors=True)
        generate(points, data, dry_run=True)

    return len(points), best_of(repeats, make_manifest)


def measure_plan(
    spec: ModelSpec, data: Path, n_samples: int, manifest_s: float, repeats: int, profile: bool
) -> tuple[PlanResult, str | None]:
    """The ``vidaudit run --dry-run`` path over the paper design's dry-run manifest in ``data``."""
    conditions = paper_conditions()
    opts = model_options()
    state: dict[str, Any] = {}

    def prepare() -> None:  # the plan as `vidaudit run --dry-run` makes it: a stream, checked in one pass
        state["planned"], _, state["caps"] = prepare_stream(
            PlanRequest(data=data, models=[spec], conditions=conditions, model_options=opts), check_files=False
        )

    def rows() -> None:
        state["rows"] = dry_run_rows(state["planned"], state["caps"])

    prepare_s, prepare_cpu_s = best_cpu_of(repeats, prepare)
    rows_s, rows_cpu_s = best_cpu_of(repeats, rows)
    samples = sorted(state["planned"].samples, key=lambda s: s.sample_id)
    suite = get_suite("counting")
    plan_only_s = best_of(
        repeats, lambda: PlanStream(samples, conditions, [spec], suite=suite, caps_by_model=state["caps"]).planned()
    )
    planned = state["planned"]
    result = PlanResult(
        n_samples,
        len(conditions),
        len(planned),
        sum(r.frames for r in state["rows"]),
        manifest_s,
        prepare_s,
        rows_s,
        plan_only_s,
        prepare_cpu_s,
        rows_cpu_s,
    )
    prof = None
    if profile or result.total_s >= GOAL_PLAN_S:

        def both() -> None:
            prepare()
            rows()

        prof = profile_top(both)
    return result, prof


# -- 2. preparing one request ---------------------------------------------------------------------


@dataclass
class PrepRow:
    sample_id: str
    label: str
    condition: str
    images: int
    cold_s: float  # fresh FrameCache: decode + request + build_kwargs
    warm_s: float  # same trial again on the warm cache
    warm_request_s: float  # ... of which RequestBuilder (select, cache hits, parts)
    warm_kwargs_s: float  # ... of which build_kwargs (JPEG, base64, kwargs)
    payload_mb: float  # base64 image bytes in the kwargs


def render_videos(points: list[GridPoint], out: Path, workers: int) -> tuple[list[Any], float]:
    t0 = time.perf_counter()
    result = generate(points, out, workers=workers, verify=True)
    return result.samples, time.perf_counter() - t0


def payload_mb(kwargs: dict[str, Any]) -> float:
    parts = kwargs["messages"][-1]["content"]
    return sum(len(p["image_url"]["url"]) for p in parts if p.get("type") == "image_url") / 1e6


def measure_trial(p: PlannedTrial, data: Path, adapter: OpenAIAdapter, repeats: int) -> PrepRow:
    """Cold and warm request preparation for one trial, best of ``repeats``."""
    cold_s = best_of(repeats, lambda: adapter.build_kwargs(RequestBuilder(data, cache=FrameCache())(p)))
    builder = RequestBuilder(data, cache=FrameCache())
    request = builder(p)  # warms the cache
    kwargs = adapter.build_kwargs(request)
    warm_s = best_of(repeats, lambda: adapter.build_kwargs(builder(p)))
    warm_req = best_of(repeats, lambda: builder(p))
    warm_kw = best_of(repeats, lambda: adapter.build_kwargs(request))
    params = p.sample.params
    label = f"{params['domain']} N={params['n_events']} F={params['frequency_hz']:g}"
    return PrepRow(
        p.sample.sample_id,
        label,
        p.trial.condition.video_id,
        len(request.images),
        cold_s,
        warm_s,
        warm_req,
        warm_kw,
        payload_mb(kwargs),
    )


def plan_for(samples: list[Any], conditions: list[Condition], adapter: OpenAIAdapter) -> list[PlannedTrial]:
    caps: dict[str, Capabilities] = {adapter.spec.label: adapter.capabilities}
    return PlanStream(samples, conditions, [adapter.spec], suite=get_suite("counting"), caps_by_model=caps).planned()


def measure_prep(
    samples: list[Any], data: Path, adapter: OpenAIAdapter, conditions: list[Condition], repeats: int
) -> list[PrepRow]:
    """Every (condition, sample) trial, condition by condition."""
    return [measure_trial(p, data, adapter, repeats) for p in plan_for(samples, conditions, adapter)]


# -- report ---------------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def print_plan(spec: ModelSpec, r: PlanResult, prof: str | None) -> None:
    print(f"1. plan the paper design in dry run ({spec.label})")
    print(
        f"   {r.samples} samples x {r.conditions} conditions ({len(SAMPLING)} presentations with structured_trace"
        f" + {len(OTHER_PROMPTS)} prompts at native) = {r.trials} trials, {r.frames} frames selected"
    )
    print(f"   dry-run manifest (generate, dry_run=True): {r.manifest_s:7.2f} s  (not part of the goal)")
    print(
        f"   prepare_stream(check_files=False):         {r.prepare_s:7.2f} s wall {r.prepare_cpu_s:7.2f} s CPU  "
        f"(PlanStream.planned() alone {r.plan_only_s:.2f} s wall)"
    )
    print(f"   dry_run_rows:                              {r.rows_s:7.2f} s wall {r.rows_cpu_s:7.2f} s CPU")
    print(
        f"   total                                      {r.total_s:7.2f} s wall {r.total_cpu_s:7.2f} s CPU  = "
        f"{1e6 * r.total_s / r.trials:.0f} us/trial  (goal < {GOAL_PLAN_S:g} s wall: "
        f"{verdict(r.total_s < GOAL_PLAN_S)}; by CPU time: {verdict(r.total_cpu_s < GOAL_PLAN_S)})"
    )
    if prof:
        print("\n   cProfile of prepare_stream + dry_run_rows (cumulative):")
        print("   " + prof.replace("\n", "\n   "))
    print()


def print_prep(rows: list[PrepRow], render_s: float, n_videos: int, prof: str | None) -> None:
    print(
        f"2. per-trial preparation ({REQUEST_MODEL}: RequestBuilder + build_kwargs), {n_videos} videos "
        f"rendered and verified in {render_s:.1f} s"
    )
    head = (
        f"   {'video':<26}{'cond':<11}{'images':>7}{'cold ms':>9}{'warm ms':>9}{'warm req':>10}"
        f"{'warm kw':>9}{'b64 MB':>8}"
    )
    print(head)
    print("   " + "-" * (len(head) - 3))
    for r in rows:
        print(
            f"   {r.label:<26}{r.condition:<11}{r.images:>7}{1e3 * r.cold_s:>9.1f}{1e3 * r.warm_s:>9.1f}"
            f"{1e3 * r.warm_request_s:>10.1f}{1e3 * r.warm_kwargs_s:>9.1f}{r.payload_mb:>8.2f}"
        )
    for cond in dict.fromkeys(r.condition for r in rows):
        sel = [r for r in rows if r.condition == cond]
        cold = statistics.mean(r.cold_s for r in sel)
        warm = statistics.mean(r.warm_s for r in sel)
        worst = max(r.warm_s for r in sel)
        per_img = statistics.mean(r.warm_kwargs_s / r.images for r in sel) * 1e3
        line = (
            f"   {cond:<10} mean cold {1e3 * cold:7.1f} ms/trial, warm {1e3 * warm:7.1f} ms/trial "
            f"(worst {1e3 * worst:.1f}); JPEG+base64 {per_img:.2f} ms/image"
        )
        if cond == "frames@16":
            line += f"  (goal warm < {GOAL_WARM_16_S * 1e3:g} ms: {verdict(worst < GOAL_WARM_16_S)})"
        print(line)
    if prof:
        print("\n   cProfile of one warm frames@16 trial (cumulative):")
        print("   " + prof.replace("\n", "\n   "))
    print()


def print_baseline_plan(baseline: PlanResult, current: PlanResult) -> None:
    if (baseline.trials, baseline.frames) != (current.trials, current.frames):
        raise RuntimeError("the un-memoised baseline planned different trials; its figures do not compare")
    print("   baseline, selections recomputed for every trial (same trials and frames):")
    print(
        f"   prepare_stream {baseline.prepare_s:.2f} s, dry_run_rows {baseline.rows_s:.2f} s, total "
        f"{baseline.total_s:.2f} s wall, {baseline.total_cpu_s:.2f} s CPU"
    )
    print(
        f"   ratio baseline / current: {baseline.total_s / current.total_s:.1f}x wall, "
        f"{baseline.total_cpu_s / current.total_cpu_s:.1f}x CPU\n"
    )


def print_baseline_prep(baseline: list[PrepRow], current: list[PrepRow]) -> None:
    print("   baseline, every frame JPEG-encoded on every request (same payload bytes):")
    for cond in dict.fromkeys(r.condition for r in current):
        b = [r for r in baseline if r.condition == cond]
        a = [r for r in current if r.condition == cond]
        if [r.payload_mb for r in a] != [r.payload_mb for r in b]:
            raise RuntimeError("the baseline built a different payload; its figures do not compare")
        warm_b = statistics.mean(r.warm_s for r in b)
        warm_a = statistics.mean(r.warm_s for r in a)
        print(
            f"   {cond:<10} warm {1e3 * warm_b:7.1f} ms/trial (worst {1e3 * max(r.warm_s for r in b):.1f}); "
            f"ratio baseline / current warm: {warm_b / warm_a:.1f}x"
        )
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="repetitions per request measurement; the best is kept")
    ap.add_argument("--plan-repeats", type=int, default=2, help="repetitions of the plan measurement")
    ap.add_argument(
        "--model",
        default=DEFAULT_PLAN_MODEL,
        help="model spec to plan for; it must take native video (openai:gpt-4o hosted does not)",
    )
    ap.add_argument("--points", default=DEFAULT_POINTS, help="domain:N:F items to render for part 2 (seed 0)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes for rendering part 2's videos")
    ap.add_argument("--profile", action="store_true", help="print cProfile top entries even when goals are met")
    ap.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the baselines (un-memoised frame selections; JPEG encoded on every request)",
    )
    ap.add_argument("--skip-plan", action="store_true", help="skip part 1")
    ap.add_argument("--skip-prep", action="store_true", help="skip part 2")
    args = ap.parse_args()
    if args.repeats < 1 or args.plan_repeats < 1 or args.workers < 1:
        raise SystemExit("--repeats, --plan-repeats and --workers must be >= 1")
    os.environ[DUMMY_KEY_ENV] = "dummy-key-nothing-is-called"

    import av
    import cv2

    print(
        f"machine: {os.cpu_count()} CPUs ({cpu_model()}), Python {platform.python_version()}, "
        f"PyAV {av.__version__}, OpenCV {cv2.__version__} ({cv2.getNumThreads()} threads)"
    )
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"best of {args.plan_repeats} (plan) / {args.repeats} (requests) per measurement; load average at start "
        f"{load} (1/5/15 min)\n"
    )

    with tempfile.TemporaryDirectory(prefix="vidaudit-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if not args.skip_plan:
            spec = ModelSpec.parse(args.model)
            data = tmp / "paper-dry"
            n_samples, manifest_s = make_dry_manifest(data, args.plan_repeats)
            try:
                result, prof = measure_plan(spec, data, n_samples, manifest_s, args.plan_repeats, args.profile)
                if not args.no_baseline:
                    with unmemoised_selection():
                        baseline, _ = measure_plan(spec, data, n_samples, manifest_s, args.plan_repeats, False)
            except ConfigError as e:
                raise SystemExit(
                    f"--model {args.model} cannot plan the paper design: {e}\nThe design includes "
                    "native video; pick a spec that takes it, e.g. gemini:gemini-2.5-flash"
                ) from e
            print_plan(spec, result, prof)
            if not args.no_baseline:
                print_baseline_plan(baseline, result)
        if not args.skip_prep:
            data = tmp / "videos"
            samples, render_s = render_videos(parse_points(args.points), data, args.workers)
            adapter = OpenAIAdapter(ModelSpec.parse(REQUEST_MODEL), api_key_env=DUMMY_KEY_ENV)
            conditions = [parse_condition("frames@1"), parse_condition("frames@16")]
            rows = measure_prep(samples, data, adapter, conditions, args.repeats)
            if not args.no_baseline:
                with jpeg_every_time():
                    baseline_rows = measure_prep(samples, data, adapter, conditions, args.repeats)
            prof = None
            worst16 = max((r for r in rows if r.condition == "frames@16"), key=lambda r: r.warm_s)
            if args.profile or worst16.warm_s >= GOAL_WARM_16_S:
                builder = RequestBuilder(data, cache=FrameCache())
                p16 = next(
                    p for p in plan_for(samples, [conditions[1]], adapter) if p.sample.sample_id == worst16.sample_id
                )
                builder(p16)
                prof = profile_top(lambda: adapter.build_kwargs(builder(p16)))
            print_prep(rows, render_s, len(samples), prof)
            if not args.no_baseline:
                print_baseline_prep(baseline_rows, rows)


if __name__ == "__main__":
    main()
