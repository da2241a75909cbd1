"""``score-responses --from lmms-eval|vlmevalkit|inspect LOG``: other harnesses' logs, scored as responses.

Each reader turns a log into :class:`~vidaudit.score.stage.ResponseRow` s (sample_id, response, model,
condition, status) and says which suite(s) the log names and which key matched rows to samples. The
import then refuses, naming what it found:

- a log whose format version this vidaudit does not know (each reader checks its own);
- a log of another suite than the manifest's samples;
- rows whose key is not a sample id of the manifest (all of them listed, up to ten, and counted);
- a log with no responses.

Accepted rows are scored by :func:`~vidaudit.score.stage.score_rows`, exactly as ``score-responses
--responses`` scores the same lines (same checks, same trial ids), so a lab re-scores old runs with
trace metrics without calling a model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vidaudit import __version__
from vidaudit.core.errors import ConfigError, DataError, listed
from vidaudit.core.manifest import load_samples
from vidaudit.core.types import Sample
from vidaudit.report.stage import coverage_notes, write_scored_report
from vidaudit.score.scored_run import Scored
from vidaudit.score.stage import ResponseRow, manifest_suite, score_rows, write_scores
from vidaudit.tools.interop.common import ImportedLog, inspect_output_status, require
from vidaudit.tools.interop.lmms_eval import read_lmms_eval_log
from vidaudit.tools.interop.vlmevalkit import read_vlmevalkit_predictions

HARNESSES = ("lmms-eval", "vlmevalkit", "inspect")
#: inspect_ai eval-log format versions this vidaudit reads (``EvalLog.version``)
KNOWN_INSPECT_VERSIONS = (2,)
#: the per-sample metadata format vidaudit's inspect tasks write (``metadata["vidaudit"]["format"]``)
INSPECT_SAMPLE_FORMAT = 1


# --------------------------------------------------------------------------- inspect_ai


def _inspect_status(sample: Any) -> tuple[str, str | None]:
    """(status, text) of one EvalSample: an error is an api_error, a time limit a timeout, a content filter a
    refusal, an output budget spent with no answer text truncated; only ``ok`` carries text."""
    if getattr(sample, "error", None) is not None:
        return "api_error", None
    limit = getattr(sample, "limit", None)
    if limit is not None and str(getattr(limit, "type", "")) in ("time", "working"):
        return "timeout", None
    output = getattr(sample, "output", None)
    status = inspect_output_status(output)
    if status != "ok":
        return status, None
    return "ok", (output.completion if output is not None else "")


_INSPECT_VERSION = re.compile(r"[Uu]nable to read version (\S+) of log format")


def _causes(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    while e is not None and e not in out:
        out.append(e)
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return out


def _unknown_inspect_version(f: Path, found: Any) -> DataError:
    return DataError(
        f"{f}: inspect_ai log format version {found}, which this vidaudit ({__version__}) does not know "
        f"(it reads {', '.join(map(str, KNOWN_INSPECT_VERSIONS))})"
    )


def _find_inspect_log(path: Path) -> Path:
    if path.is_file():
        return path
    if not path.is_dir():
        raise DataError(f"no inspect_ai log at {path}")
    found = sorted([*path.rglob("*.eval"), *path.rglob("*.json")])
    found = [f for f in found if f.name not in ("logs.json", "listing.json")]
    if not found:
        raise DataError(f"{path} holds no inspect_ai eval log (*.eval or *.json)")
    if len(found) > 1:
        raise DataError(f"{path} holds {len(found)} inspect_ai logs; name one: {listed([str(f) for f in found])}")
    return found[0]


def read_inspect_log(path: str | Path, *, model: str | None = None) -> ImportedLog:
    """The response rows of an inspect_ai eval log, read by inspect's own log reader."""
    log_mod = require("inspect_ai.log", "reading inspect_ai logs")
    f = _find_inspect_log(Path(path))
    try:
        header = log_mod.read_eval_log(str(f), header_only=True)
    except Exception as e:  # inspect raises plain errors (ValueError, zip errors) for logs it cannot read
        causes = _causes(e)
        found = next((m.group(1) for c in causes if (m := _INSPECT_VERSION.search(str(c)))), None)
        if found is not None:
            raise _unknown_inspect_version(f, found) from None
        raise DataError(f"{f}: not readable as an inspect_ai eval log ({'; '.join(str(c) for c in causes)})") from e
    version = getattr(header, "version", None)
    if version not in KNOWN_INSPECT_VERSIONS:
        raise _unknown_inspect_version(f, version)
    log = log_mod.read_eval_log(str(f))
    ev = log.eval
    task = str(ev.task or "")
    task_args = dict(ev.task_args or {})
    suites: set[str] = set()
    if task.startswith("vidaudit/"):
        suites.add(task.split("/", 1)[1])
    label = model or str(ev.model or "inspect")
    rows: list[ResponseRow] = []
    formats: set[str] = set()
    for s in log.samples or []:
        meta = (s.metadata or {}).get("vidaudit") or {}
        if meta:
            fmt = meta.get("format")
            if fmt != INSPECT_SAMPLE_FORMAT:
                raise DataError(
                    f"{f}: sample {s.id!r} carries vidaudit metadata format {fmt!r}, which this vidaudit "
                    f"does not know (it reads {INSPECT_SAMPLE_FORMAT})"
                )
            formats.add(str(fmt))
            if meta.get("suite"):
                suites.add(str(meta["suite"]))
        status, text = _inspect_status(s)
        condition = str(meta.get("condition") or task_args.get("condition") or "external")
        times = meta.get("frame_times")
        idx = meta.get("frame_indices")
        rows.append(
            ResponseRow(
                sample_id=str(s.id),
                response=text,
                model=label,
                condition=condition,
                status=status,
                where=f"{f}: sample {s.id!r} epoch {s.epoch}",
                frame_times=tuple(float(t) for t in times) if times else None,
                frame_indices=tuple(int(i) for i in idx) if idx else None,
            )
        )
    return ImportedLog(
        harness="inspect",
        path=f,
        rows=rows,
        suites=suites,
        key="sample id (EvalSample.id)",
        source={
            "inspect_log_version": str(version),
            "task": task,
            "status": str(log.status),
            "sample_format": ",".join(sorted(formats)) or "none",
        },
    )


