"""One stress probe: a :class:`Suite` of its own, a part of the stress suite (``PartedSuite``).

The Reveal probes share nothing but the pipeline: each renders its own stimuli, asks its own question,
scores its own answer format and reports its own tables. A probe is a ``Probe`` (a ``Suite`` with a
generator) in its own sub-package of ``vidaudit.suites.stress``, listed in ``StressSuite.parts``; the
contract's ``PartedSuite`` routes every hook to the probe a sample names (``sample.params["probe"]``).
Like any suite, a probe implements ``score`` and ``aggregate`` itself: most bind the functions of their
``scoring`` and ``report`` modules, which take the contract's ``ScoreInput`` and ``AggregateInput``
(``score = staticmethod(score_trial)``; a report reads the human study's records of its own samples from
``AggregateInput.human``: the human-ceiling columns). A probe declares its baselines (a ``ProbeBaselines``; a
``ChoiceBaselines`` where every answer is one of a fixed set), and a probe that renders all its stimuli from a
preset is a ``RenderingProbe``; ``viewer.probe_trial`` builds its rows in the trace viewer. A dataset holds the
samples of one probe (one ``generate`` call); a run may mix datasets of several probes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vidaudit.sdk import (
    Baselines,
    ConfigError,
    DataError,
    ObservedFrame,
    PartedSuite,
    PerturbationSpec,
    Sample,
    ScoreRecord,
    Suite,
    VideoRef,
    guard_replace,
    progress_bar,
    write_dataset_info,
    write_manifest,
)
from vidaudit.suites.stress.common import source_of
from vidaudit.suites.stress.sources import SourceLog


def guard_planned(out: Path, planned: Iterable[tuple[str, dict[str, Any], Any]], *, force: bool) -> None:
    """Before anything is rendered, refuse (``guard_replace``) to replace the dataset in ``out`` with one whose
    samples differ: ``planned`` gives each planned sample's id, params and answer (its video is not made yet)."""
    not_yet = VideoRef(path="", fps=1.0, width=1, height=1, n_frames=0, duration_s=0)
    guard_replace(
        out,
        [
            Sample(sample_id=sid, suite="stress", params=params, question="", answer=answer, video=not_yet)
            for sid, params, answer in planned
        ],
        force=force,
        key=lambda s: (s.params, s.answer),
        command="generate stress",
    )


def write_dataset(
    out: Path, samples: Sequence[Sample], probe: str, *, source_log: SourceLog | None = None, **info: Any
) -> Path:
    """The last step of a probe's generator: the manifest of ``samples`` and ``dataset.json`` (the suite, the
    probe and ``n_samples``, counted here, then ``info``, and what a ``--source`` loader left out or changed,
    ``source_log``, where the data came from a user's source); returns the manifest path."""
    if source_log is not None:
        info["source_log"] = source_log.as_json()
    manifest = write_manifest(out, samples)
    write_dataset_info(out, {"suite": "stress", "probe": probe, "n_samples": len(samples), **info})
    return manifest


@dataclass(frozen=True)
class GenerateOptions:
    """What ``vidaudit generate stress`` passes to a probe's generator, whole (one typed object, not its fields
    spelled again at every layer).

    ``source`` is a user's input where the probe reads one (a folder of stills, a NExT-QA-format set,
    annotated driving clips); ``settings`` are the ``--set KEY=VALUE`` pairs, which each probe checks
    against the keys it knows (an unknown key is an error naming the known ones).

    ``workers`` and ``pool`` say where a probe's per-video jobs run (``core.jobs``): serially by default
    (``workers`` 1), on a local process pool of ``workers`` (None: the cores), or on the executor
    ``pool(initializer=...)`` makes (``--executor ray``). The videos are the same bytes whichever way they
    ran; the probe's generator alone writes the manifest and ``dataset.json``.
    """

    preset: str = "smoke"
    seeds: int | None = None
    source: Path | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    force: bool = False
    workers: int | None = 1
    pool: Callable[..., Executor] | None = None
    #: where a ``--source`` loader says what it left out or changed (the CLI prints to stderr; None: silent)
    say: Callable[[str], None] | None = None

    def source_log(self) -> Any:
        """A fresh ``sources.SourceLog`` that prints through ``say``."""
        return SourceLog(say=self.say)

    def refuse_pool(self, probe: str, why: str) -> None:
        """A ConfigError for ``--executor ray`` on a probe that renders no video of its own (``why`` says so)."""
        if self.pool is not None:
            raise ConfigError(f"probe {probe} {why}, so it has nothing to run on Ray: drop --executor ray")

    def run_generator(self, probe: str, generate: Callable[..., Path], out: Path, **extra: Any) -> Path:
        """``generate(out, self, on_progress, **extra)``, the generator of every probe that renders its own videos,
        under a progress bar "PROBE videos"; returns the manifest path."""
        with progress_bar(f"{probe} videos") as update:
            return generate(out, self, update, **extra)

    def check_settings(self, known: Sequence[str], probe: str) -> None:
        unknown = sorted(set(self.settings) - set(known))
        if unknown:
            hint = f"; it takes: {', '.join(known)}" if known else "; it takes none"
            raise ConfigError(f"probe {probe} has no setting {', '.join(unknown)}{hint}")


class ProbeBaselines(Baselines):
    """A probe's baselines: the oracle and chance answers it must give, and its refusals of what it has not."""

    def constant_answer(self, sample: Sample, value: str) -> str:
        raise ConfigError(f"probe {self.suite_name} has no constant answer")

    def refuse_option(self, option: str, rule: str) -> None:
        """Chance takes no option on this probe: a ConfigError saying what it draws (``rule``) when given one."""
        if option:
            raise ConfigError(f"chance for {self.suite_name} takes no option ({rule})")

    def observe(self, frames: Sequence[ObservedFrame], metadata: Mapping[str, Any]) -> str:
        raise ConfigError(f"probe {self.suite_name} has no pixel observer: no classical reader exists for it")


