"""Source (b): the validated pairs of a ``sycophancy_pairs`` run (``vidaudit run stress --data GEN --model
GENERATOR --out RUN``), read from the run store; every dropped answer is listed with its trial and reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.sdk import DataError, RunConfig, Sample, StoreReader, load_samples
from vidaudit.suites.stress.sycophancy.pairs import Pair, validate_generated

PAIRS_PROBE = "sycophancy_pairs"


@dataclass
class Generated:
    """What a generation run yields: pairs (with the sample of the video each was asked about) and drops."""

    data_dir: Path
    pairs: list[tuple[Pair, Sample]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    n_trials: int = 0

    def counts(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for d in self.dropped:
            key = d["reason"].split(":")[0].split(" (")[0]
            reasons[key] = reasons.get(key, 0) + 1
        return {
            "n_generated": self.n_trials,
            "n_valid": len(self.pairs),
            "n_dropped": len(self.dropped),
            "dropped_by_reason": reasons,
        }


def is_run_dir(path: Path) -> bool:
    return (Path(path) / "run.json").is_file()


def read_generated(run_dir: Path) -> Generated:
    """Every generation trial of ``run_dir``: a valid pair, or a drop naming the trial, sample and reason."""
    rc = RunConfig.load(run_dir)
    data_dir = Path(rc.data_dir)
    samples = {s.sample_id: s for s in load_samples(data_dir)}
    gen = [s for s in samples.values() if s.params.get("probe") == PAIRS_PROBE]
    if not gen:
        raise DataError(
            f"{run_dir}: its data {data_dir} holds no {PAIRS_PROBE} samples; make them with "
            f"`vidaudit generate stress --probe {PAIRS_PROBE} --source VIDEOS --out GEN` and run a "
            "generator on them"
        )
    specs = {m.label: m for m in rc.models}
    out = Generated(data_dir=data_dir)
    with StoreReader(run_dir) as store:
        rows = sorted(store.results(), key=lambda ra: (ra[0].sample_id, ra[0].model, ra[0].condition_id))
        for row, attempt in rows:
            sample = samples.get(row.sample_id)
            if sample is None or sample.params.get("probe") != PAIRS_PROBE:
                continue
            out.n_trials += 1
            where = {"trial_id": row.trial_id, "sample_id": row.sample_id, "model": row.model}
            if attempt is None or attempt.response is None or attempt.status.value != "ok":
                status = "never attempted" if attempt is None else f"call {attempt.status.value}"
                out.dropped.append({**where, "reason": f"no answer ({status})"})
                continue
            category = str(sample.params["category"])
            fields, why = validate_generated(attempt.response.text, category)
            if fields is None:
                out.dropped.append({**where, "reason": str(why)})
                continue
            spec = specs.get(row.model) or row.trial.model
            generator = {
                "model": spec.label,
                "provider": spec.provider,
                "settings": spec.settings.sent(),
                "model_version": attempt.response.model_version,
                "condition": row.condition_id,
                "trial_id": row.trial_id,
                "run": str(Path(run_dir).resolve()),
            }
            vid = str(sample.params.get("video_key", sample.sample_id))
            tag = "".join(c if c.isalnum() or c in "-_" else "-" for c in spec.label)[:40]
            pair = Pair(
                pair_id=f"gen-{tag}-{row.trial_id[:10]}-{vid}-{category}",
                category=category,
                original=fields["original"],
                modified=fields["modified"],
                modification_description=fields["modification_description"],
                source={"source": "generated", "generator": generator, "source_sample_id": row.sample_id},
            )
            out.pairs.append((pair, sample))
    return out
