"""The report stage: a typed ``Report`` from score records, through the suite's own aggregation.

The suite supplies the numbers and sections; this stage adds provenance (suite, versions, git
revision, creation time, the settings sent to each model), the one statement of denominators a
reader needs, and the trace viewer's trials with thumbnails of the frames actually sent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vidaudit import __version__
from vidaudit.core import registry
from vidaudit.core.confine import confined
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Figure, Report, Section, ViewerTrial
from vidaudit.core.contract.suite import AggregateInput
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.gcpause import paused_gc
from vidaudit.core.hashing import sha256_file
from vidaudit.core.types import VideoRef, names_perturbations
from vidaudit.core.versions import source_revision
from vidaudit.report.headline import headline_from_records, role_rank
from vidaudit.report.html import figure_drawer
from vidaudit.report.viewer import attach_thumbnails, select_trials_for_viewer, thumbnail_jpeg_b64
from vidaudit.report.write import write_report
from vidaudit.score.human import performance_records
from vidaudit.score.scored_run import SCORED_RUN, Scored, read_scored_run
from vidaudit.score.stage import score_and_write, score_responses, write_scores
from vidaudit.score.summary import parse_failure_notes
from vidaudit.video.decode import iter_selected
from vidaudit.video.perturb.engine import PerturbMeta, PerturbResult

MAX_VIEWER_FRAMES = 24
#: the viewer's thumbnails, in pixels wide
THUMBNAIL_WIDTH = 160
#: ``progress(step, done, total)``: what the report stage is doing, for a progress display (total None: unknown)
Progress = Callable[[str, int, "int | None"], None]


def denominators_note(scored: Scored) -> str:
    """The rule for errored trials (and for answers that need a judge), stated once where a reader looks first."""
    n = len(scored.records)
    by = Counter(r.status for r in scored.records if r.status != "ok")
    unjudged = sum(r.needs_judge for r in scored.records)
    judge = (
        (
            f" {unjudged} answers need a judge the run did not have (vidaudit run --judge SPEC): they are in no "
            "figure's denominator, as a pass or a fail, and each figure counts them beside it."
        )
        if unjudged
        else ""
    )
    if not by:
        every = (
            "every accuracy is over all of them" if not unjudged else f"every accuracy is over the other {n - unjudged}"
        )
        return f"All {n} planned trials completed (status ok); {every}.{judge}"
    parts = ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
    return (
        f"{sum(by.values())} of {n} planned trials did not complete ({parts}). Accuracy (EM) counts every "
        f"planned trial, so these count as wrong answers; completion rates are listed beside it.{judge}"
    )


def design_note(design: dict[str, Any]) -> str:
    """What a sequential design ran and saved, and what that means for the numbers."""
    full, planned = int(design.get("full_grid_trials") or 0), int(design.get("trials_planned") or 0)
    pct = f"{100 * planned / full:.1f}%" if full else "n/a"
    state = "" if design.get("complete", True) else " The design is not finished: resume the run to complete it."
    return (
        f"{design.get('name')} design (rule {design.get('rule')}): {planned} of the full grid's {full} trials were "
        f"planned ({pct}; {full - planned} saved). Trials it never ran are not planned: they are in no "
        f"denominator. {design.get('note', '')}{state}"
    ).strip()


def build_report(scored: Scored) -> Report:
    """Aggregate through the suite and wrap the result with its provenance."""
    suite = scored.suite
    # human answers reach the suite's aggregation beside the models' (AggregateInput.human; model_role "human")
    human = performance_records(scored.human)
    # a suite that reads per-stage usage (``capabilities.needs_usage``) gets the store's summary; every report carries it
    usage = scored.stage_usage if suite.capabilities.needs_usage else {}
    with paused_gc():  # one pass over every record (core/gcpause)
        sr = suite.aggregate(AggregateInput(scored.records, scored.samples, usage, human=human))
    head, dirty = source_revision()
    notes = [denominators_note(scored)]
    notes += coverage_notes(scored)
    if scored.changed:
        notes.append(
            f"{len(scored.changed)} sample(s) changed since their trials ran and were scored against the "
            f"current data (--allow-changed): {', '.join(scored.changed[:10])}"
        )
    for model, n in sorted(scored.estimated_frames.items()):
        notes.append(
            f"{model}: in {n} trial(s) the service sampled the video itself, so the frames recorded (and "
            "shown in the viewer) are vidaudit's estimate of what it saw, not a record"
        )
    if scored.design:
        notes.append(design_note(scored.design))
    notes += parse_failure_notes(scored.records)
    notes += list(sr.notes)
    roles = {r.model: r.model_role for r in scored.records}
    headline = sr.headline or headline_from_records("Accuracy over every planned trial", scored.records)
    return Report(
        suite=suite.name,
        vidaudit_version=__version__,
        git_revision=head,
        git_dirty=dirty,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        source=dict(scored.source),
        models=list(dict.fromkeys(r.model for r in scored.records)),
        conditions=list(dict.fromkeys(r.condition for r in scored.records)),
        settings=dict(scored.settings),
        n_records=len(scored.records),
        headline=headline,
        notes=notes,
        sections=[*(references_last(s, roles) for s in sr.sections), *_tool_sections(scored)],
        results=_with_human(sr.results, scored)
        | ({"design": dict(scored.design)} if scored.design else {})
        | ({"stage_usage": scored.stage_usage} if scored.stage_usage else {}),
    )


def references_last(section: Section, roles: dict[str, str]) -> Section:
    """The section with the figures of reference models (oracle, chance, observers, ...) after those of the
    models under test: a figure grouped under a model (``group[0]``) takes that model's role's place."""

    def rank(fig: Figure) -> int:
        return role_rank(roles.get(fig.group[0])) if fig.group and fig.group[0] in roles else 0

    if not section.figures:
        return section
    ordered = sorted(section.figures, key=rank)  # stable: the suite's order within a role
    return section if ordered == list(section.figures) else section.model_copy(update={"figures": ordered})


def _tool_sections(scored: Scored) -> list[Section]:
    """The sections the tools add (the mechanism probes' outputs, an imported human study), through the registry."""
    return [
        s for name in registry.in_order("report_sections") for s in registry.resolve("report_sections", name)(scored)
    ]


def _with_human(results: dict[str, Any], scored: Scored) -> dict[str, Any]:
    return {**results, "human_study": scored.human_study} if scored.human_study is not None else dict(results)


def with_verdict(trial: ViewerTrial, verdict: str | None) -> ViewerTrial:
    """The judge's verdict shown beside the answer it judged (a fact of the trial)."""
    if verdict is None:
        return trial
    return trial.model_copy(update={"facts": [*trial.facts, ("judge verdict", verdict)]})


def viewer_trials(
    scored: Scored, max_frames: int = MAX_VIEWER_FRAMES, *, progress: Progress | None = None
) -> list[ViewerTrial]:
    """The trials the viewer keeps (a selection), with thumbnails of the frames that were sent.

    The frames are the scored file's record of what each trial sent; each video is read once, for every frame the
    chosen trials show from it, by the seeking reader (``video.decode.iter_selected``: it decodes only the groups of
    pictures that hold one, never the whole video), and each (video, frame) is drawn once, however many trials
    sent it."""
    suite = scored.suite
    items = [
        with_verdict(
            suite.viewer_trial(r, scored.samples[r.sample_id], scored.raw_text.get(r.trial_id)),
            scored.judgements.get(r.trial_id),
        )
        for r in scored.records
    ]
    chosen = select_trials_for_viewer(items)
    if scored.data_dir is None:
        return chosen
    if progress is not None:
        progress("thumbnails", 0, None)
    records = {r.trial_id: r for r in scored.records}
    checked: set[Path] = set()
    shown: list[
        tuple[str, list[tuple[int, float]], PerturbMeta | None, list[tuple[int, float]]] | None
    ] = []  # per chosen trial: what it shows
    videos: dict[str, tuple[Path, int | None, set[int]]] = {}  # key -> (file, stream, frames to draw)
    for t in chosen:
        sent = scored.frames.get(t.trial_id) or []
        if not sent:
            shown.append(None)
            continue
        step = max(1, -(-len(sent) // max_frames))  # thin before decoding: a native trial lists every frame
        pick = sent[::step][:max_frames]
        s = scored.samples[t.sample_id]
        path, sha, meta = scored.data_dir / s.video.path, s.video.sha256, None
        stream = s.video.stream
        if path not in checked:  # thumbnails must be the frames the model saw: the same bytes
            check_unchanged(path, s.video, who=s.sample_id)
            checked.add(path)
        pert = perturbed_video(scored, records[t.trial_id])
        if pert is not None:  # the frames sent are frames of the perturbed video
            path, sha, meta = pert
            stream = None  # a perturbed video has one stream
        key = (sha or str(Path(path).resolve())) + ("" if stream is None else f"#{stream}")
        videos.setdefault(key, (path, stream, set()))[2].update(i for i, _ in pick)
        shown.append((key, pick, meta, sent))
    thumbs: dict[tuple[str, int], str] = {}  # (video, frame) -> JPEG: models and conditions share frames
    for n, (key, (path, stream, frames)) in enumerate(videos.items()):
        if progress is not None:
            progress("thumbnails", n, len(videos))
        # decoded on this thread (less CPU than the decoder's threads) and scaled from the planes
        for i, img in iter_selected(path, sorted(frames), threaded=False, width=THUMBNAIL_WIDTH, stream=stream):
            thumbs[(key, i)] = thumbnail_jpeg_b64(img, width=THUMBNAIL_WIDTH)
    out = []
    for t, what in zip(chosen, shown, strict=True):
        if what is not None:
            key, pick, meta, sent = what
            t = attach_thumbnails(t, [(i, ft, thumbs[(key, i)]) for i, ft in pick], max_frames=max_frames)
            if meta is not None and meta.op == "strip_mask":
                t = t.model_copy(
                    update={"facts": [*t.facts, *strip_facts(meta, [i for i, _ in sent], [f.index for f in t.frames])]}
                )
        out.append(t)
    return out


def check_unchanged(path: Path, ref: VideoRef, *, who: str) -> None:
    """The video still has the sha256 the run recorded; a video edited in place since is refused."""
    if ref.sha256 is None or not path.is_file():
        raise DataError(
            f"{path} (the video of {who}) is missing; the report shows the frames the model was sent, "
            "so restore the dataset the run used (or pass a run whose data is there)"
        )
    if sha256_file(path) != ref.sha256:
        raise DataError(
            f"{path} (the video of {who}) changed since the run: its sha256 is not the one the run "
            "recorded, so its frames are not what the model saw. Restore the original file, or run "
            "the models again on the new one"
        )


def perturbed_video(scored: Scored, record: ScoreRecord) -> tuple[Path, str, PerturbMeta] | None:
    """The perturbed video a trial's frames were taken from (path, sha256, its perturbation metadata), as the
    scored file records it; None for a trial of an unperturbed condition. The video must still have the recorded
    sha256 (the frames drawn are the frames the model saw), and its metadata is read from the content cache's
    entry beside it. A run-scored trial whose condition names perturbations but has no record (a file scored by an
    older vidaudit) is refused, never drawn from the source video."""
    found = scored.perturbed.get(record.trial_id)
    run_dir = scored.source.get("run_dir")
    if found is None:
        if run_dir and names_perturbations(record.condition):
            raise DataError(
                f"{run_dir}/{SCORED_RUN} does not record the perturbed video of trial {record.trial_id} "
                f"({record.condition}): it was scored by an older vidaudit; run `vidaudit score "
                f"{run_dir}` (or `vidaudit report --rescore {run_dir}`)"
            )
        return None
    if not run_dir:
        raise DataError(f"trial {record.trial_id} records a perturbed video but the scored run names no run dir")
    path = confined(Path(run_dir), found.path, what="perturbed video", source=f"{run_dir}/{SCORED_RUN}")
    if not path.is_file() or sha256_file(path) != found.sha256:
        why = "is missing" if not path.is_file() else "changed since the run scored it (its sha256 differs)"
        raise DataError(
            f"{path} (the perturbed video trial {record.trial_id} was sent frames of) {why}; run "
            f"`vidaudit report --rescore {run_dir}` to render it again from the source video"
        )
    meta = PerturbResult.load(path.with_suffix(".json")).meta
    if meta.sha256 != found.sha256:
        raise DataError(
            f"{path.with_suffix('.json')} describes another video than {path}; run `vidaudit report "
            f"--rescore {run_dir}` to render it again"
        )
    return path, found.sha256, meta


def strip_facts(meta: PerturbMeta, sent: list[int], shown: list[int | None]) -> list[tuple[str, str]]:
    """Which strips the frames sent made visible: overall coverage, and the set of each thumbnail."""
    sets, n_sets, S = meta.info["sets"], int(meta.info["n_sets"]), int(meta.info["S"])
    set_index = meta.map["set_index"]
    seen = sorted({set_index[i] for i in sent if 0 <= i < len(set_index)})
    n_vis = len({j for c in seen for j in sets[c]})
    per = [
        f"#{i}: set {set_index[i]} ({len(sets[set_index[i]])} strips: "
        f"{', '.join(map(str, sorted(sets[set_index[i]])[:6]))}...)"
        for i in shown
        if i is not None and 0 <= i < len(set_index)
    ]
    return [
        (
            "strips visible",
            f"{n_vis} of {S} strips over the {len(sent)} frames sent (coverage sets "
            f"{seen} of {n_sets}; {meta.info['orientation']}, k={meta.info['k']}, "
            f"delta={meta.info['delta']})",
        ),
        ("strips per frame shown", "; ".join(per)),
    ]


def write_scored_report(
    scored: Scored, out_dir: str | Path, *, figures: str = "svg", progress: Progress | None = None
) -> dict[str, Path]:
    figure_drawer(figures)  # a wrong --figures is refused before any work

    if progress is not None:
        progress("aggregating", 0, None)
    report = build_report(scored)
    trials = viewer_trials(scored, progress=progress)
    return write_report(
        report,
        trials,
        scored.suite.viewer,
        Path(out_dir),
        n_trials_total=len(scored.records),
        figures=figures,
        progress=progress,
    )


def scored_for_report(
    run_dir: str | Path, *, rescore: bool = False, allow_changed: bool = False, progress: Progress | None = None
) -> Scored:
    """What ``score`` wrote (``RUN/scored_run.jsonl``). ``rescore`` scores the store again first (and rewrites
    the scored files); so does a run that was never scored. A scored file that is stale or of another version
    is refused with the fix; ``allow_changed`` is a scoring option, so it asks for a scoring step."""
    run_dir = Path(run_dir)
    if rescore or not (run_dir / SCORED_RUN).is_file():
        if progress is not None:
            progress("scoring", 0, None)
        return score_and_write(run_dir, allow_changed=allow_changed)[1]
    if allow_changed:
        raise ConfigError(
            f"--allow-changed is a scoring option and {run_dir / SCORED_RUN} is already scored: pass "
            "--rescore with it (or run `vidaudit score --allow-changed RUN` first)"
        )
    if progress is not None:
        progress("reading scores", 0, None)
    scored = read_scored_run(run_dir)
    return scored


def report_run(
    run_dir: str | Path,
    *,
    allow_changed: bool = False,
    rescore: bool = False,
    figures: str = "svg",
    progress: Progress | None = None,
) -> dict[str, Path]:
    """Write ``RUN/report/report.{json,md,html}`` from what ``score`` wrote (see :func:`scored_for_report`);
    ``figures``: ``svg`` (drawn in the page from the numbers) or ``png`` (matplotlib, for papers).

    ``progress(step, done, total)`` is told each step as it goes ("reading scores" or "scoring",
    "aggregating", "thumbnails", "figures", "writing"; ``total`` None when unknown), for a progress display.
    """
    figure_drawer(figures)  # a wrong --figures is refused before any work
    run_dir = Path(run_dir)
    scored = scored_for_report(run_dir, rescore=rescore, allow_changed=allow_changed, progress=progress)
    return write_scored_report(scored, run_dir / "report", figures=figures, progress=progress)


def report_responses(
    samples: str | Path,
    responses: str | Path,
    out: str | Path,
    report_dir: str | Path | None,
    *,
    suite: str | None = None,
    dedupe: str | None = None,
) -> tuple[Path, dict[str, Path] | None, list[str]]:
    """``score-responses``: scores.jsonl at ``out``, with ``report_dir`` the three report files, and the notes to
    print beside the scores (a model and condition that answered part of the manifest: ``Scored.unanswered``)."""
    scored = score_responses(samples, responses, suite=suite, dedupe=dedupe)
    # the report renders fully before any file is written, so a failure leaves nothing half-made
    paths = write_scored_report(scored, report_dir) if report_dir is not None else None
    return write_scores(out, scored.records), paths, coverage_notes(scored)


def coverage_notes(scored: Scored) -> list[str]:
    """One line per model and condition of scored responses that left samples of the manifest unanswered."""
    return [u.note(who) for who, u in sorted(scored.unanswered.items())]
