"""``vidaudit generate stress --probe expectation``: reversed clips, temporal gaps and injected anomalies.

Every source is a synthetic procedure (``suites/stress/procedures.py``) rendered in its canonical order,
five labelled steps of drawn lengths. From each source, through ``apply_perturbation`` (``vidaudit.video.perturb.engine.apply``):

- ``reversed`` family: the source itself (``forward``) and the ``reverse`` op's copy (``reverse``), each
  asked the forward/reverse MCQ (``direction``) and the E.2.2 Q1 free description (``describe``);
- ``gap`` family: ``temporal_gap`` removes one middle step (label = the step), asked as a 4-way MCQ of the
  visible sequence (``gap_mcq``) and as the E.2.3 one-sentence summary (``gap_summary``);
- ``anomaly`` family: one video per injected anomaly (spatial ``insert_object``, ``colour_shift``,
  ``noise``; temporal ``reverse``, ``shuffle_frames``, ``cut``, ``scene_mix``), asked the three E.2.2
  questions in one request (``anomaly``).

Ground truth comes from the ops' own metadata (the removed range, the affected window and region), never
re-derived. Every choice is in docs/stress.md ("The expectation probe").
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.sdk import (
    ConfigError,
    DataError,
    PerturbationSpec,
    PoolFactory,
    Sample,
    VideoRef,
    check_choice,
    dataset_dir,
    open_perturb_source,
    plan_perturbation,
    rng_from,
    run_jobs,
    video_ref,
)
from vidaudit.suites.stress.common import LETTERS, place_at
from vidaudit.suites.stress.expectation import prompts as P
from vidaudit.suites.stress.probe import GenerateOptions, write_dataset
from vidaudit.suites.stress.procedures import (
    PROCEDURES,
    ProcedurePreset,
    RenderedProcedure,
    apply_job,
    publish,
    render_sources,
    staging_dir,
)
from vidaudit.suites.stress.sources import Clip, ClipSource, SourceLog, import_clips

PROBE = "expectation"
TASKS = ("direction", "describe", "gap_mcq", "gap_summary", "anomaly")
JUDGED_TASKS = ("describe", "gap_summary", "anomaly")
FAMILY = {"direction": "reversed", "describe": "reversed", "gap_mcq": "gap", "gap_summary": "gap", "anomaly": "anomaly"}
SPATIAL = ("insert_object", "colour_shift", "noise")
TEMPORAL = ("reverse", "shuffle_frames", "cut", "scene_mix")
ANOMALIES = SPATIAL + TEMPORAL
SHAPES = ("disc", "square", "triangle", "diamond")
#: anomaly parameters (Table 25 is lost): window and cut lengths as fractions of the clip
WINDOW_FRACTION = 0.4
CUT_FRACTION = 0.25
HUE_DEG = 120
NOISE_SIGMA = 40.0
OBJECT_SIZE = 0.25
#: a source needs this many labelled actions for a temporal gap (one removed from the middle)
MIN_GAP_STEPS = 3


Preset = ProcedurePreset


PRESETS: dict[str, Preset] = {
    "smoke": Preset("smoke", 160, 96, 8.0, 2, 1, (0.8, 1.2)),
    # clips of 7.5-15 s (E.6 trims to 5-15 s), every procedure, two seeds
    "paper": Preset("paper", 320, 180, 10.0, len(PROCEDURES), 2, (1.5, 3.0)),
}


#: a source of this probe: a synthetic procedure rendered in canonical order
Source = RenderedProcedure


def _seed(*parts: object) -> int:
    return int(rng_from("stress", "expectation-item", *parts).integers(0, 2**31 - 1))


def synthetic_sources(
    pre: Preset, out: Path, seeds: int | None, *, workers: int | None = 1, pool: PoolFactory | None = None
) -> list[Source]:
    return render_sources(pre, seeds, out, stream="expectation", workers=workers, pool=pool)


# --------------------------------------------------------------------------- gap MCQ options


def gap_options(
    steps: Sequence[str], missing: int, rng: np.random.Generator, index: int = 0
) -> tuple[list[str], list[str]]:
    """Four sequences and their kinds: the visible one (correct), the filled-in full procedure (the expectation
    answer), one that drops a visible step but keeps the missing one, and the visible one with two neighbours
    swapped. Source ``index`` places them: the visible one at ``index mod 4``, the filled-in one at one of
    the other three cycling with ``index // 4`` (so 12 sources give every pair of positions once), the other
    two in a drawn order; a constant letter is then neither always right nor always the filled-in one."""
    visible = [s for i, s in enumerate(steps) if i != missing]
    others = [i for i in range(len(steps)) if i != missing]
    drop = int(rng.choice(others))
    wrong_drop = [s for i, s in enumerate(steps) if i != drop]
    k = int(rng.integers(0, len(visible) - 1))
    swapped = list(visible)
    swapped[k], swapped[k + 1] = swapped[k + 1], swapped[k]
    seqs = {"visible": visible, "filled": list(steps), "wrong_drop": wrong_drop, "swapped": swapped}
    v_slot = index % 4
    f_slot = (v_slot + 1 + (index // 4) % 3) % 4
    rest = place_at("filled", ["wrong_drop", "swapped"], f_slot - (f_slot > v_slot), rng)
    kinds = place_at("visible", rest, v_slot)
    options = [P.sequence_text(seqs[k]) for k in kinds]
    if len(set(options)) != len(options):
        raise ConfigError(f"gap options of {list(steps)} are not distinct: {options}")
    return options, kinds


# --------------------------------------------------------------------------- anomaly parameters and descriptors


def anomaly_spec(op: str, duration_s: float, rng: np.random.Generator) -> PerturbationSpec:
    """The op's parameters for one clip (documented in docs/stress.md; the paper's Table 25 is lost)."""
    window = round(WINDOW_FRACTION * duration_s, 3)
    start = round(float(rng.uniform(0.1, 0.5)) * duration_s, 3)
    if op in ("reverse", "shuffle_frames"):
        params: dict[str, Any] = {"start_s": start, "end_s": round(start + window, 3)}
    elif op == "colour_shift":
        params = {"hue_deg": HUE_DEG, "start_s": start, "duration_s": window}
    elif op == "noise":
        params = {"sigma": NOISE_SIGMA, "start_s": start, "duration_s": window}
    elif op == "insert_object":
        params = {
            "shape": SHAPES[int(rng.integers(0, len(SHAPES)))],
            "size": OBJECT_SIZE,
            "start_s": start,
            "duration_s": window,
        }
    elif op in ("cut", "scene_mix"):
        params = {"duration_s": round(CUT_FRACTION * duration_s, 3), "start_s": start}
        if op == "scene_mix":
            params.update(second_start_s=0.0, mode="replace")
    else:
        raise ConfigError(f"unknown anomaly {op!r}; choose from {', '.join(ANOMALIES)}")
    return PerturbationSpec(name=op, params=params)


def _t(r: dict[str, Any]) -> str:
    return f"{r['t'][0]:.2f}-{r['t'][1]:.2f} s (frames {r['frames'][0]}-{r['frames'][1] - 1})"


def _where(box: Sequence[int], width: int, height: int) -> str:
    cx, cy = (box[0] + box[2]) / 2 / width, (box[1] + box[3]) / 2 / height
    col = "left" if cx < 1 / 3 else "right" if cx > 2 / 3 else "centre"
    row = "top" if cy < 1 / 3 else "bottom" if cy > 2 / 3 else "middle"
    return f"{row} {col}"


def descriptor(op: str, info: dict[str, Any], width: int, height: int, other: str | None = None) -> str:
    """The ground-truth anomaly descriptor the judge reads, from the op's own metadata."""
    if op == "reverse":
        return f"video reversal: the part at {_t(info['reversed'])} plays backwards; the rest plays forward"
    if op == "shuffle_frames":
        return f"frame shuffling: the frames at {_t(info['shuffled'])} are shown in a random order"
    if op == "cut":
        return (
            f"temporal cut: {info['removed_s']:.2f} s of the original, at {_t(info['removed'])}, are removed, so "
            f"the video jumps abruptly at {info['join_t']:.2f} s"
        )
    if op == "scene_mix":
        return (
            f"scene mixing: at {_t(info['mixed'])} the video shows frames of a different video "
            f"({other or 'another scene'}) in place of its own"
        )
    if op == "colour_shift":
        return (
            f"colour shift: at {_t(info['affected'])} the hue of the whole frame is rotated by "
            f"{info['hue_shift_deg']} degrees (unnatural colours)"
        )
    if op == "noise":
        return (
            f"noise injection: at {_t(info['affected'])} strong random noise (sigma {info['sigma']:g}) covers the frame"
        )
    if op == "insert_object":
        box = info["region_px"]
        return (
            f"object insertion: at {_t(info['affected'])} a flat {info['shape']} of colour RGB{tuple(info['colour'])} "
            f"that does not belong appears in the {_where(box, width, height)} of the frame (pixels {list(box)})"
        )
    raise ConfigError(f"unknown anomaly {op!r}")


