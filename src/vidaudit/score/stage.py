"""The score stage: typed score records from a run store or from another harness's responses.

Scoring reads stored text only and never calls a model. The suite is looked up by name (from
``run.json`` for a run, ``--suite`` for responses); every trial of the run gets a record, errored and
never-attempted ones included (status ``api_error`` / ``refused`` / ``timeout`` / ``pending``,
``correct`` None), so that every denominator keeps them.

A stored trial is scored only against the sample it ran on: when the dataset now holds a different
video, question, answer or trace than the run's snapshot (``RUN/samples.jsonl``; for runs without
one, the video sha256 each trial recorded), or a video file edited in place (its bytes no longer have the
manifest's sha256), the stage refuses, naming the samples, unless
``allow_changed`` scores them against the current data (they are then named in the report).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.suite import ScoreInput, Suite
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.fileio import read_jsonl_objects, write_text_atomic
from vidaudit.core.gcpause import paused_gc
from vidaudit.core.hashing import sha256_file, sha256_json
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite, resolve
from vidaudit.core.types import PerturbationSpec, Sample
from vidaudit.models.judged import JUDGE_STAGE
from vidaudit.run.perturbed import PERTURB_CACHE, plan_chain, render
from vidaudit.run.runconfig import RunConfig
from vidaudit.run.snapshot import changed_samples, read_snapshot
from vidaudit.run.store.reader import StoreReader
from vidaudit.score.human import load_human
from vidaudit.score.scored_run import (
    SCORES,
    PerturbedVideo,
    Scored,
    Unanswered,
    run_stamp,
    scores_text,
    write_scored_run,
)


def model_role(provider: str) -> str:
    """A provider's role (``model`` unless a baseline says otherwise), read from its registered class."""
    try:
        return str(getattr(resolve("providers", provider), "role", "model"))
    except ConfigError:
        return "model"  # unknown or not installed here: a model as far as the report is concerned


def record(
    suite: Suite,
    sample: Sample,
    *,
    trial_id: str,
    model: str,
    role: str,
    condition: str,
    status: str,
    text: str | None,
    usage: Mapping[str, int] | None = None,
    cost_usd: float | None = None,
    frame_times: Sequence[float] | None = None,
    judgement: str | None = None,
) -> ScoreRecord:
    """Score one trial into its record (``judgement``: the judge's verdict, for suites that judge)."""
    ts = suite.score(
        ScoreInput(
            sample,
            text if status == "ok" else None,
            status,
            frame_times=frame_times,
            judgement=judgement if suite.capabilities.judges else None,
        )
    )
    return ScoreRecord(
        trial_id=trial_id,
        sample_id=sample.sample_id,
        suite=suite.name,
        model=model,
        model_role=role,
        condition=condition,
        group_id=sample.group_id,
        status=status,
        correct=ts.correct if status == "ok" else None,
        parse=ts.parse if status == "ok" else None,
        params=suite.record_params(sample),
        metrics=ts.metrics if status == "ok" else {},
        usage=dict(usage or {}),
        cost_usd=cost_usd,
    )


def judge_verdict(store: Any, att: Any) -> str | None:
    """The judge's stored verdict text for an ok attempt of a judged trial (None: not judged)."""
    for ref in store.attempt_stages(att.trial_id, att.attempt) or []:
        if ref.stage == JUDGE_STAGE:
            call = store.ok_stage_call(ref.call_key)
            return call.response.text if call is not None and call.response is not None else None
    return None


DIRECT = "direct"
_USAGE_KEYS = (
    "uses",
    "calls",
    "frames_used",
    "frames_sent",
    "input_tokens_used",
    "output_tokens_used",
    "input_tokens_sent",
    "output_tokens_sent",
)


def _frames_in(fingerprint: Mapping[str, Any]) -> int:
    """Frames a stored sub-request carried: its images, plus the frames of any video part."""
    return sum(
        1 if "image" in p else len(p.get("frame_indices") or []) if "video" in p else 0
        for p in fingerprint.get("parts") or []
    )


def _add_latency(block: dict[str, Any], new: bool, seconds: float | None) -> None:
    block["used_s"] = block.get("used_s", 0.0) + float(seconds or 0.0)
    if new:
        block.setdefault("sent", []).append(float(seconds or 0.0))


