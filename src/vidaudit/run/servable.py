"""The plan's servability checks: what is refused before any call, with every reason at once.

A perturbed trial is refused when the suite does not say its ground truth survives the ops (``plan_perturbed``)
or, for a masked video, when the frames a model will be sent leave a strip unseen (``coverage_refusals``,
unless the dataset opted in: ``partial_coverage_allowed``); a trial a model cannot serve (native video to a
frames-only model, more images than it takes, zero frames) is refused by ``servable_problems``; a video that is
not the one its manifest describes by ``check_videos``. ``run/plan.py`` gathers the lines and raises them
together (``raise_refusals``, ``raise_unservable``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import ConfigError
from vidaudit.core.manifest import external_videos_allowed
from vidaudit.core.types import Condition, Presentation, Sample, VideoRef
from vidaudit.models.base import Capabilities, native_fps_problem
from vidaudit.run.perturbed import PerturbedInput, plan_chain
from vidaudit.video.facts import check_video_file, resolve_video
from vidaudit.video.perturb.integration import check_strip_coverage
from vidaudit.video.sampling import FrameSelection


def raise_refusals(refused: list[str]) -> None:
    if refused:
        uniq = list(dict.fromkeys(refused))
        more = f"\n  ... and {len(uniq) - 10} more" if len(uniq) > 10 else ""
        raise ConfigError(
            f"{len(uniq)} perturbed trial(s) are refused before any call:\n  " + "\n  ".join(uniq[:10]) + more
        )


def plan_perturbed(sample: Sample, condition: Condition, suite: Suite, refused: list[str]) -> PerturbedInput | None:
    """The chain of ``condition`` on ``sample``, or None with the reason appended to ``refused``: the suite
    must say that the sample's ground truth survives every op (``Suite.perturbation_problem``)."""
    for spec in condition.perturbations:
        why = suite.perturbation_problem(sample, spec)
        if why:
            refused.append(f"{sample.sample_id} under {condition.id}: {why}")
            return None
    try:
        return plan_chain(sample, condition.perturbations)
    except ConfigError as e:
        refused.append(f"{sample.sample_id} under {condition.id}: {e}")
        return None


def partial_coverage_allowed(sample: Sample) -> bool:
    """Whether the dataset opted in to masked trials that may leave strips unseen (``params.strip_coverage`` =
    "partial": a generator's explicit setting, e.g. cross_frame's ``--set sampling=paper``, which records the
    coverage and warns); every other masked trial must show every strip (``coverage_refusals``)."""
    return sample.params.get("strip_coverage") == "partial"


def coverage_refusals(
    sample: Sample, condition: Condition, model: str, pin: PerturbedInput, sel: FrameSelection
) -> list[str]:
    """``check_strip_coverage`` on the output frames this model will be sent, as refusal lines."""
    problems = check_strip_coverage(pin.coverage_meta(), sel.indices)
    if not problems:
        return []
    return [
        f"{sample.sample_id} under {condition.id} for {model}: {'; '.join(problems)}. Send every masked "
        f"frame (frames@{pin.video.fps:g} or native@all) or a rate whose stride shares no factor with the "
        f"{pin.strip_info['n_sets']} coverage sets"  # type: ignore[index]
    ]


def servable_problems(
    inputs: Iterable[tuple[str, Condition, Sample, FrameSelection, VideoRef]], caps_by_model: Mapping[str, Capabilities]
) -> list[str]:
    """What ``check_servable`` refuses, from (model label, condition, sample, selection, video) of each trial."""
    seen: set[tuple[str, str]] = set()
    problems = []
    ids: dict[int, tuple[Condition, str]] = {}  # each condition object's id, computed once (a plan shares them)
    for label, cond, sample, sel, video in inputs:
        caps = caps_by_model[label]
        n = len(sel)
        got = ids.get(id(cond))
        if got is None or got[0] is not cond:
            got = ids[id(cond)] = (cond, cond.id)
        if n == 0:
            problems.append(f"{sample.sample_id} under {cond.id} would send zero frames")
        if (label, got[1]) in seen and (
            cond.presentation is Presentation.NATIVE
            or not caps.images
            or caps.max_images is None
            or n <= caps.max_images
        ):
            continue  # what is checked once per (model, condition) is done, and this sample passes the rest
        if cond.presentation is Presentation.NATIVE:
            if (label, cond.id) not in seen and not caps.native_video:
                problems.append(f"{label} cannot take native video (condition {cond.id}); use frames@K instead")
            fps = video.fps if cond.all_frames else float(cond.fps or 0.0)
            if (label, cond.id) not in seen and (msg := native_fps_problem(caps, fps, label, cond.id)):
                problems.append(msg)
        elif not caps.images:
            if (label, cond.id) not in seen:
                problems.append(
                    f"{label} takes the video itself, not frames as images (condition {cond.id}); "
                    "use a native condition, e.g. --condition native@1"
                )
        elif caps.max_images is not None and n > caps.max_images:
            problems.append(
                f"{label} takes at most {caps.max_images} images per request but {cond.id} sends "
                f"{n} for {sample.sample_id}; lower K or use native video"
            )
        seen.add((label, cond.id))
    return problems


def raise_unservable(problems: list[str]) -> None:
    if problems:
        uniq = list(dict.fromkeys(problems))
        if len(uniq) == 1:
            raise ConfigError(f"the plan has trials a model cannot serve: {uniq[0]}")
        raise ConfigError("the plan has trials these models cannot serve:\n  " + "\n  ".join(uniq[:10]))


def check_videos(samples: Sequence[Sample], data_dir: Path, *, allow_external: bool | None = None) -> None:
    """Before any paid call: every video lies inside the dataset (unless allowed), has the manifest's sha256, and
    shows what the manifest says (rate, frame count and times, displayed size, rotation), read from the file.

    ``allow_external`` None: as the dataset's ``dataset.json`` says (``"external_videos": true``, written by
    importers that leave the videos where they are)."""
    if allow_external is None:
        allow_external = external_videos_allowed(data_dir)
    for s in samples:
        path = resolve_video(data_dir, s.video.path, allow_external=allow_external, who=s.sample_id)
        check_video_file(path, s.video, who=s.sample_id)
