"""The one protocol a paper implements: everything paper-specific lives behind a ``Suite``.

The stages (``run``, ``score``, ``report``, ``score-responses``, ``verify``) look a suite up by name
through the registry (``vidaudit.core.registry``; third-party suites through the ``vidaudit.suites``
entry-point group) and call only the members below; no stage imports a suite's package.

A suite subclasses :class:`Suite`, an abstract base: it implements the four abstract methods
(``prompt_names``, ``render_prompt``, ``score``, ``aggregate``) and registers one instance. The lookup refuses
a suite that leaves one out, with one line (mypy refuses it where it is instantiated); Python's ``ABCMeta`` is
not used, because its ``TypeError`` would come from inside the plugin's module at import, as a traceback. What
not every suite offers is a role, a small object the suite declares (``core/contract/roles.py``: baselines,
verification, designs, audit, commands), and optional behaviour that changes how a stage calls the suite is
declared in its :class:`SuiteCapabilities`; neither is discovered by introspection.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from vidaudit.core.contract.records import ScoreRecord, TrialScore
from vidaudit.core.contract.report import SuiteReport, ViewerSpec, ViewerTrial
from vidaudit.core.contract.roles import (
    Audit,
    Baselines,
    Commands,
    Designs,
    ObservedFrame,
    Role,
    Verification,
)
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.targets import load
from vidaudit.core.types import Condition, PerturbationSpec, Sample

if TYPE_CHECKING:
    import numpy as np
    import typer


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

    #: one record per planned trial of the run
    records: Sequence[ScoreRecord]
    samples: Mapping[str, Sample]
    #: per model and condition, calls/frames/tokens per stage from the store; filled for a suite that declares
    #: ``capabilities.needs_usage`` (empty otherwise)
    usage: Mapping[str, Any] = field(default_factory=dict)
    #: an imported human study's answers, scored by the suite like a model's (``model_role`` "human"; their model is
    #: the annotator), apart from ``records``: a suite lists them as rows (``with_human``) or as a ceiling (stress)
    human: Sequence[ScoreRecord] = ()

    @property
    def with_human(self) -> list[ScoreRecord]:
        """The run's records followed by the human study's: people as rows beside the models."""
        return [*self.records, *self.human]


@dataclass(frozen=True)
class SuiteInfo:
    """A one-line description for ``vidaudit suites``."""

    name: str
    description: str
    paper: str | None = None


class Suite:
    """Base class of every suite: the identity below, the four abstract methods, and the roles it declares.

    The optional hooks have defaults a small suite keeps: no ground-truth check, no request metadata, every
    sample parameter in the records, no judge, the generic viewer row, and no perturbation allowed."""

    name: str = ""
    description: str = ""
    paper: str | None = None
    #: prompt name used when a run names none
    default_prompt: str = "default"
    #: named sub-tasks (stress has several), name -> one-line description
    probes: Mapping[str, str] = {}
    #: how the trace viewer lists this suite's trials
    viewer: ViewerSpec = ViewerSpec()
    #: optional behaviour the stages must know about (a judge, per-stage usage for ``aggregate``)
    capabilities: SuiteCapabilities = SuiteCapabilities()
    #: the sample parameter that names a sample's kind in :meth:`describe_samples` ("task": 8 direction, ...)
    kind_param: str = "task"
    #: the version of the suite's judge prompts: part of every judged trial's id
    judge_version: str = ""

    # ------------------------------------------------------------------ roles (core/contract/roles.py)

    baselines: Baselines | None = None
    verification: Verification | None = None
    designs: Designs | None = None
    audit: Audit | None = None
    commands: Commands | None = None

    @property
    def info(self) -> SuiteInfo:
        return SuiteInfo(self.name, self.description, self.paper)

    # ------------------------------------------------------------------ the four abstract methods

    @abstractmethod
    def prompt_names(self) -> Sequence[str]:
        """The prompts this suite renders (``default_prompt`` among them)."""

    @abstractmethod
    def render_prompt(self, sample: Sample, condition: Condition) -> Prompt:
        """The exact text the model receives for ``sample`` under ``condition`` (hashed into the trial id)."""

    @abstractmethod
    def score(self, trial: ScoreInput) -> TrialScore:
        """Score one response (``trial.text`` is None when the call failed; ``trial.status`` says how).

        A suite that judges (``capabilities.judges``) reads ``trial.judgement``: the judge's verdict text for
        this answer, or None where the run had no judge (the suite then scores what it can and says so)."""

    @abstractmethod
    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        """Every number of the report (``results``) and what a reader sees (``sections``, ``notes``).

        ``inputs.usage`` holds the store's per-stage usage for a suite that declares ``capabilities.needs_usage``."""

    # ------------------------------------------------------------------ optional hooks

    def check_prompt(self, name: str) -> None:
        if name not in self.prompt_names():
            raise ConfigError(
                f"unknown prompt {name!r} for the {self.name} suite; choose from {', '.join(self.prompt_names())}"
            )

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        """Public facts about the sample that local baselines may read (never the answer)."""
        return {}

    def record_params(self, sample: Sample) -> dict[str, Any]:
        """Sample parameters copied into each score record (what aggregates group by)."""
        return dict(sample.params)

    def source_of(self, record: ScoreRecord) -> tuple[str, str]:
        """The source a record's item was made from, as (what one source is called, its key): items of one source
        answer alike, so an interval or a bootstrap over several of them counts sources (``source_unit``). The
        default is the item's video (``group_id``, the video's sha256); a suite whose items share a source beyond
        the video (the scene a camera moves over six ways, a source video cut into several files) names it."""
        return ("video", record.group_id)

    def check_samples(self, samples: Sequence[Sample], source: str) -> None:
        """Refuse (a ``DataError`` naming them) samples whose ground truth cannot be trusted, at every load."""

    def perturbation_problem(self, sample: Sample, spec: PerturbationSpec) -> str | None:
        """Why ``sample``'s ground truth does not survive ``spec`` (a condition's perturbation), or None when it
        does and the trial may run. The default refuses: a suite must declare what its answers survive."""
        return (
            f"the {self.name} suite does not define its ground truth under {spec.name}; drop the perturbation "
            "from the condition (a suite declares the perturbations it supports with perturbation_problem)"
        )

    def judge_prompt(self, sample: Sample, answer: str) -> Prompt | None:
        """The prompt a judge model (``vidaudit run --judge SPEC``) gets for this answer; None: no judge needed.

        Only suites whose answers need a judge override this (and declare ``SuiteCapabilities(judges=True)``);
        the verdict reaches ``score`` as ``ScoreInput.judgement``."""
        return None

    def needs_judge(self, sample: Sample) -> bool:
        """Whether an answer to ``sample`` goes to a judge (``judge_prompt`` asks one for the oracle's answer)."""
        if not self.capabilities.judges:
            return False
        try:
            return self.judge_prompt(sample, Baselines.of(self).oracle_answer(sample) or "answer") is not None
        except (ConfigError, NotImplementedError):
            return True

    def judges_any(self, samples: Sequence[Sample]) -> bool:
        """Whether any of these samples may need a judge (``--judge`` is refused otherwise)."""
        return self.capabilities.judges

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
        parts = [
            f"{n} {k}".strip() + (" (need --judge)" if j == n else f" ({j} need --judge)" if j else "")
            for k, (n, j) in kinds.items()
            if k or j
        ]
        return f"{head}: {', '.join(parts)}" if parts else head

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        """How the trace viewer shows one trial (frames are attached by the report stage)."""
        return ViewerTrial.of(record, raw_text)

    # ------------------------------------------------------------------ the command line (``commands`` role)

    def add_commands(self, generate: typer.Typer) -> None:
        """Contribute this suite's ``vidaudit generate ...`` sub-command(s) (its ``commands`` role's)."""
        if self.commands is not None:
            self.commands.add_commands(generate)

    def add_group_commands(self, groups: Mapping[str, typer.Typer]) -> None:
        """Contribute sub-commands to the CLI's other groups (``import``, ``validate``; its ``commands`` role's)."""
        if self.commands is not None:
            self.commands.add_group_commands(groups)