# --------------------------------------------------------------------------- building the samples


def _sample(sid: str, video: VideoRef, task: str, params: dict[str, Any], question: str, answer: Any) -> Sample:
    p = {"probe": PROBE, "task": task, "family": FAMILY[task], **params}
    return Sample(sample_id=sid, suite="stress", params=p, question=question, answer=answer, video=video)


def plan_gap(name: str, steps: Sequence[str], index: int) -> tuple[int, list[str], list[str]]:
    """The removed middle step and the gap MCQ's options and kinds of source ``index`` called ``name`` (one rng
    stream per source; no video read, so a preset's answer key can be checked without rendering it)."""
    rng = rng_from("stress", "expectation-gap", name)
    missing = int(rng.integers(1, len(steps) - 1))
    options, kinds = gap_options(steps, missing, rng, index)
    return missing, options, kinds


def _feasible(spec: PerturbationSpec, info: Any, seed: int, second: Any = None) -> str | None:
    """Why ``spec`` cannot be made from a source of these facts (``None``: it can): the op's own plan, no pixel read."""

    try:
        plan_perturbation(spec, info, seed=seed, second=second)
    except (ConfigError, DataError) as e:
        return str(e)
    return None


def _source_name(src: Any) -> str:
    """How a skip names a source: a user's clip by its file (and window), a synthetic one by its name."""
    if isinstance(src, ClipSource):
        window = src.extra.get("window_s")
        return Path(src.origin).name + (f" [{window[0]:g}-{window[1]:g} s]" if isinstance(window, list) else "")
    return str(src.name)


