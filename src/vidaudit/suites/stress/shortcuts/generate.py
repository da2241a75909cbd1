"""``vidaudit generate stress --probe shortcuts``: procedures under the three D.1 conditions.

Each source is a procedure video with annotated, variable-length segments in canonical order (a
synthetic one rendered here, a YouCook2-format video from ``--source``, or a clip of a plain ``--source``
folder with at least four labelled actions in its ``steps.csv``, imported by the stress sources' one
reader). From it:

- ``reordered`` (one video per question): ``shuffle_segments`` with ``query`` = first / last / order, so
  that the queried position differs from the canonical one (the language prior y_LP is then wrong);
- ``blank``: ``blank`` with its own duration (5-60 s in the paper preset, ``--set blank_s=...`` to choose);
- ``unrelated``: ``unrelated`` with the next source's video (another procedure) fitted to this one.

Every video goes through ``apply_perturbation`` (``vidaudit.video.perturb.engine.apply``); the answer key is built from the op's own
metadata (the permutation it applied), never re-derived.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidaudit.sdk import (
    ConfigError,
    DataError,
    PerturbationSpec,
    PoolFactory,
    Sample,
    check_choice,
    dataset_dir,
    rng_from,
    run_jobs,
)
from vidaudit.suites.stress.common import cyclic_offsets
from vidaudit.suites.stress.datasets import clips_from_source
from vidaudit.suites.stress.probe import GenerateOptions, write_dataset
from vidaudit.suites.stress.procedures import (
    PROCEDURES,
    ProcedurePreset,
    apply_job,
    publish,
    render_sources,
    staging_dir,
)
from vidaudit.suites.stress.shortcuts.procedure import Source
from vidaudit.suites.stress.shortcuts.questions import CONDITIONS, LETTERS, QUESTIONS, build_key, prompt_text
from vidaudit.suites.stress.shortcuts.youcook2 import ANNOTATIONS, load_youcook2
from vidaudit.suites.stress.sources import STEPS_CSV, SourceLog, import_clips

PROBE = "shortcuts"
QUERY_OF = {"first": "first", "last": "last", "sequence": "order"}


@dataclass(frozen=True)
class Preset(ProcedurePreset):
    #: the blank durations the blank-screen condition shows
    blank_s: tuple[float, ...]


PRESETS: dict[str, Preset] = {
    "smoke": Preset("smoke", 160, 96, 8.0, 2, 1, (0.5, 0.9), (2.0,)),
    # blank durations: the four the paper names (D.6: humans at 5, 10, 45 and 60 s; Table 22: models at 10 and
    # 45 s) and 20 and 30 s between them (ours: Figure 22's axis is not in the text); every procedure, two seeds
    "paper": Preset("paper", 320, 180, 10.0, len(PROCEDURES), 2, (1.5, 3.5), (5.0, 10.0, 20.0, 30.0, 45.0, 60.0)),
}
#: ``--set blank_s=...``: at most this many durations, each in (0, MAX_BLANK_S] seconds
MAX_BLANKS = 12
MAX_BLANK_S = 600.0


def parse_blank_s(text: str) -> tuple[float, ...]:
    """``--set blank_s=5,10,45,60``: the blank durations (seconds), distinct, in the order given."""
    out: list[float] = []
    for part in text.split(","):
        try:
            v = float(part)
        except ValueError:
            raise ConfigError(
                f"--set blank_s={text!r}: {part.strip()!r} is not a number of seconds (e.g. blank_s=5,10,45,60)"
            ) from None
        if not 0 < v <= MAX_BLANK_S:
            raise ConfigError(f"--set blank_s={text!r}: {v:g} s is outside (0, {MAX_BLANK_S:g}] s")
        if v in out:
            raise ConfigError(f"--set blank_s={text!r}: {v:g} s is given twice")
        out.append(v)
    if len(out) > MAX_BLANKS:
        raise ConfigError(f"--set blank_s={text!r}: {len(out)} durations; at most {MAX_BLANKS}")
    return tuple(out)


MIN_STEPS = 4


def folder_sources(
    folder: Path,
    staging: Path,
    dataset: str | None = None,
    *,
    workers: int | None = 1,
    pool: PoolFactory | None = None,
    log: SourceLog | None = None,
) -> tuple[list[Source], list[str]]:
    """A plain folder of clips with ``DIR/steps.csv`` (or a paper dataset's layout, ``--set dataset=NAME``, through
    ``datasets.clips_from_source``): the clips with at least ``MIN_STEPS`` labelled actions, each imported
    (upright, constant rate on the player's clock) into ``staging/sources``; their actions in time order are
    the canonical order. Also the names of the clips left out (fewer actions); every clip left out (fewer or
    repeated actions, not importable) is named in ``log`` with its reason."""
    log = log if log is not None else SourceLog()
    clips = clips_from_source(folder, dataset, log)
    usable = []
    for c in clips:
        labels = [st.label for st in c.steps]
        if len(c.steps) < MIN_STEPS:
            log.skip(
                c.shown_as,
                f"{len(c.steps)} labelled actions; the shortcuts probe asks about the order of at least {MIN_STEPS}",
            )
        elif len(set(labels)) != len(labels):
            log.skip(
                c.shown_as, f"repeats an action label ({', '.join(labels)}); each step must be told apart by its text"
            )
        else:
            usable.append(c)
    if not usable:
        where = (
            f"in {STEPS_CSV} (columns clip,start_s,end_s,label)"
            if dataset in (None, "folder")
            else f"in its {dataset} annotations"
        )
        raise DataError(
            f"--source {folder}: no clip has at least {MIN_STEPS} labelled actions {where}; the "
            "shortcuts probe asks about the order of labelled steps. Add them, or use a YouCook2-format "
            "folder (youcook2_annotations.json)"
        )
    imported = import_clips(usable, staging, "sources", workers=workers, pool=pool, log=log)
    if len(imported) < 2:
        raise DataError(
            f"--source {folder}: the shortcuts probe needs at least two clips with {MIN_STEPS}+ labelled "
            f"actions (each one's unrelated video is another); {len(imported)} imported ({log.reasons()})"
        )
    origin = "clips" if dataset in (None, "folder") else str(dataset)
    skipped = [c.path.name if origin == "clips" else c.name for c in clips if len(c.steps) < MIN_STEPS]
    return [Source(c.name, c.video, c.steps, c.segments, origin, c.name) for c in imported], skipped


def synthetic_sources(
    pre: Preset, out: Path, seeds: int | None, *, workers: int | None = 1, pool: PoolFactory | None = None
) -> list[Source]:
    rendered = render_sources(pre, seeds, out, stream="shortcuts", workers=workers, pool=pool)
    return [Source(r.name, r.video, r.steps, r.segments, "synthetic", r.procedure) for r in rendered]


def _spec(name: str, **params: Any) -> PerturbationSpec:
    return PerturbationSpec(name=name, params=params)


def _item_seed(*parts: object) -> int:
    return int(rng_from("stress", "shortcuts-item", *parts).integers(0, 2**31 - 1))


#: one item of every source: (video condition, blank duration or None, question), in plan order
Column = tuple[str, float | None, str]


def key_columns(blank_s: tuple[float, ...]) -> list[Column]:
    """Every source's items, in plan order (condition, blank duration, question)."""
    return [
        (cond, dur, q) for cond in CONDITIONS for dur in (blank_s if cond == "blank" else (None,)) for q in QUESTIONS
    ]


def report_cells(columns: list[Column]) -> list[list[Column]]:
    """The sets of items the report scores separately (``report.aggregate``): each (video condition, question),
    each video condition, all of them, and the Blank-Avg of each blank duration (First and Last)."""
    cells = [[c for c in columns if c[0] == vc and c[2] == q] for vc in CONDITIONS for q in QUESTIONS]
    cells += [[c for c in columns if c[0] == vc] for vc in CONDITIONS]
    cells += [list(columns)]
    cells += [
        [c for c in columns if c[0] == "blank" and c[1] == d and c[2] in ("first", "last")]
        for d in dict.fromkeys(c[1] for c in columns if c[0] == "blank")
    ]
    return [c for c in cells if c]


def key_plan(n_sources: int, blank_s: tuple[float, ...]) -> dict[tuple[int, Column], int]:
    """The slot (0-3: A-D) of the correct option of every item, source index x column. Source ``i``'s item of
    column ``c`` is at ``(i + offset[c]) mod 4`` (``common.cyclic_offsets``), so a constant letter is the key of
    at most ``ceil(m / 4)`` of the m items of every cell the report scores (before, item n took ``n mod 4``: 18
    items per source put each (condition, question) cell of the paper preset on two letters)."""
    columns = key_columns(blank_s)
    offsets = cyclic_offsets(n_sources, columns, report_cells(columns), len(LETTERS))
    return {(i, c): (i + offsets[c]) % len(LETTERS) for i in range(n_sources) for c in columns}


def build(
    sources: list[Source],
    out: Path,
    blank_s: tuple[float, ...],
    *,
    preset: str,
    on_progress: Callable[[int, int], None] | None = None,
    workers: int | None = 1,
    pool: PoolFactory | None = None,
) -> list[Sample]:
    """Every (source x condition x question) sample; videos written under ``out/videos``.

    Planned first (each video once: a blank or unrelated video serves the three questions), then one
    ``apply_job`` per video (``core.jobs``), then the samples in plan order from the jobs' metadata."""
    if len(sources) < 2:
        raise ConfigError(
            "the shortcuts probe needs at least two source videos (each one's unrelated video is another source)"
        )
    (out / "videos").mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[Any, ...]] = []
    index: dict[str, int] = {}  # rel -> its job
    items = []
    for si, src in enumerate(sources):
        other = sources[(si + 1) % len(sources)]
        for cond in CONDITIONS:
            durations = blank_s if cond == "blank" else (None,)
            for dur in durations:
                for q in QUESTIONS:
                    tag = f"{cond}" + (f"{dur:g}s" if dur is not None else "")
                    sid = f"stress-shortcuts-{src.name}-{tag}-{q}"
                    seed = _item_seed(src.name, cond, dur, q)
                    if cond == "reordered":
                        rel = f"videos/{sid}.mp4"
                        spec = _spec(
                            "shuffle_segments", segments=[list(s) for s in src.segments], query=QUERY_OF[q], gaps="drop"
                        )
                        second = None
                    else:  # shared by the three questions: made once, with the first question's seed
                        rel = f"videos/stress-shortcuts-{src.name}-{tag}.mp4"
                        spec = _spec("blank", duration_s=dur) if cond == "blank" else _spec("unrelated")
                        second = str(other.video) if cond == "unrelated" else None
                    if rel not in index:
                        index[rel] = len(jobs)
                        jobs.append((str(src.video), spec, str(out), rel, seed, second))
                    items.append((si, src, other, cond, dur, q, sid, rel))
    done = run_jobs(apply_job, jobs, workers=workers, pool=pool, on_progress=on_progress)
    slots = key_plan(len(sources), blank_s)
    samples: list[Sample] = []
    for si, src, other, cond, dur, q, sid, rel in items:
        meta, ref = done[index[rel]]
        shown = [src.steps[j] for j in meta.info["order"]] if cond == "reordered" else None
        key = build_key(
            q, cond, src.steps, shown, rng_from("stress", "shortcuts-key", sid), slot=slots[si, (cond, dur, q)]
        )
        params = {
            "probe": PROBE,
            "source": src.origin,
            "source_name": src.name,
            "procedure": src.procedure,
            "video_condition": cond,
            "question_kind": q,
            "options": list(key.options),
            "option_lp": key.lp,
            "option_abstain": key.abstain,
            "canonical": list(src.steps),
            "shown": shown,
            "blank_s": dur,
            "unrelated_source": other.name if cond == "unrelated" else None,
            "chance": 0.25,
            "preset": preset,
            "perturbation": jobs[index[rel]][1].id,
        }
        samples.append(
            Sample(
                sample_id=sid,
                suite="stress",
                params=params,
                question=prompt_text(q, key.options),
                answer=key.correct,
                video=ref,
            )
        )
    return samples