def sources_text(n: int, unit: str) -> str:
    """``4 scenes``, ``1 video``: a count of sources (``source_unit``'s word) as a report line says it."""
    return f"{n} {unit}{'' if n == 1 else 's'}"


def source_unit(sources: Iterable[tuple[str, str]]) -> str:
    """What the sources (``Suite.source_of``) are called together: their one unit ("scene", "video", ...), or
    "source" where they mix units (or are none)."""
    units = {unit for unit, _ in sources}
    return units.pop() if len(units) == 1 else "source"


def _abstract(obj: object) -> list[str]:
    """The abstract methods ``obj``'s class leaves unimplemented, in definition order of its bases."""
    cls = obj if isinstance(obj, type) else type(obj)
    names = dict.fromkeys(
        n for base in reversed(cls.__mro__) for n, v in vars(base).items() if getattr(v, "__isabstractmethod__", False)
    )
    return [n for n in names if getattr(getattr(cls, n, None), "__isabstractmethod__", False)]


def _listed(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


#: every role a suite may declare, in the order the docs list them (what ``check_suite`` checks)
_ROLES: tuple[type[Role], ...] = (Baselines, Verification, Designs, Audit, Commands)


def check_suite(obj: Any, name: str) -> Suite:
    """The registered object, checked to be a whole Suite instance named ``name``: its abstract methods and
    those of every role it declares implemented, each role of its kind, a judge declared where it judges."""
    if isinstance(obj, type) and issubclass(obj, Suite):
        obj = obj()
    if not isinstance(obj, Suite):
        raise ConfigError(f"suite {name!r} is registered as {type(obj).__name__}, not a vidaudit Suite instance")
    missing = _abstract(obj)
    if missing:
        raise ConfigError(
            f"suite {name!r} ({type(obj).__name__}) does not implement {_listed(missing)}; a Suite "
            f"implements {_listed(_abstract(Suite))} (docs/design.md, The Suite protocol)"
        )
    for role in _ROLES:
        found = getattr(obj, role.attr, None)
        if found is None:
            continue
        if not isinstance(found, role):
            raise ConfigError(
                f"suite {name!r} declares {role.attr} = {type(found).__name__}, not a vidaudit.sdk.{role.__name__}"
            )
        lacking = _abstract(found) + found.lacks()
        if lacking:
            raise ConfigError(
                f"suite {name!r}'s {role.attr} ({type(found).__name__}) does not implement {_listed(lacking)}"
            )
    if obj.name != name:
        raise ConfigError(f"suite registered as {name!r} calls itself {obj.name!r}; register it under its name")
    if type(obj).judge_prompt is not Suite.judge_prompt and not obj.capabilities.judges:
        raise ConfigError(
            f"suite {name!r} defines judge_prompt but does not declare it; set "
            "capabilities = SuiteCapabilities(judges=True) on the suite class"
        )
    return obj


class PartedSuite(Suite):
    """A suite made of parts, each part itself a :class:`Suite` (the stress suite's probes are its parts).

    A sample names its part in ``sample.params[part_param]``; every per-sample hook, and the baselines, route to
    that part, and ``aggregate`` gives each part its own records and joins the parts' reports in the order of
    ``parts``. ``parts`` maps a part name to the lazy ``"module:attr"`` of its instance, loaded on first use
    through the registry's loader (``vidaudit.core.targets.load``) and checked like a registered suite, so
    listing the suite (``probes``, the descriptions ``vidaudit suites`` prints) imports no part. A part declares its
    own capabilities; the whole suite declares the union (``SuiteCapabilities(judges=True)`` when a part judges).
    """

    #: the sample parameter that names a sample's part
    part_param: str = "part"
    #: what the suite calls a part, in messages ("probe": "unknown stress probe 'x'")
    part_noun: str = "part"
    #: part name -> ``"module:attr"`` of its Suite instance, in report order
    parts: Mapping[str, str] = {}

    def __init__(self) -> None:
        self.baselines: Baselines | None = _PartBaselines(self)

    def part(self, name: object) -> Suite:
        """The part called ``name``; a ConfigError naming the known parts otherwise."""
        if not isinstance(name, str) or name not in self.parts:
            raise ConfigError(f"unknown {self.name} {self.part_noun} {name!r}; choose from {', '.join(self.parts)}")
        loaded: dict[str, Suite] = self.__dict__.setdefault("_loaded_parts", {})
        if name not in loaded:
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
            raise ConfigError(
                f"{self.part_noun} {part.name} has no prompt {condition.prompt!r}; it has "
                f"{', '.join(part.prompt_names())}"
            )
        return part.render_prompt(sample, condition)

    def request_metadata(self, sample: Sample) -> dict[str, Any]:
        return {self.part_param: sample.params.get(self.part_param), **self.part_of(sample).request_metadata(sample)}

    def record_params(self, sample: Sample) -> dict[str, Any]:
        return self.part_of(sample).record_params(sample)

    def source_of(self, record: ScoreRecord) -> tuple[str, str]:
        return self.part(record.params.get(self.part_param)).source_of(record)

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
            ((name, group),) = by_part.items()
            return self.part(name).describe_samples(group)
        return "; ".join(f"{name}: {self.part(name).describe_samples(group)}" for name, group in by_part.items())

    def aggregate(self, inputs: AggregateInput) -> SuiteReport:
        """The parts' reports in the order of ``parts``, each over its own records and the human study's records of
        its samples (a part the run has no records of is left out, with its human records)."""
        by_part: dict[str, list[ScoreRecord]] = {}
        for r in inputs.records:
            by_part.setdefault(str(r.params.get(self.part_param)), []).append(r)
        human: dict[str, list[ScoreRecord]] = {}
        for r in inputs.human:
            human.setdefault(str(r.params.get(self.part_param)), []).append(r)
        out = SuiteReport()
        for name in self.parts:
            if name not in by_part:
                continue
            part = self.part(name).aggregate(replace(inputs, records=by_part.pop(name), human=human.get(name, [])))
            out.results.update(part.results)
            out.sections.extend(part.sections)
            out.notes.extend(part.notes)
        if by_part:
            raise DataError(
                f"score records of unknown {self.name} {self.part_noun}s {sorted(by_part)}; re-score the "
                "run with this version of vidaudit"
            )
        return out

    def viewer_trial(self, record: ScoreRecord, sample: Sample, raw_text: str | None) -> ViewerTrial:
        return self.part_of(sample).viewer_trial(record, sample, raw_text)


class _PartBaselines(Baselines):
    """A parted suite's baselines: each answer is the baselines of the part the sample (or, for the pixel observer,
    the request's metadata) names; a part without baselines refuses, named."""

    def __init__(self, suite: PartedSuite) -> None:
        self.suite = suite
        self.suite_name = suite.name

    def _of(self, part: Suite) -> Baselines:
        if part.baselines is None:
            raise ConfigError(f"{self.suite.part_noun} {part.name} has no {Baselines.offers}")
        return part.baselines

    def oracle_answer(self, sample: Sample) -> str:
        return self._of(self.suite.part_of(sample)).oracle_answer(sample)

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        return self._of(self.suite.part_of(sample)).chance_answer(sample, rng, option)

    def constant_answer(self, sample: Sample, value: str) -> str:
        return self._of(self.suite.part_of(sample)).constant_answer(sample, value)

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        return self._of(self.suite.part(metadata.get(self.suite.part_param))).observe(frames, metadata)