def _add_use(block: dict[str, int], key: str, seen: set[str], frames: int, usage: Any) -> None:
    ti, to = int(usage.input_tokens or 0), int(usage.output_tokens or 0)
    block["uses"] += 1
    block["frames_used"] += frames
    block["input_tokens_used"] += ti
    block["output_tokens_used"] += to
    if key not in seen:  # a call made (content-unique): what the system spent, counted once
        seen.add(key)
        block["calls"] += 1
        block["frames_sent"] += frames
        block["input_tokens_sent"] += ti
        block["output_tokens_sent"] += to


def stage_usage(store: Any, rows: Sequence[tuple[Any, Any]]) -> dict[str, dict[str, Any]]:
    """Per model label and condition: the trials scored and, per stage, ``uses`` (stage uses by those trials'
    scored attempts, cache hits included), ``calls`` (distinct calls by content: what the system spent had it run
    alone), frames and input/output tokens both ways (``*_used`` over uses, ``*_sent`` over calls). A plain
    model's trial is one use of the stage ``direct`` (its frames: the frames the attempt sent). Beside ``stages``,
    ``latency`` per stage: ``used_s`` (seconds summed over uses), ``calls``, ``sent_s`` and ``median_s`` (over
    distinct calls; the faithful suite's latency split reads them). Only the scored
    (latest) attempt of each trial is counted; failed earlier attempts are in the store, not here."""
    by_key: dict[str, Any] = {}
    for c in store.stage_calls():
        if c.response is not None and c.status.value == "ok":
            by_key.setdefault(c.call_key, c)
    out: dict[str, dict[str, Any]] = {}
    seen: dict[tuple[str, str, str], set[str]] = {}
    for row, att in rows:
        if att is None:
            continue
        sys_ = out.setdefault(row.model, {}).setdefault(row.condition_id, {"n_trials": 0, "stages": {}})
        sys_["n_trials"] += 1
        refs = store.attempt_stages(row.trial_id, att.attempt)
        lat = sys_.setdefault("latency", {})  # per stage: seconds summed over uses and over distinct calls
        if refs is None:
            if att.response is not None:
                block = sys_["stages"].setdefault(DIRECT, dict.fromkeys(_USAGE_KEYS, 0))
                key, k = (row.model, row.condition_id, DIRECT), row.trial_id
                _add_latency(lat.setdefault(DIRECT, {}), k not in seen.get(key, set()), att.response.latency_s)
                _add_use(block, k, seen.setdefault(key, set()), len(att.frame_indices), att.response.usage)
            continue
        for ref in refs:
            call = by_key.get(ref.call_key)
            if call is None or call.response is None:
                continue
            block = sys_["stages"].setdefault(ref.stage, dict.fromkeys(_USAGE_KEYS, 0))
            key = (row.model, row.condition_id, ref.stage)
            _add_latency(
                lat.setdefault(ref.stage, {}), ref.call_key not in seen.get(key, set()), call.response.latency_s
            )
            _add_use(block, ref.call_key, seen.setdefault(key, set()), _frames_in(call.request), call.response.usage)
    for conds in out.values():
        for sys_ in conds.values():
            for b in (sys_.get("latency") or {}).values():
                sent = sorted(b.pop("sent", []))
                b.update(calls=len(sent), sent_s=sum(sent), median_s=statistics.median(sent) if sent else None)
    return out


def edited_in_place(data_dir: Path, samples: Mapping[str, Sample], ids: set[str]) -> list[str]:
    """Samples (of ``ids``) whose video file no longer has the manifest's sha256: edited in place after the run,
    the manifest untouched (the run checked every file before sending it). A missing file is left to the
    stages that read the video (the report's thumbnails); only regular files are read."""
    out = []
    for sid in sorted(ids):
        s = samples.get(sid)
        if s is None or s.video.sha256 is None:
            continue
        path = data_dir / s.video.path
        if path.is_file() and sha256_file(path) != s.video.sha256:
            out.append(sid)
    return out