def generate(out: Path, options: GenerateOptions, on_progress: Callable[[int, int], None] | None = None) -> Path:
    """``options.source``: a YouCook2-format folder (``youcook2_annotations.json``, or ``--set dataset=youcook2``),
    a plain folder of clips with ``steps.csv``, or a paper dataset's layout (``--set dataset``: charades, ego4d,
    ...). ``--set blank_s``: the blank durations (the preset's when not set)."""
    check_choice("preset", options.preset, PRESETS)
    source, dataset = options.source, options.settings.get("dataset")
    workers, pool = options.workers, options.pool
    if dataset is not None and source is None:
        raise ConfigError("--set dataset=NAME names the format of --source DIR; pass --source")
    ds = dataset.strip().lower() if dataset is not None else None
    pre = PRESETS[options.preset]
    blanks = parse_blank_s(options.settings["blank_s"]) if "blank_s" in options.settings else pre.blank_s
    out = dataset_dir(out)
    skipped: list[str] = []
    log = options.source_log()
    with staging_dir(out) as staging:
        if source is not None:
            if ds == "youcook2" or (
                ds is None and ((Path(source) / ANNOTATIONS).is_file() or not Path(source).is_dir())
            ):
                sources = load_youcook2(Path(source), log)
                origin = "youcook2"
                if len(sources) < 2:
                    raise DataError(
                        f"--source {source}: the shortcuts probe needs at least two YouCook2 videos (each "
                        f"one's unrelated video is another); {len(sources)} usable ({log.reasons()})"
                    )
            else:
                sources, skipped = folder_sources(Path(source), staging, ds, workers=workers, pool=pool, log=log)
                origin = sources[0].origin
        else:
            sources = synthetic_sources(pre, staging, options.seeds, workers=workers, pool=pool)
            origin = "synthetic"
        samples = build(sources, staging, blanks, preset=pre.name, on_progress=on_progress, workers=workers, pool=pool)
        publish(staging, out, samples, force=options.force)
    return write_dataset(
        out,
        samples,
        PROBE,
        preset=pre.name,
        source=origin,
        n_sources=len(sources),
        conditions=list(CONDITIONS),
        questions=list(QUESTIONS),
        blank_s=list(blanks),
        skipped_clips=skipped,
        source_log=None if source is None else log,
    )
