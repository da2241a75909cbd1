"""The ``object-centric`` model spec: ``object-centric:[KEY=VALUE,]...BACKBONE``.

BACKBONE is ``offline`` (the classical extractor, lexical retrieval and the program answerer) or any
model spec (``openai:gpt-4o``, ``openai:qwen@http://host/v1``, ``hf:...``), used for E, R and G unless a
stage names its own (``extract=SPEC``, ``retrieve=SPEC``, ``answer=SPEC``; a spec has no comma).
Options come first, comma-separated, each ``key=value`` (a backbone never starts with ``key=``):

| key | default | meaning |
| --- | --- | --- |
| ``chunk_s`` | 15 | chunk length in seconds |
| ``chunks`` | 0 | N > 0: N equal chunks per video instead of ``chunk_s`` (``chunks=1``: one extraction over the whole video, the call-matched single pass) |
| ``chunk_frames`` | 60 | frames per chunk sent to E |
| ``answer_frames`` | 64 | frames uniform over the whole video sent to G (0: none) |
| ``retrieval`` | ``model`` (``lexical`` offline) | ``model``, ``lexical``, ``all`` (no filter), ``random`` (top-k) |
| ``answer_input`` | ``both`` | ``both``, ``text`` (no frames at G), ``frames`` (no trajectories at G) |
| ``drop_one`` | ``off`` | ``on``: G answers without the first retrieved trajectory the question names (D.6's drop-one-gold re-answer; ``framework.interventions``) |
| ``memory_tokens`` | 0 | K > 0: G's trajectory memory cut to K estimated tokens (the token-matched budget; ``memory.truncate``) |
| ``order`` | ``time`` | ``shuffled``: the shuffled-trajectory-order ablation |
| ``linking`` | ``on`` | ``off``: identity linking off (every chunk observation its own trajectory) |
| ``matching`` | ``bipartite`` | ``greedy`` |
| ``dt_max`` | 15 | Delta t_max in seconds |
| ``tau`` | 0.75 | tau_conf |
| ``aggregator`` | ``deterministic`` | ``summarise``: one backbone call merges the chunk observations (``framework.summarise``) |
| ``states`` | ``structured`` | ``captions``: a free-text caption per chunk instead of structured states; ``prose``: the states' content in prose (the paper's prose extractor; ``framework.captions``) |
| ``variant`` | | the paper's names (Table 7): ``A`` (structured states, the default), ``B`` (``states=prose,retrieval=all``: prose extractor, no R), ``C`` (``states=prose,retrieval=model``: prose extractor + prose R); an option that contradicts it is refused |
| ``schema`` | the dataset's | ``synthetic`` or ``open`` (STRAND's open vocabulary: free categories, attributes, predicates; ``framework.schema``); unset: what the dataset says (``framework.vocabulary``), else synthetic |
| ``extract``, ``retrieve``, ``answer`` | the backbone | that stage's own model spec (E, R, G; summarise runs on G's) |
| ``max_depth`` | 32 | the deepest JSON nesting of an extract or summarise answer read |
| ``max_objects`` | 64 | the most objects one chunk's extract answer may list (summarise: trajectories, x its chunks) |
| ``max_records`` | 1024 | the most objects and states together in one chunk's extract answer (summarise: x its chunks) |
| ``max_frame_pixels`` | 8294400 | the most pixels (width x height) of a video frame the framework decodes (3840 x 2160) |

An answer past ``max_depth``, ``max_objects`` or ``max_records`` errors its trial (``too_large``, not
retried; ``framework.schema.AnswerCaps``); the run goes on with the other trials. So does a video whose
frames are larger than ``max_frame_pixels`` (read from the header of the stream they come from, before any frame
is decoded: a chunk decodes ``chunk_frames`` of them at full size, 60 x 25 MB at the cap).

``aggregator=summarise`` and ``states=captions`` need a model: with the offline backbone they are refused
(no deterministic stand-in). ``states=captions`` has no trajectories, so it refuses the options that act on
them (``aggregator=summarise``, ``order=shuffled``, ``linking=off``, ``matching=greedy``).

The spec's label names every option given, so each ablation is its own model in a run and its
report, and its trial ids differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from vidaudit.sdk import ConfigError, ModelSpec
from vidaudit.suites.faithful.framework.schema import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_OBJECTS,
    DEFAULT_MAX_RECORDS,
    AnswerCaps,
)

_OPT = re.compile(r"([a-z_]+)=([^,]*),")
STAGE_KEYS = ("extract", "retrieve", "answer")
CHOICES = {
    "retrieval": ("model", "lexical", "all", "random"),
    "answer_input": ("both", "text", "frames"),
    "order": ("time", "shuffled"),
    "linking": ("on", "off"),
    "matching": ("bipartite", "greedy"),
    "aggregator": ("deterministic", "summarise"),
    "states": ("structured", "captions", "prose"),
    "schema": ("synthetic", "open"),
    "drop_one": ("off", "on"),
}


@dataclass(frozen=True)
class FrameworkOptions:
    backbone: str
    chunk_s: float = 15.0
    #: N > 0: N equal chunks per video instead of chunk_s (1: one extraction over the whole video)
    chunks: int = 0
    chunk_frames: int = 60
    answer_frames: int = 64
    retrieval: str = ""
    answer_input: str = "both"
    #: K > 0: cap G's trajectory memory at K estimated tokens (token-matched budgets)
    memory_tokens: int = 0
    #: "on": D.6's atomic intervention -- G answers without the first retrieved trajectory the question names
    drop_one: str = "off"
    order: str = "time"
    linking: str = "on"
    matching: str = "bipartite"
    dt_max: float = 15.0
    tau: float = 0.75
    aggregator: str = "deterministic"
    states: str = "structured"
    #: the extraction schema: the synthetic worlds' (colour/shape/size/number, the simulator's events) or the
    #: open vocabulary of real videos (STRAND's records: free categories, attributes and predicates); "" = the
    #: dataset's (the request metadata's ``schema``; synthetic when it says none)
    schema: str = ""
    #: per-stage backbones (model specs; "" = the backbone): E, R and G (the paper's Qwen configuration uses
    #: three models; summarise runs on G's, captions on E's)
    extract: str = ""
    retrieve: str = ""
    answer: str = ""
    #: caps on what one extract (or summarise) answer may hold (``schema.AnswerCaps``)
    max_depth: int = DEFAULT_MAX_DEPTH
    max_objects: int = DEFAULT_MAX_OBJECTS
    max_records: int = DEFAULT_MAX_RECORDS
    #: the largest video frame (width x height) decoded: 4K UHD
    max_frame_pixels: int = 3840 * 2160

    @property
    def caps(self) -> AnswerCaps:
        return AnswerCaps(max_depth=self.max_depth, max_objects=self.max_objects, max_records=self.max_records)

    @property
    def offline(self) -> bool:
        return self.backbone == "offline"

    def stage_spec(self, stage: str) -> str:
        """The model spec a stage runs on: its own, else the backbone."""
        return getattr(self, stage) or self.backbone


#: the paper's configuration names (Table 7; A, unnamed there, is the structured framework "Ours")
VARIANTS = {
    "A": {"states": "structured"},
    "B": {"states": "prose", "retrieval": "all"},
    "C": {"states": "prose", "retrieval": "model"},
}
VARIANT_TITLES = {
    "A": "Variant A: structured states (Ours)",
    "B": "Variant B: prose extractor, no R",
    "C": "Variant C: prose extractor + prose R",
}


def _expand_variant(label: str, given: dict[str, str]) -> dict[str, str]:
    """``variant=A|B|C`` as the options it stands for; an option given beside it that contradicts it is refused."""
    name = given.pop("variant").upper()
    if name not in VARIANTS:
        raise ConfigError(f"{label}: variant must be one of {', '.join(VARIANTS)} (the paper's names), got {name!r}")
    for k, v in VARIANTS[name].items():
        if k in given and given[k] != v:
            raise ConfigError(f"{label}: variant={name} means {k}={v}; drop {k}={given[k]} or the variant")
    return {**given, **VARIANTS[name]}


def variant_of(opts: FrameworkOptions) -> str | None:
    """The paper's name of a configuration however it was written (None: none of A, B, C)."""
    if opts.states == "prose":
        return "B" if opts.retrieval == "all" else "C" if opts.retrieval == "model" else None
    if (
        opts.states == "structured"
        and opts.retrieval in ("model", "lexical")
        and opts.aggregator == "deterministic"
        and opts.order == "time"
        and opts.linking == "on"
        and opts.answer_input == "both"
        and opts.drop_one == "off"
        and not opts.memory_tokens
    ):
        return "A"
    return None


