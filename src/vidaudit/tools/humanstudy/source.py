"""What a study is drawn from: a dataset dir (``vidaudit generate``) or a run dir (its data and first prompt)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vidaudit.core.contract.suite import Suite
from vidaudit.core.errors import DataError
from vidaudit.core.manifest import dataset_suite, load_samples, read_dataset_info
from vidaudit.core.registry import get_suite
from vidaudit.core.types import Condition, Sample
from vidaudit.run.runconfig import RUN_JSON, RunConfig


@dataclass
class StudySource:
    suite: Suite
    samples: list[Sample]
    data_dir: Path
    condition: Condition  # the prompt the model was asked is rendered under this condition
    run_dir: Path | None = None
    #: every condition of the run (a dataset dir: none)
    conditions: tuple[Condition, ...] = ()


def open_source(path: str | Path) -> StudySource:
    """A run dir (it has ``run.json``: its suite, data and first condition) or a dataset dir."""
    path = Path(path)
    if (path / RUN_JSON).is_file():
        rc = RunConfig.load(path)
        suite = get_suite(rc.suite)
        data = Path(rc.data_dir)
        samples = load_samples(data)
        suite.check_samples(samples, str(data))
        cond = rc.conditions[0] if rc.conditions else Condition(prompt=suite.default_prompt)
        return StudySource(suite, samples, data, cond, run_dir=path, conditions=tuple(rc.conditions))
    if not path.is_dir():
        raise DataError(f"{path} is neither a run dir (with run.json) nor a dataset dir (with manifest.jsonl)")
    info = read_dataset_info(path)
    suite = get_suite(dataset_suite(path, info))
    samples = load_samples(path)
    suite.check_samples(samples, str(path))
    return StudySource(suite, samples, path, Condition(prompt=suite.default_prompt))