def build(
    sources: list[Source],
    out: Path,
    *,
    preset: str,
    on_progress: Callable[[int, int], None] | None = None,
    workers: int | None = 1,
    pool: PoolFactory | None = None,
    log: SourceLog | None = None,
) -> list[Sample]:
    """Every sample of every source; the perturbed videos are ``apply_job``s (``core.jobs``), each planned with
    its seed before any runs, and the samples are built in plan order from the ops' metadata.

    Every video is planned on its source's facts first (``plan_for``, nothing rendered), so no clip stops the
    set partway: ``scene_mix`` splices in the next source that is long enough (in order, wrapping round; the
    next one in a synthetic set always is), and a video that cannot be made from a clip (no partner long
    enough, too few frames for the op's window) is left out and named in ``log`` with the op's reason."""

    if len(sources) < 2:
        raise ConfigError("the expectation probe needs at least two sources (scene mixing splices in another one)")
    log = log if log is not None else SourceLog()
    (out / "videos").mkdir(parents=True, exist_ok=True)
    planner = _Planner(out, log, sources)
    for si, src in enumerate(sources):
        planner.plan_source(si, src, sources)
    done = dict(
        zip(
            planner.jobs,
            run_jobs(apply_job, list(planner.jobs.values()), workers=workers, pool=pool, on_progress=on_progress),
            strict=True,
        )
    )
    samples: list[Sample] = []
    for src in sources:
        base = {
            "procedure": src.procedure,
            "source_name": src.name,
            "canonical": list(src.steps),
            "preset": preset,
            **({"source_clip": src.origin, **src.extra} if isinstance(src, ClipSource) else {}),
        }
        stem = f"stress-expectation-{src.name}"
        samples += _direction_samples(src, out, stem, base, done)
        if src.name in planner.gaps:
            samples += _gap_samples(src, stem, base, done, planner.gaps[src.name])
        samples += _anomaly_samples(src, stem, base, done, planner.partner.get(src.name))
    return samples


