"""A suite's optional roles: what not every suite offers, each a small object the suite declares.

The :class:`~vidaudit.core.contract.suite.Suite` itself has four required methods; everything a suite may or may
not offer is a role: :class:`Baselines` (the reference models' answers), :class:`Verification` (checking pixels
against the ground truth), :class:`Designs` (sequential designs for ``run --design``), :class:`Audit` (the
datasets and figures of ``vidaudit audit``) and :class:`Commands` (what it adds to the command line). A suite
declares one by setting the class attribute of the role's name to an instance (``baselines =
CountingBaselines()``) and leaves the others None; a stage that needs one asks ``Baselines.of(suite)``, which
refuses with one line naming the suite and what it lacks. The registry checks every declared role at lookup (of
its kind, its abstract methods implemented), as it checks the suite's own.
"""

from __future__ import annotations

import importlib
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

import numpy as np

from vidaudit.core.contract.profile import AuditPart, PartFigures
from vidaudit.core.errors import ConfigError
from vidaudit.core.manifest import read_dataset_info
from vidaudit.core.targets import load
from vidaudit.core.types import Sample

if TYPE_CHECKING:
    import typer


#: (source frame index, presentation time in seconds, RGB frame) as a pixel observer receives them
ObservedFrame = tuple[int, float, np.ndarray]
#: ``on_progress(done, total)`` of a long job (a progress bar)
OnProgress = Callable[[int, int], None]


class Role:
    """Base of the roles. ``attr`` is the Suite attribute that declares the role and ``offers`` what a suite
    without it lacks (in the refusal). ``suite_name`` is the declaring suite's name, set when the role is declared
    on a Suite class (Python's ``__set_name__``), for the refusals of what a declared role leaves out."""

    attr: ClassVar[str]
    offers: ClassVar[str]
    suite_name: str = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.suite_name = str(getattr(owner, "name", "") or "")

    @classmethod
    def of(cls, suite: object) -> Self:
        """The role of this kind ``suite`` declares; a ConfigError naming the suite and what it lacks otherwise."""
        found = getattr(suite, cls.attr, None)
        if not isinstance(found, cls):
            raise ConfigError(f"the {getattr(suite, 'name', '?')} suite has no {cls.offers}")
        return found

    def lacks(self) -> list[str]:
        """What a declared role leaves out beyond its abstract methods (``check_suite`` refuses it at lookup)."""
        return []

    @property
    def owner(self) -> str:
        """ "the counting suite" (or "this suite" for a role not declared on a class), for refusals."""
        return f"the {self.suite_name} suite" if self.suite_name else "this suite"


class Baselines(Role):
    """The answers of the reference models that need no weights, in the suite's answer format: ``oracle`` and
    ``chance`` (required once declared), the suite's text for one value (``constant_answer``: what a pixel observer
    such as ``camera-flow`` formats its reading through) and its pixel observer (``observe``: ``ideal-observer``).
    ``constant:TEXT`` itself answers TEXT verbatim and needs no role."""

    attr = "baselines"
    offers = "baseline answers (oracle, chance)"

    @abstractmethod
    def oracle_answer(self, sample: Sample) -> str:
        """The answer text of a model that knows the ground truth."""

    @abstractmethod
    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        """A uniformly random answer from the sample's answer space (``option``: e.g. ``chance:0-12``)."""

    def constant_answer(self, sample: Sample, value: str) -> str:
        """The suite's answer text for one value of its answer space."""
        raise ConfigError(f"{self.owner} defines no answer format for a value")

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        """An ideal observer's answer from exactly the frames sent (pixels only, never the answer)."""
        raise ConfigError(f"{self.owner} has no pixel observer")


class Verification(Role):
    """Checking a rendered dataset's videos against their ground truth from decoded pixels (``vidaudit verify``).

    A suite names the ``module`` whose ``verify_dataset(data_dir, samples, *, workers, on_progress)`` checks them
    (imported on first use: listing the suites loads no decoder) and what it refuses to check (``refusal``, read
    off the dataset's ``dataset.json``), so each suite spells neither ``verify``'s signature nor the hand-off again;
    a role that checks otherwise overrides ``verify``."""

    attr = "verification"
    offers = "pixel verification"
    #: the module holding ``verify_dataset`` (``vidaudit.suites.NAME.verify``)
    module: ClassVar[str] = ""

    def lacks(self) -> list[str]:
        """``module`` unless the role checks otherwise (its own ``verify``)."""
        return (
            ["verify (or a module naming verify_dataset)"]
            if not self.module and type(self).verify is Verification.verify
            else []
        )

    def refusal(self, data_dir: Path, info: Mapping[str, Any]) -> str | None:
        """Why the dataset in ``data_dir`` (its info ``info``) has nothing to check from pixels, as a refusal that
        names what verification applies to; None: it has."""
        return None

    def verify(
        self,
        data_dir: Path,
        samples: Sequence[Sample],
        *,
        workers: int | None = None,
        on_progress: OnProgress | None = None,
    ) -> dict[str, list[str]]:
        """Problems per sample id ({}: every sample verified); a ConfigError where ``refusal`` finds nothing to check."""
        if not self.module:
            raise ConfigError(f"{self.owner}'s verification names no module to check pixels with")
        refused = self.refusal(data_dir, read_dataset_info(data_dir))
        if refused:
            raise ConfigError(refused)
        check = load(f"{self.module}:verify_dataset", f"{self.owner}'s verification")
        problems: dict[str, list[str]] = check(data_dir, samples, workers=workers, on_progress=on_progress)
        return problems


