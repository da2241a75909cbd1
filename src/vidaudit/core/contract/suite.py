"""The one protocol a paper implements: everything paper-specific lives behind a ``Suite``.

The stages (``run``, ``score``, ``report``, ``score-responses``, ``verify``) look a suite up by name
through the registry (``vidaudit.core.registry``; third-party suites through the ``vidaudit.suites``
entry-point group) and call only the methods below; no stage imports a suite's package. A suite
subclasses :class:`Suite`, overrides what it has (the abstract methods at least) and registers one
instance. Defaults raise a clear error for what a suite does not offer (pixel verification, a pixel
observer), so a small suite stays small. Optional behaviour that changes how a stage calls the suite
is declared in its :class:`SuiteCapabilities`, never discovered by introspection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vidaudit.core.contract.profile import AuditPart, PartFigures
from vidaudit.core.contract.records import ScoreRecord, TrialScore
from vidaudit.core.contract.report import SuiteReport, ViewerSpec, ViewerTrial
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.types import Condition, PerturbationSpec, Sample

if TYPE_CHECKING:
    import typer

__all__ = ["AggregateInput", "ObservedFrame", "PartedSuite", "Prompt", "ScoreInput", "Suite", "SuiteCapabilities",
           "SuiteInfo", "check_suite"]

#: (source frame index, presentation time in seconds, RGB frame) as a pixel observer receives them
ObservedFrame = tuple[int, float, np.ndarray]


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: the optional system instruction and the user text (after the frames)."""

    system: str | None
    text: str


@dataclass(frozen=True)
class SuiteCapabilities:
    """Optional suite behaviour, declared once: the stages read these flags and call the suite accordingly."""

    #: ``judge_prompt`` may ask a judge (``vidaudit run --judge``); ``score`` reads ``ScoreInput.judgement``
    judges: bool = False
    #: ``aggregate`` reads ``AggregateInput.usage``: per model and condition, calls/frames/tokens per stage
    needs_usage: bool = False
    #: metric name -> whether a higher value is better, for exports that state a direction (lmms-eval);
    #: ``correct`` is always higher-is-better
    higher_is_better: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoreInput:
    """One trial as a suite scores it: what ``Suite.score`` reads, in one object, so that a stage passes
    everything it has and a suite reads what it needs (no keyword discovered by introspection)."""

    sample: Sample
    #: the model's answer text; None when the call failed (``status`` says how)
    text: str | None
    status: str
    #: presentation times of the frames sent (None: not recorded)
    frame_times: Sequence[float] | None = None
    #: the judge's verdict text for a suite that judges (``capabilities.judges``); None where the run had no judge
    judgement: str | None = None


@dataclass(frozen=True)
class AggregateInput:
    """What ``Suite.aggregate`` reads, in one object: every planned trial's record with the samples, and what
    the stages hold beside them."""

    #: one record per planned trial; an imported human study's answers are among them (``model_role`` "human")
    records: Sequence[ScoreRecord]
    samples: Mapping[str, Sample]
    #: per model and condition, calls/frames/tokens per stage from the store; filled for a suite that declares
    #: ``capabilities.needs_usage`` (empty otherwise)
    usage: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SuiteInfo:
    """A one-line description for ``vidaudit suites``."""

    name: str
    description: str
    paper: str | None = None