class _Planner:
    """The perturbed videos of a set, planned on the sources' facts before any is made: ``jobs`` (in plan order,
    (source, its video's tag) -> ``apply_job``'s arguments), the gap each source asks about and the source each
    ``scene_mix`` splices in; a video that cannot be made is named in ``log`` and left out."""

    def __init__(self, out: Path, log: SourceLog, sources: Sequence[Source | ClipSource]) -> None:
        self.out, self.log = out, log
        self.facts = {src.name: open_perturb_source(src.video) for src in sources}
        self.jobs: dict[tuple[str, str], tuple[Any, ...]] = {}
        self.gaps: dict[str, tuple[int, list[str], list[str]]] = {}  # source -> plan_gap(...)
        self.partner: dict[str, Source | ClipSource] = {}  # source -> the source scene_mix splices in

    def plan(
        self,
        src: Source | ClipSource,
        tag: str,
        spec: PerturbationSpec,
        seed: int,
        rel: str,
        second: Source | ClipSource | None = None,
    ) -> bool:
        """Plan one video (True), or name in the log why it cannot be made from this source (False)."""
        why = _feasible(spec, self.facts[src.name], seed, self.facts[second.name] if second is not None else None)
        if why is not None:
            self.log.skip(_source_name(src), f"{tag}: {why}")
            return False
        self.jobs[src.name, tag] = (
            str(src.video),
            spec,
            str(self.out),
            rel,
            seed,
            str(second.video) if second else None,
        )
        return True

    def plan_source(self, si: int, src: Source | ClipSource, sources: Sequence[Source | ClipSource]) -> None:
        """The videos of source ``si``, in order: reversed, the gap (when it has enough labelled steps), each
        anomaly."""
        stem = f"stress-expectation-{src.name}"
        self.plan(
            src, "reverse", PerturbationSpec(name="reverse"), _seed(src.name, "reverse"), f"videos/{stem}-reverse.mp4"
        )
        if len(src.steps) >= MIN_GAP_STEPS:  # a user's clip without labelled actions has no gap to ask about
            self._plan_gap(src, stem)
        for op in ANOMALIES:
            self._plan_anomaly(si, src, sources, op, stem)

    def _plan_gap(self, src: Source | ClipSource, stem: str) -> None:
        """The temporal gap: one middle step removed (drawn by ``plan_gap``, indexed by the gaps planned so far)."""
        missing, options, kinds = plan_gap(src.name, src.steps, len(self.gaps))
        a, b = src.segments[missing]
        if self.plan(
            src,
            "gap",
            PerturbationSpec(name="temporal_gap", params={"start_s": a, "end_s": b, "label": src.steps[missing]}),
            _seed(src.name, "gap"),
            f"videos/{stem}-gap.mp4",
        ):
            self.gaps[src.name] = (missing, options, kinds)

    def _plan_anomaly(
        self, si: int, src: Source | ClipSource, sources: Sequence[Source | ClipSource], op: str, stem: str
    ) -> None:
        """One anomaly video; ``scene_mix`` splices in the next other source long enough (wrapping round)."""
        spec = anomaly_spec(op, src.duration_s, rng_from("stress", "expectation-anomaly", src.name, op))
        rel, seed = f"videos/{stem}-anomaly-{op}.mp4", _seed(src.name, op)
        if op != "scene_mix":
            self.plan(src, f"anomaly-{op}", spec, seed, rel)
            return
        others = [sources[(si + k) % len(sources)] for k in range(1, len(sources))]
        fit = next((o for o in others if _feasible(spec, self.facts[src.name], seed, self.facts[o.name]) is None), None)
        if fit is None:
            longest = max(o.duration_s for o in others)
            self.log.skip(
                _source_name(src),
                f"anomaly-scene_mix: no other clip is long enough to splice in "
                f"{spec.params['duration_s']:g} s (a quarter of this clip's "
                f"{src.duration_s:g} s; the longest other lasts {longest:g} s)",
            )
            return
        if self.plan(src, f"anomaly-{op}", spec, seed, rel, fit):
            self.partner[src.name] = fit