class PerturbedVideos:
    """The perturbed video each trial of a perturbed condition was sent frames of, as the run rendered it into its
    content cache (``RUN/perturbed/``, rebuilt there if it was deleted): what the scored file records, so that the
    report draws those trials' thumbnails from it without the run's machinery. One lookup per (sample, chain)."""

    def __init__(self, run_dir: Path, data_dir: Path) -> None:
        self.run_dir, self.data_dir = run_dir, data_dir
        self._found: dict[str, PerturbedVideo] = {}

    def __call__(self, sample: Sample, chain: tuple[PerturbationSpec, ...]) -> PerturbedVideo:
        pin = plan_chain(sample, chain)
        hit = self._found.get(pin.sha256)
        if hit is None:
            video, sha, _ = render(self.data_dir / sample.video.path, pin, self.run_dir / PERTURB_CACHE)
            hit = self._found[pin.sha256] = PerturbedVideo(
                path=Path(video).relative_to(self.run_dir).as_posix(), sha256=sha
            )
        return hit


def score_store(run_dir: str | Path, *, allow_changed: bool = False) -> Scored:
    """Score every trial of a run directory (see the module docstring)."""
    run_dir = Path(run_dir)
    rc = RunConfig.load(run_dir)
    suite = get_suite(rc.suite)
    loaded = load_samples(rc.data_dir)
    suite.check_samples(loaded, rc.data_dir)
    samples = {s.sample_id: s for s in loaded}
    out = Scored(
        suite=suite,
        records=[],
        samples=samples,
        source={"run_dir": str(run_dir)},
        data_dir=Path(rc.data_dir),
        design=dict(rc.design),
    )
    roles: dict[str, str] = {}
    changed: list[str] = []
    snapshot = read_snapshot(run_dir)
    perturbed = PerturbedVideos(run_dir, Path(rc.data_dir))
    judging = suite.capabilities.judges
    with StoreReader(run_dir) as store, paused_gc():  # a record per trial, all kept (core/gcpause)
        rows = list(store.results())
        differ = set(changed_samples(snapshot, samples, (r.sample_id for r, _ in rows))) if snapshot else set()
        edited = edited_in_place(Path(rc.data_dir), samples, {r.sample_id for r, _ in rows})
        differ |= set(edited)
        for row, att in rows:
            s = samples.get(row.sample_id)
            if s is None:
                raise DataError(
                    f"run {run_dir} has a trial for {row.sample_id!r}, which {rc.data_dir} lacks; point "
                    "the run at its dataset or regenerate the missing samples"
                )
            if row.sample_id in differ or (
                row.trial.video_sha256 is not None
                and s.video.sha256 is not None
                and row.trial.video_sha256 != s.video.sha256
            ):
                changed.append(row.sample_id)
                if not allow_changed:
                    continue
            spec = row.trial.model
            role = roles.setdefault(spec.provider, model_role(spec.provider))
            status = att.status.value if att else "pending"
            resp = att.response if att else None
            verdict = judge_verdict(store, att) if judging and att is not None and status == "ok" else None
            if verdict is not None:
                out.judgements[row.trial_id] = verdict
            out.records.append(
                record(
                    suite,
                    s,
                    trial_id=row.trial_id,
                    model=row.model,
                    role=role,
                    condition=row.condition_id,
                    status=status,
                    text=resp.text if resp else None,
                    usage=resp.usage.model_dump() if resp else None,
                    cost_usd=resp.cost_usd if resp else None,
                    frame_times=list(att.frame_times) if att else None,
                    judgement=verdict,
                )
            )
            out.raw_text[row.trial_id] = resp.text if resp else (att.error_message if att else None)
            if resp is not None and resp.frames_estimated:
                out.estimated_frames[row.model] = out.estimated_frames.get(row.model, 0) + 1
            out.frames[row.trial_id] = list(zip(att.frame_indices, att.frame_times, strict=False)) if att else []
            if att is not None and att.frame_indices and row.trial.condition.perturbations:
                out.perturbed[row.trial_id] = perturbed(s, row.trial.condition.perturbations)
            out.settings.setdefault(
                row.model,
                {
                    "generation": row.trial.adapter_options.get("sent")
                    or spec.settings.sent()
                    or "provider defaults (nothing sent)",
                    "adapter_options": dict(row.trial.adapter_options),
                },
            )
        out.stage_usage = stage_usage(
            store, [(r, a) for r, a in rows if r.sample_id in samples and (r.sample_id not in differ or allow_changed)]
        )
    if edited and not allow_changed:
        first = samples[edited[0]]
        raise DataError(
            f"{len(edited)} video file(s) of run {run_dir} changed since the run: their sha256 is not the "
            f"manifest's, so they were edited in place (e.g. {Path(rc.data_dir) / first.video.path}, "
            f"sample {first.sample_id}). Restore the original files, or pass --allow-changed to score "
            "the current data anyway (those trials are named in the report)"
        )
    if changed and not allow_changed:
        uniq = sorted(set(changed))
        raise DataError(
            f"{len(uniq)} sample(s) of run {run_dir} changed in {rc.data_dir} since their trials ran "
            f"(video, question, answer or trace; e.g. {', '.join(uniq[:5])}): the dataset was "
            "regenerated or edited. Point the run at its original data, or pass --allow-changed to "
            "score the current data anyway (those trials are named in the report)"
        )
    out.changed = sorted(set(changed))
    out.human, out.human_study = load_human(run_dir)
    return out