def parse_spec(spec: ModelSpec) -> FrameworkOptions:
    """The options of an ``object-centric:`` spec, each parsed and checked, then checked together (see the
    module docstring); the first problem found is refused with one line naming the fix."""
    backbone, given = _split_options(spec)
    if "variant" in given:
        given = _expand_variant(spec.label, given)
    known = {f.name: f.type for f in fields(FrameworkOptions) if f.name != "backbone"}
    values: dict[str, object] = {"backbone": backbone}
    for k, v in given.items():
        if k not in known:
            raise ConfigError(f"{spec.label}: unknown option {k!r}; options are {', '.join(known)}")
        values[k] = _PARSERS.get(k, _number_option)(spec.label, k, v, known[k])
    opts = FrameworkOptions(**values)  # type: ignore[arg-type]
    _check_ranges(spec.label, opts)
    if not opts.retrieval:
        opts = FrameworkOptions(**{**opts.__dict__, "retrieval": "lexical" if opts.offline else "model"})
    _refuse_model_only_options(spec.label, opts)
    _refuse_trajectory_options(spec.label, opts)
    _refuse_offline_misfits(spec.label, opts)
    return opts


def _split_options(spec: ModelSpec) -> tuple[str, dict[str, str]]:
    """(the backbone, the ``key=value`` options written before it): options come first, and a backbone never
    starts with ``key=``."""
    rest = spec.name + (f"@{spec.base_url}" if spec.base_url else "")
    given: dict[str, str] = {}
    while (m := _OPT.match(rest)) is not None:
        given[m.group(1)] = m.group(2)
        rest = rest[m.end() :]
    if not rest:
        raise ConfigError(
            f"{spec.label}: no backbone; write object-centric:offline or object-centric:PROVIDER:MODEL "
            "(options first, e.g. object-centric:linking=off,offline)"
        )
    return rest, given