class ChoiceBaselines(ProbeBaselines):
    """The baselines of a probe whose every answer is one of a fixed set (``choices``): the oracle gives the key
    and chance draws a choice uniformly, each in the probe's answer text (``answer_text``; the bare choice unless a
    probe words it); ``chance_rule`` says what chance draws, in the refusal of an option it does not take."""

    choices: tuple[str, ...] = ()
    chance_rule: str = ""
    #: the refusal of a constant outside ``choices`` (a constant is read upper-cased), before ", got VALUE"
    constant_rule: str = ""

    @staticmethod
    def answer_text(choice: str, /) -> str:
        return choice

    def constant_answer(self, sample: Sample, value: str) -> str:
        v = value.strip().upper()
        if v not in self.choices:
            raise ConfigError(f"{self.constant_rule}, got {value!r}")
        return self.answer_text(v)

    def oracle_answer(self, sample: Sample) -> str:
        return self.answer_text(str(sample.answer))

    def chance_answer(self, sample: Sample, rng: np.random.Generator, option: str = "") -> str:
        self.refuse_option(option, self.chance_rule)
        return self.answer_text(self.choices[int(rng.integers(0, len(self.choices)))])


class Probe(Suite):
    """A stress probe: a Suite whose samples one ``generate`` call writes; what it does not offer is refused.

    Beyond the Suite protocol a probe has its presets and generator (``vidaudit generate stress --probe``),
    a per-sample ground-truth check (the stress suite collects every probe's refusals into one error),
    the prompt names it answers (``prompts``) and the sample parameters its score records keep."""

    #: the ``--set`` keys its generator takes (any other is refused, naming these)
    settings: tuple[str, ...] = ()
    presets: tuple[str, ...] = ("smoke",)
    default_prompt = "mcq"
    #: the prompt names this probe answers
    prompts: tuple[str, ...] = ("mcq",)
    #: sample parameters copied into every score record
    record_keys: tuple[str, ...] = ("probe",)
    #: the generator ``generate(out, options, on_progress)`` that ``build`` runs under a progress bar ("PROBE
    #: videos"), bound as ``staticmethod(generate)``; None: the probe builds its samples its own way or has none
    generator: Callable[..., Path] | None = None
    #: sample parameters whose value must be one of these (checked before ``check_truth``)
    domains: dict[str, tuple[str, ...]] = {}

    def generate(self, out: Path, options: GenerateOptions) -> Path:
        """Render (or load) the probe's samples into ``out``; returns the manifest path. The ``--set`` keys are
        checked against ``settings`` before anything else, then ``build`` does the probe's work."""
        options.check_settings(self.settings, self.name)
        return self.build(out, options)

    def build(self, out: Path, options: GenerateOptions) -> Path:
        """The probe's generator, given options whose settings it takes: ``generator`` where the probe declares one."""
        if self.generator is None:
            raise ConfigError(f"probe {self.name} has no generator")
        return options.run_generator(self.name, self.generator, out)

    def check_sample(self, sample: Sample) -> str | None:
        """Why this sample's ground truth cannot be trusted, or None: a parameter outside its ``domains``
        first, then the probe's own ``check_truth``."""
        for key, allowed in self.domains.items():
            if (value := sample.params.get(key)) not in allowed:
                return f"{key} {value!r} is not one of {', '.join(allowed)}"
        return self.check_truth(sample)

    def check_truth(self, sample: Sample) -> str | None:
        """The probe's own check of a sample whose ``domains`` hold (its answer against its parameters)."""
        return None

    def check_samples(self, samples: Sequence[Sample], source: str) -> None:
        bad = [f"{s.sample_id}: {why}" for s in samples if (why := self.check_sample(s))]
        if bad:
            raise DataError(f"{source}: {len(bad)} {self.name} samples cannot be trusted: " + "; ".join(bad[:5]))

    def perturbation_problem(self, sample: Sample, spec: PerturbationSpec) -> str | None:
        return f"probe {self.name} does not define its ground truth under {spec.name}; drop the perturbation"

    def prompt_names(self) -> Sequence[str]:
        return self.prompts

    def record_params(self, sample: Sample) -> dict[str, Any]:
        p = sample.params
        return {k: p[k] for k in self.record_keys if k in p}

    def source_of(self, record: ScoreRecord) -> tuple[str, str]:
        """The probe's source of the item (``common.source_of``: the scene, the rendered procedure, ...)."""
        return source_of(record)


class RenderingProbe(Probe):
    """A probe that renders every stimulus itself from its preset and seeds: it reads no ``--source`` and takes no
    ``--set``; its ``generator`` renders the preset's videos."""

    #: what it renders, named in the refusal of --source ("stills")
    renders: str = "stimuli"

    def build(self, out: Path, options: GenerateOptions) -> Path:
        if options.source is not None:
            raise ConfigError(f"{self.name} renders its own {self.renders}; --source is not read by it")
        return super().build(out, options)


def probe_of(suite: PartedSuite, name: object) -> Probe:
    """The stress probe called ``name`` among ``suite``'s parts (a ConfigError naming the known ones otherwise)."""
    part = suite.part(name)
    if not isinstance(part, Probe):
        raise ConfigError(f"stress probe {name!r} is a {type(part).__name__}, not a stress Probe")
    return part