# --------------------------------------------------------------------------- dispatch and checks


def read_log(harness: str, log: str | Path, *, model: str | None = None) -> ImportedLog:
    """Read ``log`` with the reader of ``harness`` (one of :data:`HARNESSES`)."""
    if harness == "lmms-eval":
        return read_lmms_eval_log(log, model=model)
    if harness == "vlmevalkit":
        return read_vlmevalkit_predictions(log, model=model)
    if harness == "inspect":
        return read_inspect_log(log, model=model)
    raise ConfigError(f"--from {harness!r}: choose one of {', '.join(HARNESSES)}")


def check_log(imported: ImportedLog, samples: Mapping[str, Sample], suite: str, manifest: str | Path) -> None:
    """Refuse a log of another suite, rows that match no sample, or a log with no responses."""
    other = imported.names_other_suite(suite)
    if other:
        raise DataError(
            f"{imported.path} is a {imported.harness} log of suite {', '.join(other)}, but {manifest} "
            f"holds {suite} samples; score it against the dataset it ran on"
        )
    if not imported.rows:
        raise DataError(f"{imported.path}: the {imported.harness} log holds no responses")
    unknown = list(dict.fromkeys(r.sample_id for r in imported.rows if r.sample_id not in samples))
    if unknown:
        n_rows = sum(1 for r in imported.rows if r.sample_id not in samples)
        raise DataError(
            f"{imported.path}: {n_rows} of {len(imported.rows)} rows of the {imported.harness} log name "
            f"{len(unknown)} sample id(s) that {manifest} lacks (matched by {imported.key}): "
            f"{listed(unknown)}. Score the log against the dataset it ran on"
        )


def _manifest_path(samples: str | Path) -> Path:
    p = Path(samples)
    return p / "manifest.jsonl" if p.is_dir() else p


def import_responses(
    harness: str,
    log: str | Path,
    samples: str | Path,
    *,
    suite: str | None = None,
    dedupe: str | None = None,
    model: str | None = None,
) -> Scored:
    """Read, check and score a harness log against a manifest (as ``score_responses``)."""
    manifest = _manifest_path(samples)
    by_id = {s.sample_id: s for s in load_samples(manifest)}
    name = manifest_suite(by_id, suite, str(manifest))
    imported = read_log(harness, log, model=model)
    check_log(imported, by_id, name, manifest)
    source = {"harness": harness, "log": str(imported.path), "key": imported.key, **imported.source}
    return score_rows(by_id, imported.rows, suite=name, dedupe=dedupe, source=source, data_dir=manifest.parent)


def report_imported(
    harness: str,
    log: str | Path,
    samples: str | Path,
    out: str | Path,
    report_dir: str | Path | None,
    *,
    suite: str | None = None,
    dedupe: str | None = None,
    model: str | None = None,
) -> tuple[Path, dict[str, Path] | None, list[str]]:
    """``score-responses --from``: scores.jsonl at ``out``, with ``report_dir`` the three report files, and the
    notes to print beside the scores (``report.stage.coverage_notes``)."""
    scored = import_responses(harness, log, samples, suite=suite, dedupe=dedupe, model=model)
    paths = write_scored_report(scored, report_dir) if report_dir is not None else None
    return write_scores(out, scored.records), paths, coverage_notes(scored)