class SequentialDesign(Protocol):
    """What :meth:`Designs.sequential_design` returns (the run stage's ``waves.WaveDesign``)."""

    def next_wave(self, outcomes: Mapping[str, bool]) -> Sequence[str]:
        """Trial ids to run next given {trial id: correct} of every trial with a final outcome; empty: done."""
        ...

    def info(self) -> dict[str, Any]:
        """The design's name, rule and settings (written to run.json and the report)."""
        ...


class Designs(Role):
    """Sequential designs for ``vidaudit run --design NAME [--rule RULE]`` (counting: ``adaptive``)."""

    attr = "designs"
    offers = "sequential designs"

    @abstractmethod
    def sequential_design(self, name: str, rule: str | None, planned: Sequence[Any]) -> SequentialDesign:
        """The design called ``name`` over the full plan ``planned``; a ConfigError naming the known ones."""


def sequential_design(suite: object, name: str, rule: str | None, planned: Sequence[Any]) -> SequentialDesign:
    """The design ``name`` of ``suite``'s :class:`Designs` over ``planned``; a ConfigError where it has none."""
    designs = getattr(suite, Designs.attr, None)
    if not isinstance(designs, Designs):
        raise ConfigError(
            f"the {getattr(suite, 'name', '?')} suite has no {name!r} design; drop --design to run every planned trial"
        )
    return designs.sequential_design(name, rule, planned)


class Audit(Role):
    """What the suite gives ``vidaudit audit``: the datasets an audit at a budget runs, their generation, the
    conditions they run at, and the headline figures read back from a run's ``report.json``."""

    attr = "audit"
    offers = "audit datasets"

    @abstractmethod
    def audit_parts(self, budget: str) -> Sequence[AuditPart]:
        """The datasets an audit at ``budget`` (smoke, standard, paper) runs; () leaves the suite out."""

    @abstractmethod
    def generate_part(
        self, part: AuditPart, out: Path, *, workers: int | None = None, on_progress: OnProgress | None = None
    ) -> Path:
        """Generate ``part``'s preset into ``out`` (pixel-checked as its generate command does); the manifest."""

    def part_conditions(self, part: AuditPart, data_dir: Path) -> tuple[str, ...]:
        """The conditions ``part`` runs at (a generator may write them beside its data; default: the part's)."""
        return part.conditions

    @abstractmethod
    def profile_figures(self, part: AuditPart, results: Mapping[str, Any]) -> PartFigures:
        """The headline figures of ``part`` per model from a run's ``report.json`` ``results``."""


class ModuleAudit(Audit):
    """An :class:`Audit` whose functions live in one module, imported on first use (listing the suites imports
    none): ``audit_parts(budget)``, ``generate_part(part, out, *, workers, on_progress)``,
    ``profile_figures(part, results)`` and, optionally, ``part_conditions(part, data_dir)``."""

    def __init__(self, module: str) -> None:
        self.module = module

    def _hook(self, name: str) -> Any:
        return getattr(importlib.import_module(self.module), name, None)

    def _require(self, name: str) -> Any:
        fn = self._hook(name)
        if fn is None:
            raise ConfigError(f"{self.owner}'s audit module {self.module} has no {name}")
        return fn

    def audit_parts(self, budget: str) -> Sequence[AuditPart]:
        parts: Sequence[AuditPart] = self._require("audit_parts")(budget)
        return parts

    def generate_part(
        self, part: AuditPart, out: Path, *, workers: int | None = None, on_progress: OnProgress | None = None
    ) -> Path:
        return Path(self._require("generate_part")(part, out, workers=workers, on_progress=on_progress))

    def part_conditions(self, part: AuditPart, data_dir: Path) -> tuple[str, ...]:
        fn = self._hook("part_conditions")
        return part.conditions if fn is None else tuple(fn(part, data_dir))

    def profile_figures(self, part: AuditPart, results: Mapping[str, Any]) -> PartFigures:
        figures: PartFigures = self._require("profile_figures")(part, results)
        return figures


class Commands(Role):
    """What the suite adds to the command line (each optional): its ``vidaudit generate`` sub-command(s), sub-commands
    of the other groups (``import``, ``validate``: faithful's ``import strand``), and the small verified dataset
    ``vidaudit demo`` renders."""

    attr = "commands"
    offers = "commands"

    def add_commands(self, generate: typer.Typer) -> None:
        """Contribute this suite's ``vidaudit generate ...`` sub-command(s)."""

    def add_group_commands(self, groups: Mapping[str, typer.Typer]) -> None:
        """Contribute sub-commands to the CLI's other groups (``import``, ``validate``)."""

    def generate_demo(self, out: Path, *, workers: int | None = None, on_progress: OnProgress | None = None) -> Path:
        """Write a small verified dataset into ``out`` for ``vidaudit demo``; return its manifest."""
        raise ConfigError(f"{self.owner} has no demo data")