def _stage_option(label: str, key: str, value: str, _type: object) -> object:
    """``extract=``, ``retrieve=``, ``answer=``: a model spec that parses (not the offline backbone, nor the
    framework itself)."""
    if not value or value == "offline" or value.startswith("object-centric:"):
        raise ConfigError(f"{label}: {key}= takes a model spec (e.g. {key}=openai:gpt-4o), got {value!r}")
    try:
        ModelSpec.parse(value)
    except (ConfigError, ValueError) as e:
        raise ConfigError(f"{label}: {key}={value!r} is not a model spec ({e})") from None
    return value


def _choice_option(label: str, key: str, value: str, _type: object) -> object:
    """An option with a fixed set of values (``CHOICES``)."""
    if value not in CHOICES[key]:
        raise ConfigError(f"{label}: {key} must be one of {', '.join(CHOICES[key])}, got {value!r}")
    return value


def _number_option(label: str, key: str, value: str, type_: object) -> object:
    """Every other option: a number, float or int as the field is declared."""
    try:
        return float(value) if type_ in (float, "float") else int(value)
    except ValueError:
        raise ConfigError(f"{label}: {key} must be a number, got {value!r}") from None


#: how each option's text is read (options not listed are numbers: ``_number_option``)
_PARSERS = {**dict.fromkeys(STAGE_KEYS, _stage_option), **dict.fromkeys(CHOICES, _choice_option)}


def _check_ranges(label: str, opts: FrameworkOptions) -> None:
    """The numeric options within the ranges that make a run (positive lengths, a confidence below 1, caps)."""
    if (
        opts.chunk_s <= 0
        or opts.chunk_frames < 1
        or opts.answer_frames < 0
        or opts.dt_max <= 0
        or not 0 <= opts.tau < 1
        or opts.chunks < 0
        or opts.memory_tokens < 0
    ):
        raise ConfigError(
            f"{label}: chunk_s and dt_max must be > 0, chunk_frames >= 1, answer_frames >= 0, "
            "chunks >= 0, memory_tokens >= 0, 0 <= tau < 1"
        )
    if min(opts.max_depth, opts.max_objects, opts.max_records, opts.max_frame_pixels) < 1:
        raise ConfigError(f"{label}: max_depth, max_objects, max_records and max_frame_pixels must be >= 1")


def _refuse_model_only_options(label: str, opts: FrameworkOptions) -> None:
    """Summarising, captions and prose need a model: the offline backbone has no deterministic stand-in."""
    for key, value in (("aggregator", "summarise"), ("states", "captions"), ("states", "prose")):
        if opts.offline and getattr(opts, key) == value:
            raise ConfigError(
                f"{label}: {key}={value} needs a model, and the offline backbone has none; "
                f"use a model backbone, e.g. object-centric:{key}={value},openai:gpt-4o"
            )


def _refuse_trajectory_options(label: str, opts: FrameworkOptions) -> None:
    """Captions and prose make no trajectories, so the options that act on trajectories do not apply."""
    if opts.states in ("captions", "prose"):
        clash = [
            f"{k}={getattr(opts, k)}"
            for k, d in (
                ("aggregator", "deterministic"),
                ("order", "time"),
                ("linking", "on"),
                ("matching", "bipartite"),
                ("drop_one", "off"),
                ("memory_tokens", 0),
            )
            if getattr(opts, k) != d
        ]
        if clash:
            raise ConfigError(
                f"{label}: states={opts.states} has no trajectories, so {', '.join(clash)} does not apply; drop it"
            )


def _refuse_offline_misfits(label: str, opts: FrameworkOptions) -> None:
    """The offline backbone reads only the synthetic scenes and runs no model: no open schema, no stage models,
    no model retrieval."""
    if opts.offline and opts.schema == "open":
        raise ConfigError(
            f"{label}: schema=open needs a model extractor; the offline one reads only the "
            "synthetic scenes (use a model backbone, e.g. object-centric:schema=open,openai:gpt-4o)"
        )
    staged = [k for k in STAGE_KEYS if getattr(opts, k)]
    if opts.offline and staged:
        raise ConfigError(
            f"{label}: {', '.join(k + '=' for k in staged)} give a stage its own model, and the "
            "offline backbone runs no model; use a model backbone (the default for the other stages)"
        )
    if opts.offline and opts.retrieval == "model":
        raise ConfigError(f"{label}: the offline backbone has no model to retrieve with; use retrieval=lexical")
