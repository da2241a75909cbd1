"""``vidaudit human-study import``: answers files into ``RUN/human_records.jsonl`` and ``RUN/human_study.json``.

Everything is read, checked and scored before anything is written: the study manifest (``--study``, or
``RUN/human_studies/STUDY.json`` found from the answers files' study id), every answers file, and the
run's samples (each item's sample must be in the run's data with the video it had at export). Then the
records and the summary are written, each atomically. A run holds one human study: importing another
study over it is refused unless ``replace``; importing the same study again replaces its records (give
every annotator's file again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidaudit.core.confine import confined
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.fileio import write_json_atomic, write_text_atomic
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite
from vidaudit.run.runconfig import RunConfig
from vidaudit.score.human import HUMAN_RECORDS, HUMAN_STUDY
from vidaudit.tools.humanstudy.answers import StudyManifest, load_manifest, read_sheet, read_sheets
from vidaudit.tools.humanstudy.judging import judge_for_run
from vidaudit.tools.humanstudy.paths import STUDIES_DIR
from vidaudit.tools.humanstudy.scoring import score_sheets
from vidaudit.tools.humanstudy.summary import summarize


@dataclass(frozen=True)
class Imported:
    records: Path
    summary_path: Path
    summary: dict[str, Any]


def find_manifest(run_dir: Path, files: list[Path], study: Path | None) -> StudyManifest:
    if study is not None:
        return load_manifest(study)
    if not files:
        raise DataError("no answers files given")
    sid, _ = read_sheet(files[0])
    # the study id comes from the answers file: a name, never a path out of RUN/human_studies
    path = confined(run_dir / STUDIES_DIR, f"{sid}.json", what="study id", source=str(files[0]))
    if not path.is_file():
        raise DataError(
            f"{files[0]} is for study {sid}, which run {run_dir} does not hold ({path} is missing); "
            "pass --study PATH, the study.json written beside the study page"
        )
    return load_manifest(path)


def import_answers(
    files: list[str | Path], run_dir: str | Path, *, study: str | Path | None = None, replace: bool = False
) -> Imported:
    run_dir = Path(run_dir)
    rc = RunConfig.load(run_dir)
    paths = [Path(f) for f in files]
    manifest = find_manifest(run_dir, paths, Path(study) if study is not None else None)
    if manifest.suite != rc.suite:
        raise ConfigError(f"study {manifest.study} is a {manifest.suite} study; run {run_dir} is a {rc.suite} run")
    sheets = read_sheets(paths, manifest)
    suite = get_suite(rc.suite)
    loaded = load_samples(rc.data_dir)
    suite.check_samples(loaded, rc.data_dir)
    samples = {s.sample_id: s for s in loaded}
    for it in manifest.items.values():
        s = samples.get(it.sample_id)
        if s is None:
            raise DataError(
                f"study item {it.item_id} asks about sample {it.sample_id}, which the run's data "
                f"{rc.data_dir} lacks; import into a run over the data the study was exported from"
            )
        if it.video_sha256 and s.video.sha256 and it.video_sha256 != s.video.sha256:
            raise DataError(
                f"study item {it.item_id}: the video of sample {it.sample_id} changed in {rc.data_dir} "
                "since the study was exported; the annotators saw another video"
            )
    _check_replace(run_dir, manifest.study, replace)
    scoring = score_sheets(suite, manifest, sheets, samples, judge_for_run(run_dir))
    summary = summarize(manifest, sheets, scoring, [str(p) for p in paths])
    rec_path, sum_path = run_dir / HUMAN_RECORDS, run_dir / HUMAN_STUDY
    write_text_atomic(rec_path, "".join(r.model_dump_json() + "\n" for r in scoring.records))
    write_json_atomic(sum_path, summary)
    return Imported(records=rec_path, summary_path=sum_path, summary=summary)


def _check_replace(run_dir: Path, sid: str, replace: bool) -> None:
    path = run_dir / HUMAN_STUDY
    if not path.is_file() or replace:
        return
    try:
        old = json.loads(path.read_text(encoding="utf-8")).get("study")
    except (OSError, ValueError, AttributeError):
        old = None
    if old != sid:
        raise DataError(
            f"run {run_dir} already holds human study {old or '(unreadable)'} ({path}); pass "
            "--replace to replace it with study " + sid
        )