def _direction_samples(
    src: Source | ClipSource, out: Path, stem: str, base: dict[str, Any], done: dict[tuple[str, str], Any]
) -> list[Sample]:
    """Reversed clips: forward (a copy of the source) and reverse, each asked the direction MCQ and, when the
    source has steps, the free description; asked only when the reversed video was made."""
    pair: list[tuple[str, VideoRef, str | None]] = []
    if (src.name, "reverse") in done:  # the direction is asked only beside the reversed video
        fwd_rel = f"videos/{stem}-forward.mp4"
        shutil.copyfile(src.video, out / fwd_rel)
        rev_meta, rev_ref = done[src.name, "reverse"]
        pair = [("forward", video_ref(out, fwd_rel), None), ("reverse", rev_ref, rev_meta.spec_id)]
    samples: list[Sample] = []
    for direction, ref, spec_id in pair:
        shown = list(src.steps) if direction == "forward" else list(reversed(src.steps))
        letter = LETTERS[P.DIRECTION_OPTIONS.index("forward" if direction == "forward" else "in reverse")]
        common = {**base, "direction": direction, "shown": shown, "perturbation": spec_id}
        samples.append(
            _sample(
                f"{stem}-direction-{direction}",
                ref,
                "direction",
                {**common, "options": list(P.DIRECTION_OPTIONS), "chance": 0.5},
                P.direction_prompt(),
                letter,
            )
        )
        if src.steps:  # the direction judge reads the steps in the order shown
            samples.append(
                _sample(
                    f"{stem}-describe-{direction}",
                    ref,
                    "describe",
                    {**common, "options": None, "chance": None},
                    P.describe_prompt(),
                    P.sequence_text(shown),
                )
            )
    return samples


def _gap_samples(
    src: Source | ClipSource,
    stem: str,
    base: dict[str, Any],
    done: dict[tuple[str, str], Any],
    gap_plan: tuple[int, list[str], list[str]],
) -> list[Sample]:
    """Temporal gap: one middle step removed, asked as the 4-way MCQ and the one-sentence summary."""
    missing, options, kinds = gap_plan
    gap, gap_ref = done[src.name, "gap"]
    visible = [s for i, s in enumerate(src.steps) if i != missing]
    gcommon = {
        **base,
        "shown": visible,
        "missing_action": gap.info["label"],
        "missing_index": missing,
        "removed": gap.info["removed"],
        "visible_summary": P.visible_summary(visible),
        "perturbation": gap.spec_id,
    }
    return [
        _sample(
            f"{stem}-gap-mcq",
            gap_ref,
            "gap_mcq",
            {**gcommon, "options": options, "option_kinds": kinds, "chance": 0.25},
            P.gap_mcq_prompt(options),
            LETTERS[kinds.index("visible")],
        ),
        _sample(
            f"{stem}-gap-summary",
            gap_ref,
            "gap_summary",
            {**gcommon, "options": None, "chance": None},
            P.GAP_SUMMARY_PROMPT,
            P.visible_summary(visible),
        ),
    ]