class Suite:
    """Base class of every suite. Subclasses set the class attributes and the abstract methods."""

    name: str = ""
    description: str = ""
    paper: str | None = None
    #: prompt name used when a run names none
    default_prompt: str = "default"
    #: named sub-tasks (stress has several), name -> one-line description
    probes: Mapping[str, str] = {}
    #: how the trace viewer lists this suite's trials
    viewer: ViewerSpec = ViewerSpec()
    #: the module holding the suite's audit functions ``audit_parts(budget)``, ``generate_part(part, out, *,
    #: workers, on_progress)`` and ``profile_figures(part, results)`` (imported on first use); "" : no audit part
    audit_module: str = ""
    #: optional behaviour the stages must know about (a judge, per-stage usage for ``aggregate``)
    capabilities: SuiteCapabilities = SuiteCapabilities()

    # ------------------------------------------------------------------ identity

    @property
    def info(self) -> SuiteInfo:
        return SuiteInfo(self.name, self.description, self.paper)

    # ------------------------------------------------------------------ CLI

    def add_commands(self, generate: typer.Typer) -> None:
        """Contribute this suite's ``vidaudit generate ...`` sub-command(s)."""

    def add_group_commands(self, groups: Mapping[str, typer.Typer]) -> None:
        """Contribute sub-commands to the CLI's other groups (``import``, ``validate``): e.g. a loader
        for another benchmark's released data, ``vidaudit import NAME``."""

    def generate_demo(self, out: Path, *, workers: int | None = None,
                      on_progress: Callable[[int, int], None] | None = None) -> Path:
        """Write a small verified dataset into ``out`` for ``vidaudit demo``; return its manifest."""
        raise ConfigError(f"the {self.name} suite has no demo data")

    def verify(self, data_dir: Path, samples: Sequence[Sample], *, workers: int | None = None,
               on_progress: Callable[[int, int], None] | None = None) -> dict[str, list[str]]:
        """Problems per sample id found by checking videos against their ground truth ({} = all verified)."""
        raise ConfigError(f"the {self.name} suite has no pixel verification")

    def check_samples(self, samples: Sequence[Sample], source: str) -> None:
        """Refuse (a ``DataError`` naming them) samples whose ground truth cannot be trusted, at every load."""

    #: the sample parameter that names a sample's kind in :meth:`describe_samples` ("task": 8 direction, ...)
    kind_param: str = "task"

    def needs_judge(self, sample: Sample) -> bool:
        """Whether an answer to ``sample`` goes to a judge (``judge_prompt`` asks one for the oracle's answer)."""
        if not self.capabilities.judges:
            return False
        try:
            return self.judge_prompt(sample, self.oracle_answer(sample) or "answer") is not None
        except (ConfigError, NotImplementedError):
            return True

    def describe_samples(self, samples: Sequence[Sample]) -> str:
        """What a dataset holds and what each kind needs, in one line for ``generate`` and ``audit``, e.g.
        ``36 samples: 8 direction, 28 anomaly (need --judge)``; a suite may add what its data lacks."""
        kinds: dict[str, list[int]] = {}
        for s in samples:
            kind = s.params.get(self.kind_param)
            c = kinds.setdefault(str(kind) if kind is not None else "", [0, 0])
            c[0] += 1
            c[1] += self.needs_judge(s)
        head = f"{len(samples)} sample{'s' if len(samples) != 1 else ''}"
        parts = [f"{n} {k}".strip() + (" (need --judge)" if j == n else f" ({j} need --judge)" if j else "")
                 for k, (n, j) in kinds.items() if k or j]
        return f"{head}: {', '.join(parts)}" if parts else head

    def perturbation_problem(self, sample: Sample, spec: PerturbationSpec) -> str | None:
        """Why ``sample``'s ground truth does not survive ``spec`` (a condition's perturbation), or None when it
        does and the trial may run. The default refuses: a suite must declare what its answers survive."""
        return (f"the {self.name} suite does not define its ground truth under {spec.name}; drop the perturbation "
                "from the condition (a suite declares the perturbations it supports with perturbation_problem)")

    # ------------------------------------------------------------------ prompts

    def prompt_names(self) -> Sequence[str]:
        raise NotImplementedError

    def check_prompt(self, name: str) -> None:
        if name not in self.prompt_names():
            raise ConfigError(f"unknown prompt {name!r} for the {self.name} suite; choose from "
                              f"{', '.join(self.prompt_names())}")

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        """The exact text the model receives for ``sample`` under ``condition`` (hashed into the trial id)."""
        raise NotImplementedError

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        """Public facts about the sample that local baselines may read (never the answer)."""
        return {}

    # ------------------------------------------------------------------ scoring

    def record_params(self, sample: Sample) -> dict[str, Any]:
        """Sample parameters copied into each score record (what aggregates group by)."""
        return dict(sample.params)

    def score(self, trial: ScoreInput) -> TrialScore:
        """Score one response (``trial.text`` is None when the call failed; ``trial.status`` says how).

        A suite that judges (``capabilities.judges``) reads ``trial.judgement``: the judge's verdict text for
        this answer, or None where the run had no judge (the suite then scores what it can and says so)."""
        raise NotImplementedError

    #: the version of the suite's judge prompts: part of every judged trial's id
    judge_version: str = ""

    def judge_prompt(self, sample: Sample, answer: str) -> Prompt | None:
        """The prompt a judge model (``vidaudit run --judge SPEC``) gets for this answer; None: no judge needed.

        Only suites whose answers need a judge override this (and declare ``SuiteCapabilities(judges=True)``);
        the verdict reaches ``score`` as ``ScoreInput.judgement``."""
        return None

    def judges(self) -> bool:
        """Whether this suite ever asks a judge (declared in ``capabilities``)."""
        return self.capabilities.judges

    def judges_any(self, samples: Sequence[Sample]) -> bool:
        """Whether any of these samples may need a judge (``--judge`` is refused otherwise)."""
        return self.judges()

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        """Every number of the report (``results``) and what a reader sees (``sections``, ``notes``).

        ``inputs.usage`` holds the store's per-stage usage for a suite that declares ``capabilities.needs_usage``."""
        raise NotImplementedError

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        """How the trace viewer shows one trial (frames are attached by the report stage)."""
        return ViewerTrial(trial_id=record.trial_id, sample_id=record.sample_id, model=record.model,
                           condition=record.condition, status=record.status, correct=record.correct,
                           raw_text=raw_text or "")

    # ------------------------------------------------------------------ designs

    def sequential_design(self, name: str, rule: str | None, planned: Sequence[Any]) -> Any:
        """A sequential design for ``vidaudit run --design NAME [--rule RULE]``: an object with
        ``next_wave(outcomes)`` and ``info()`` (``vidaudit.run.waves.WaveDesign``) over the full plan."""
        raise ConfigError(f"the {self.name} suite has no {name!r} design; drop --design to run every planned trial")

    # ------------------------------------------------------------------ baselines

    def oracle_answer(self, sample: Sample) -> str:
        """The answer text of a model that knows the ground truth, in the suite's answer format."""
        raise ConfigError(f"the {self.name} suite defines no oracle answer")

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        """A uniformly random answer from the sample's answer space (``option``: e.g. ``chance:0-12``)."""
        raise ConfigError(f"the {self.name} suite defines no chance answer space")

    def constant_answer(self, sample: Sample, value: str) -> str:
        """The suite's answer text for one value of its answer space (a pixel observer formats its reading
        through this; ``constant:TEXT`` itself answers TEXT verbatim)."""
        raise ConfigError(f"the {self.name} suite defines no answer format for a value")

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        """An ideal observer's answer from exactly the frames sent (pixels only, never the answer)."""
        raise ConfigError(f"the {self.name} suite has no pixel observer")

    # ------------------------------------------------------------------ audit (``vidaudit audit``)

    def _audit(self, hook: str) -> Any:
        """The function ``hook`` of the suite's declared audit module (imported on first use)."""
        from vidaudit.core.registry import load

        return load(f"{self.audit_module}:{hook}", f"suite {self.name!r}'s audit hook {hook}")

    def audit_parts(self, budget: str) -> Sequence[AuditPart]:
        """The datasets an audit at ``budget`` (smoke, standard, paper) runs; () leaves the suite out."""
        return self._audit("audit_parts")(budget) if self.audit_module else ()

    def generate_part(self, part: AuditPart, out: Path, *, workers: int | None = None,
                      on_progress: Callable[[int, int], None] | None = None) -> Path:
        """Generate ``part``'s preset into ``out`` (pixel-checked as its generate command does); the manifest."""
        if not self.audit_module:
            raise ConfigError(f"the {self.name} suite has no audit datasets")
        return self._audit("generate_part")(part, out, workers=workers, on_progress=on_progress)

    def part_conditions(self, part: AuditPart, data_dir: Path) -> tuple[str, ...]:
        """The conditions ``part`` runs at (a generator may write them beside its data; default: the part's)."""
        return part.conditions

    def profile_figures(self, part: AuditPart, results: Mapping[str, Any]) -> PartFigures:
        """The headline figures of ``part`` per model, read from a run's ``report.json`` ``results``, with
        the chance level, human ceiling and the papers' published numbers the report holds."""
        if not self.audit_module:
            raise ConfigError(f"the {self.name} suite has no profile figures")
        return self._audit("profile_figures")(part, results)