def write_scores(path: str | Path, records: Sequence[ScoreRecord]) -> Path:
    """``scores.jsonl``, one ScoreRecord per line, written atomically (for a run, ``score_and_write`` writes it
    together with ``scored_run.jsonl``)."""
    write_text_atomic(path, scores_text(records))
    return Path(path)


def score_run(run_dir: str | Path, *, allow_changed: bool = False) -> Path:
    """Re-score a run from its store into ``RUN/scores.jsonl`` and ``RUN/scored_run.jsonl`` (what ``report`` reads)."""
    return score_and_write(run_dir, allow_changed=allow_changed)[0]


def score_and_write(run_dir: str | Path, *, allow_changed: bool = False) -> tuple[Path, Scored]:
    """Score a run and write both files together (score/scored_run.py); the stamp is taken before the store is
    read, so a trial stored meanwhile makes the scored file stale, never silently missing."""
    run_dir = Path(run_dir)
    stamp = run_stamp(run_dir)
    scored = score_store(run_dir, allow_changed=allow_changed)
    write_scored_run(run_dir, scored, stamp=stamp, allow_changed=allow_changed)
    return run_dir / SCORES, scored


# --------------------------------------------------------------------------- external responses

DEDUPE = ("first", "last")
STATUSES = ("ok", "api_error", "refused", "timeout", "truncated")


@dataclass(frozen=True)
class ResponseRow:
    """One response made elsewhere: a ``responses.jsonl`` line, or a row an importer read from a harness's
    log (``where`` says where, for messages). ``frame_times`` are the presentation times of the frames
    actually sent, when the harness recorded them; None for native video."""

    sample_id: str
    response: str | None
    model: str = "external"
    condition: str = "external"
    status: str = "ok"
    where: str = ""
    frame_times: tuple[float, ...] | None = None
    frame_indices: tuple[int, ...] | None = None

    def as_json(self) -> dict[str, Any]:
        """The ``responses.jsonl`` line of this row."""
        return {
            "sample_id": self.sample_id,
            "response": self.response,
            "model": self.model,
            "condition": self.condition,
            "status": self.status,
        }


def external_trial_id(sample_id: str, model: str, condition: str) -> str:
    """The trial id of a response made elsewhere (one per sample, model and condition)."""
    return sha256_json(["external", sample_id, model, condition])


def manifest_suite(samples: Mapping[str, Sample], suite: str | None, where: str) -> str:
    """The suite of a manifest's samples, checked against an explicitly named one."""
    names = sorted({s.suite for s in samples.values()})
    if not names:
        raise DataError(f"{where} holds no samples")
    if len(names) > 1:
        raise DataError(f"{where} mixes samples of several suites ({', '.join(names)}); score one suite at a time")
    if suite is not None and suite != names[0]:
        raise ConfigError(
            f"--suite {suite} does not match the manifest {where}, whose samples are {names[0]!r} samples"
        )
    return names[0]


