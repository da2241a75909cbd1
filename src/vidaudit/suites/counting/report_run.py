"""Scores and reports for the counting suite, from a run store or from external responses.

Re-scoring reads only stored text: it never calls a model. Errored trials stay in the records
(with their status and no metrics) so that completion and error rates keep them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vidaudit import __version__
from vidaudit.core.errors import DataError
from vidaudit.core.fileio import read_jsonl, write_jsonl_atomic
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import Sample
from vidaudit.suites.counting.aggregate import aggregate, paired_difference
from vidaudit.suites.counting.scoring import score_trial

SCORES = "scores.jsonl"


def record_for(sample: Sample, text: str | None, status: str, *, model: str, condition: str,
               usage: Mapping[str, int] | None = None, cost_usd: float | None = None,
               trial_id: str | None = None) -> dict[str, Any]:
    rec = score_trial(sample, text if status == "ok" else None, status).to_dict()
    rec.update({"trial_id": trial_id, "model": model, "condition": condition,
                "domain": sample.params.get("domain"), "n_events": sample.params.get("n_events", sample.answer),
                "frequency_hz": sample.params.get("frequency_hz"), "status": status,
                "usage": dict(usage or {}), "cost_usd": cost_usd})
    return rec


def records_from_store(run_dir: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, Sample]]:
    """(records, per-trial extras for the viewer, samples by id) for every trial of a run."""
    from vidaudit.run.runconfig import RunConfig
    from vidaudit.run.store import RunStore

    rc = RunConfig.load(run_dir)
    samples = {s.sample_id: s for s in load_samples(rc.data_dir)}
    records, extras = [], {}
    with RunStore(run_dir, readonly=True) as store:
        for row, att in store.results():
            s = samples.get(row.sample_id)
            if s is None:
                raise DataError(f"run {run_dir} has a trial for {row.sample_id!r}, which {rc.data_dir} lacks")
            status = att.status.value if att else "pending"
            resp = att.response if att else None
            usage = resp.usage.model_dump() if resp else {}
            rec = record_for(s, resp.text if resp else None, status, model=row.model,
                             condition=row.condition_id, usage=usage, cost_usd=resp.cost_usd if resp else None,
                             trial_id=row.trial_id)
            records.append(rec)
            extras[row.trial_id] = {"raw_text": resp.text if resp else (att.error_message if att else None),
                                    "frame_indices": list(att.frame_indices) if att else [],
                                    "frame_times": list(att.frame_times) if att else []}
    return records, extras, samples


def viewer_trials(records: Sequence[dict[str, Any]], extras: Mapping[str, dict[str, Any]],
                  samples: Mapping[str, Sample], data_dir: Path | None, max_frames: int = 24) -> list[dict[str, Any]]:
    """Trials for the HTML trace viewer (a selection), with thumbnails of the frames that were sent."""
    from vidaudit.report import select_trials_for_viewer, thumbnail_jpeg_b64
    from vidaudit.video.frame_cache import FrameCache

    base = []
    for r in records:
        s = samples[r["sample_id"]]
        ex = extras.get(r.get("trial_id") or "", {})
        base.append({
            "trial_id": r.get("trial_id") or r["sample_id"], "sample_id": r["sample_id"], "model": r["model"],
            "condition": r["condition"], "domain": r["domain"], "n_events": r["n_events"],
            "frequency_hz": r["frequency_hz"], "duration_s": s.video.duration_s, "status": r["status"],
            "answer": s.answer, "predicted_count": r.get("predicted_count"), "parse_method": r.get("parse_method"),
            "correct": r.get("correct"), "f1": r.get("f1"),
            "true_events": [{"t": e.t, "frame": e.frame, "state_after": e.state_after} for e in s.trace.events],
            "reported_events": [{"t": t, "label": lab} for t, lab in
                                zip(r.get("reported_times") or [], r.get("reported_labels") or [], strict=False)],
            "matches": [list(m) for m in r.get("matches") or []], "window_s": r.get("delta_s"),
            "raw_text": ex.get("raw_text") or r.get("raw_text"), "frames": [],
            "_frames": list(zip(ex.get("frame_indices", []), ex.get("frame_times", []), strict=False)),
        })
    chosen = select_trials_for_viewer(base)
    cache = FrameCache(max_bytes=256 << 20)
    for t in chosen:
        sent = dict(t).pop("_frames", [])
        t = t  # noqa: PLW0127 - selected dicts are the originals
        if data_dir is not None and sent:
            step = max(1, -(-len(sent) // max_frames))
            pick = sent[::step][:max_frames]
            s = samples[t["sample_id"]]
            imgs = cache.get(Path(data_dir) / s.video.path, s.video.sha256, [i for i, _ in pick])
            t["frames"] = [{"index": i, "t": ft, "jpeg_b64": thumbnail_jpeg_b64(img)}
                           for (i, ft), img in zip(pick, imgs, strict=True)]
    return [{k: v for k, v in t.items() if k != "_frames"} for t in chosen]


def input_limit_notes(report: dict[str, Any]) -> list[str]:
    """Where the ideal observer fails, the input itself cannot show the events: name those cells."""
    notes = []
    by_cond: dict[str, list[str]] = {}
    for c in report.get("cells", []):
        if c["model"] == "ideal-observer" and c.get("n") and c.get("accuracy") is not None and c["accuracy"] < 1.0:
            by_cond.setdefault(c["condition"], []).append(
                f"{c['domain']} N={c['n_events']} F={c['frequency_hz']} ({c['correct']}/{c['n']})")
    for cond, cells in sorted(by_cond.items()):
        notes.append(f"Under {cond} the ideal observer (pixel detector on exactly the frames sent) misses in "
                     f"{len(cells)} cell(s): the input cannot show those events: " + "; ".join(cells))
    if not by_cond and any(c["model"] == "ideal-observer" for c in report.get("cells", [])):
        notes.append("The ideal observer is correct in every cell under every condition run.")
    return notes


def paired_comparisons(records: list[dict[str, Any]], n_boot: int = 2000) -> list[dict[str, Any]]:
    """Each model's conditions against its first, and each condition's models against the first:
    EM difference on shared samples with a bootstrap interval clustered by source video."""
    models = list(dict.fromkeys(r["model"] for r in records))
    conds = list(dict.fromkeys(r["condition"] for r in records))
    pairs = [((m, conds[0]), (m, c)) for m in models for c in conds[1:]]
    pairs += [((models[0], c), (m, c)) for c in conds for m in models[1:]]
    out = []
    for a, b in pairs:
        try:
            out.append(paired_difference(records, a, b, n_boot=n_boot))
        except (DataError, ValueError):
            continue  # no shared ok samples for this pair
    return out


def build_report(records: list[dict[str, Any]], *, meta: dict[str, Any]) -> dict[str, Any]:
    report = aggregate(records)
    report["paired_differences"] = paired_comparisons(records)
    report["notes"] = input_limit_notes(report)
    report["meta"] = {"created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "vidaudit_version": __version__,
                      "models": sorted({r["model"] for r in records}),
                      "conditions": sorted({r["condition"] for r in records}), **meta}
    return report


def score_run(run_dir: Path) -> Path:
    """Re-score a run from its store into ``RUN/scores.jsonl``."""
    records, _, _ = records_from_store(run_dir)
    path = Path(run_dir) / SCORES
    write_jsonl_atomic(path, records)
    return path


def report_run(run_dir: Path) -> dict[str, Path]:
    from vidaudit.report import write_report
    from vidaudit.run.runconfig import RunConfig

    run_dir = Path(run_dir)
    records, extras, samples = records_from_store(run_dir)
    write_jsonl_atomic(run_dir / SCORES, records)
    report = build_report(records, meta={"run_dir": str(run_dir)})
    trials = viewer_trials(records, extras, samples, Path(RunConfig.load(run_dir).data_dir))
    return write_report(report, trials, run_dir / "report", n_trials_total=len(records))


def score_responses(samples_path: Path, responses_path: Path, out: Path, report_dir: Path | None = None,
                    ) -> tuple[Path, dict[str, Path] | None]:
    """Score responses made elsewhere: one JSON per line with sample_id, response, optional model/condition."""
    samples = {s.sample_id: s for s in load_samples(samples_path)}
    rows = read_jsonl(responses_path)
    records, extras = [], {}
    for i, row in enumerate(rows, 1):
        sid, text = row.get("sample_id"), row.get("response")
        if sid not in samples:
            raise DataError(f"{responses_path}:{i}: sample_id {sid!r} is not in {samples_path}")
        if text is not None and not isinstance(text, str):
            raise DataError(f"{responses_path}:{i}: response must be a string (or null for a failed call)")
        status = row.get("status") or ("ok" if text is not None else "api_error")
        rec = record_for(samples[sid], text, status, model=str(row.get("model") or "external"),
                         condition=str(row.get("condition") or "external"), trial_id=f"{sid}#{i}")
        records.append(rec)
        extras[rec["trial_id"]] = {"raw_text": text}
    out_rows = [_external_row(r) for r in records]
    write_jsonl_atomic(out, out_rows)
    paths = None
    if report_dir is not None:
        from vidaudit.report import write_report

        report = build_report(records, meta={"responses": str(responses_path)})
        paths = write_report(report, viewer_trials(records, extras, samples, None), Path(report_dir),
                             n_trials_total=len(records))
    return out, paths


def _external_row(r: dict[str, Any]) -> dict[str, Any]:
    keep = ("sample_id", "model", "condition", "status", "predicted_count", "parse_method", "reported_times",
            "n_reported", "n_matched", "precision", "recall", "f1", "vor", "correct", "acr", "rfr", "taxonomy",
            "delta_s", "matches", "tolerance")
    return {k: r.get(k) for k in keep}


def iter_records(path: Path) -> Iterable[dict[str, Any]]:
    return read_jsonl(path)