def check_suite(obj: Any, name: str) -> Suite:
    """The registered object, checked to be a Suite instance named ``name``."""
    if isinstance(obj, type) and issubclass(obj, Suite):
        obj = obj()
    if not isinstance(obj, Suite):
        raise ConfigError(f"suite {name!r} is registered as {type(obj).__name__}, not a vidaudit Suite instance")
    if obj.name != name:
        raise ConfigError(f"suite registered as {name!r} calls itself {obj.name!r}; register it under its name")
    if type(obj).judge_prompt is not Suite.judge_prompt and not obj.capabilities.judges:
        raise ConfigError(f"suite {name!r} defines judge_prompt but does not declare it; set "
                          "capabilities = SuiteCapabilities(judges=True) on the suite class")
    return obj


class PartedSuite(Suite):
    """A suite made of parts, each part itself a :class:`Suite` (the stress suite's probes are its parts).

    A sample names its part in ``sample.params[part_param]``; every per-sample hook routes to that part, and
    ``aggregate`` gives each part its own records and joins the parts' reports in the order of ``parts``.
    ``parts`` maps a part name to the lazy ``"module:attr"`` of its instance, loaded on first use through the
    registry's loader (``vidaudit.core.registry.load``) and checked like a registered suite, so listing the
    suite (``probes``, the descriptions ``vidaudit suites`` prints) imports no part. A part declares its own
    capabilities; the whole suite declares the union (``SuiteCapabilities(judges=True)`` when a part judges).
    """

    #: the sample parameter that names a sample's part
    part_param: str = "part"
    #: what the suite calls a part, in messages ("probe": "unknown stress probe 'x'")
    part_noun: str = "part"
    #: part name -> ``"module:attr"`` of its Suite instance, in report order
    parts: Mapping[str, str] = {}

    def part(self, name: object) -> Suite:
        """The part called ``name``; a ConfigError naming the known parts otherwise."""
        if not isinstance(name, str) or name not in self.parts:
            raise ConfigError(f"unknown {self.name} {self.part_noun} {name!r}; choose from {', '.join(self.parts)}")
        loaded: dict[str, Suite] = self.__dict__.setdefault("_loaded_parts", {})
        if name not in loaded:
            from vidaudit.core.registry import load

            loaded[name] = check_suite(load(self.parts[name], f"{self.name} {self.part_noun} {name!r}"), name)
        return loaded[name]

    def part_of(self, sample: Sample) -> Suite:
        return self.part(sample.params.get(self.part_param))

    # ------------------------------------------------------------------ routed hooks

    def perturbation_problem(self, sample: Sample, spec: PerturbationSpec) -> str | None:
        return self.part_of(sample).perturbation_problem(sample, spec)

    def prompt_names(self) -> Sequence[str]:
        names = [self.default_prompt]
        for p in self.parts:
            names += [n for n in self.part(p).prompt_names() if n not in names]
        return names

    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        part = self.part_of(sample)
        if condition is not None and condition.prompt not in part.prompt_names():
            raise ConfigError(f"{self.part_noun} {part.name} has no prompt {condition.prompt!r}; it has "
                              f"{', '.join(part.prompt_names())}")
        return part.render_prompt(sample, condition)

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        return {self.part_param: sample.params.get(self.part_param), **self.part_of(sample).request_metadata(sample)}

    def record_params(self, sample: Sample) -> dict[str, Any]:
        return self.part_of(sample).record_params(sample)

    def score(self, trial: ScoreInput) -> TrialScore:
        part = self.part_of(trial.sample)
        # only a part that declares ``judges`` sees a judgement
        return part.score(trial if part.capabilities.judges else replace(trial, judgement=None))

    @property
    def judge_version(self) -> str:  # type: ignore[override]
        """Every judging part's prompt version, e.g. ``expectation:expectation-judges-1``."""
        return ";".join(f"{n}:{v}" for n in self.parts if (v := self.part(n).judge_version))

    def judge_prompt(self, sample: Sample, answer: str) -> Prompt | None:
        return self.part_of(sample).judge_prompt(sample, answer)

    def judges_any(self, samples: Sequence[Sample]) -> bool:
        """Only parts that declare ``judges`` ever ask a judge."""
        return any(self.part_of(s).capabilities.judges for s in samples)

    def needs_judge(self, sample: Sample) -> bool:
        return self.part_of(sample).needs_judge(sample)

    def describe_samples(self, samples: Sequence[Sample]) -> str:
        """Each part's own description, part by part (``expectation: 36 samples: ...``)."""
        by_part: dict[str, list[Sample]] = {}
        for s in samples:
            by_part.setdefault(str(s.params.get(self.part_param)), []).append(s)
        if len(by_part) == 1:
            (name, group), = by_part.items()
            return self.part(name).describe_samples(group)
        return "; ".join(f"{name}: {self.part(name).describe_samples(group)}" for name, group in by_part.items())

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        by_part: dict[str, list[ScoreRecord]] = {}
        for r in inputs.records:
            by_part.setdefault(str(r.params.get(self.part_param)), []).append(r)
        out = SuiteReport()
        for name in self.parts:
            if name not in by_part:
                continue
            part = self.part(name).aggregate(replace(inputs, records=by_part.pop(name)))
            out.results.update(part.results)
            out.sections.extend(part.sections)
            out.notes.extend(part.notes)
        if by_part:
            raise DataError(f"score records of unknown {self.name} {self.part_noun}s {sorted(by_part)}; re-score the "
                            "run with this version of vidaudit")
        return out

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        return self.part_of(sample).viewer_trial(record, sample, raw_text)

    def oracle_answer(self, sample: Sample) -> str:
        return self.part_of(sample).oracle_answer(sample)

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        return self.part_of(sample).chance_answer(sample, rng, option)

    def constant_answer(self, sample: Sample, value: str) -> str:
        return self.part_of(sample).constant_answer(sample, value)

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        return self.part(metadata.get(self.part_param)).observe(frames, metadata)