def score_rows(
    samples: Mapping[str, Sample],
    rows: Sequence[ResponseRow],
    *,
    suite: str | None = None,
    dedupe: str | None = None,
    source: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
    manifest: str = "the manifest",
) -> Scored:
    """Score responses made elsewhere. Each row must name a known sample, carry a string (or null for a failed
    call), a known status, and text when ok; two rows for one (sample, model, condition) are an error unless
    ``dedupe`` says which to keep (``first`` or ``last``). Frame times, where a row has them, reach the suite's
    scorer as they do in a run."""
    if dedupe is not None and dedupe not in DEDUPE:
        raise ConfigError(f"--dedupe must be first or last, got {dedupe!r}")
    s = get_suite(manifest_suite(samples, suite, manifest))
    s.check_samples(list(samples.values()), manifest)
    chosen: dict[tuple[str, str, str], ResponseRow] = {}
    for row in rows:
        where = row.where or row.sample_id
        if not isinstance(row.sample_id, str) or row.sample_id not in samples:
            raise DataError(f"{where}: sample_id {row.sample_id!r} is not in {manifest}")
        if row.response is not None and not isinstance(row.response, str):
            raise DataError(
                f"{where}: response must be a string (or null for a failed call), got {type(row.response).__name__}"
            )
        if not isinstance(row.status, str) or row.status not in STATUSES:
            raise DataError(f"{where}: status {row.status!r} is not one of {', '.join(STATUSES)}")
        if row.status == "ok" and row.response is None:
            raise DataError(f"{where}: status ok needs a response string")
        key = (row.sample_id, row.model, row.condition)
        if key in chosen and dedupe is None:
            raise DataError(
                f"{chosen[key].where or row.sample_id} and {where} are both for sample "
                f"{row.sample_id!r}, model {row.model!r}, condition {row.condition!r}; remove one, or "
                "pass --dedupe first|last"
            )
        if key not in chosen or dedupe == "last":
            chosen[key] = row
    out = Scored(suite=s, records=[], samples=dict(samples), source=dict(source or {}), data_dir=data_dir)
    out.unanswered = unanswered(samples, chosen)
    with paused_gc():
        _score_chosen(out, s, samples, chosen)
    return out


def unanswered(
    samples: Mapping[str, Sample], chosen: Mapping[tuple[str, str, str], ResponseRow]
) -> dict[str, Unanswered]:
    """Per "MODEL under CONDITION" of the responses, the manifest's samples it has no row for (none: not listed).
    A log that covers part of the dataset is scored as it is, but never reads as the whole dataset."""
    answered: dict[tuple[str, str], set[str]] = {}
    for sid, model, condition in chosen:
        answered.setdefault((model, condition), set()).add(sid)
    out = {}
    for (model, condition), got in answered.items():
        missing = tuple(sid for sid in samples if sid not in got)
        if missing:
            out[f"{model} under {condition}"] = Unanswered(len(samples), missing)
    return out


def _score_chosen(
    out: Scored, s: Suite, samples: Mapping[str, Sample], chosen: Mapping[tuple[str, str, str], ResponseRow]
) -> None:
    for (sid, model, condition), row in chosen.items():
        tid = external_trial_id(sid, model, condition)
        out.records.append(
            record(
                s,
                samples[sid],
                trial_id=tid,
                model=model,
                role="model",
                condition=condition,
                status=row.status,
                text=row.response,
                frame_times=list(row.frame_times) if row.frame_times else None,
            )
        )
        out.raw_text[tid] = row.response
        if row.frame_indices and row.frame_times:
            out.frames[tid] = list(zip(row.frame_indices, row.frame_times, strict=False))


def score_responses(
    samples_path: str | Path, responses_path: str | Path, *, suite: str | None = None, dedupe: str | None = None
) -> Scored:
    """Score a ``responses.jsonl`` (sample_id, response (string or null), optional model, condition, status).

    ``suite``: None scores with the manifest's own suite; a name is checked against it."""
    samples_path, responses_path = Path(samples_path), Path(responses_path)
    samples = {x.sample_id: x for x in load_samples(samples_path)}
    rows = []
    for i, line in read_jsonl_objects(responses_path, "the responses"):
        text = line.get("response")
        status = line.get("status") or ("ok" if text is not None else "api_error")
        rows.append(
            ResponseRow(
                sample_id=line.get("sample_id"),  # type: ignore[arg-type]
                response=text,
                model=str(line.get("model") or "external"),
                condition=str(line.get("condition") or "external"),
                status=status,
                where=f"{responses_path}:{i}",
            )
        )
    return score_rows(
        samples, rows, suite=suite, dedupe=dedupe, source={"responses": str(responses_path)}, manifest=str(samples_path)
    )