def _anomaly_samples(
    src: Source | ClipSource,
    stem: str,
    base: dict[str, Any],
    done: dict[tuple[str, str], Any],
    other: Source | ClipSource | None,
) -> list[Sample]:
    """Anomaly injection: one video per anomaly that was made, its descriptor from the op's own metadata."""
    samples: list[Sample] = []
    for op in ANOMALIES:
        if (src.name, f"anomaly-{op}") not in done:
            continue
        meta, ref = done[src.name, f"anomaly-{op}"]
        desc = descriptor(
            op, meta.info, meta.width, meta.height, other=_other_text(other) if op == "scene_mix" else None
        )
        samples.append(
            _sample(
                f"{stem}-anomaly-{op}",
                ref,
                "anomaly",
                {
                    **base,
                    "anomaly": op,
                    "anomaly_kind": "spatial" if op in SPATIAL else "temporal",
                    "descriptor": desc,
                    "anomaly_info": meta.info,
                    "shown": list(src.steps),
                    "options": None,
                    "chance": None,
                    "perturbation": meta.spec_id,
                    "mixed_with": other.name if op == "scene_mix" and other else None,
                },
                P.anomaly_prompt(op),
                desc,
            )
        )
    return samples


def _other_text(other: Any) -> str:
    if isinstance(other, ClipSource):
        return f"another clip, {other.procedure!r}"
    return f"the {other.procedure} procedure"


def generate(
    out: Path,
    options: GenerateOptions,
    on_progress: Callable[[int, int], None] | None = None,
    *,
    clips: Sequence[Clip] | None = None,
    log: SourceLog | None = None,
) -> Path:
    """The probe's dataset from the synthetic procedures of the options' preset, or from ``clips`` (a user's folder
    or a dataset loader's clips, imported to constant rate first; ``seeds`` then keeps the first N clips). What was
    left out of the clips (by their loader, ``log``, and here) is in ``dataset.json``'s ``source_log``."""
    check_choice("preset", options.preset, PRESETS)
    pre = PRESETS[options.preset]
    seeds, workers, pool = options.seeds, options.workers, options.pool
    out = dataset_dir(out)
    log = log if log is not None else options.source_log()
    if clips is not None:
        clips = list(clips)[:seeds] if seeds is not None else list(clips)
        if len(clips) < 2:
            raise DataError(
                f"the expectation probe needs at least two clips (scene mixing splices in another one); "
                f"got {len(clips)}" + (f" ({log.reasons()})" if log.skipped else "")
            )
    with staging_dir(out) as staging:
        if clips is None:
            sources: list[Any] = synthetic_sources(pre, staging, seeds, workers=workers, pool=pool)
        else:
            sources = import_clips(clips, staging, workers=workers, pool=pool, log=log)
            if len(sources) < 2:
                raise DataError(
                    f"the expectation probe needs at least two clips that import (scene mixing splices "
                    f"in another one); {len(sources)} of {len(clips)} did ({log.reasons()})"
                )
        samples = build(sources, staging, preset=pre.name, on_progress=on_progress, workers=workers, pool=pool, log=log)
        publish(staging, out, samples, force=options.force)
    return write_dataset(
        out,
        samples,
        PROBE,
        preset=pre.name,
        source="synthetic" if clips is None else "clips",
        n_sources=len(sources),
        tasks=list(TASKS),
        anomalies=list(ANOMALIES),
        source_log=None if clips is None else log,
    )
