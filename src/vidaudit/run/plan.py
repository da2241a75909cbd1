"""The plan: samples x conditions x models -> trials, and how each trial's request is built.

Everything that decides what a model receives is resolved here, once per trial, and hashed into the
trial id: the condition (a bare ``native`` becomes the backend's explicit rate), the prompt as the
suite renders it, the frames selected, the model spec and the adapter's request-changing options.
The selection then travels inside the request (so the store logs the indices and timestamps actually
sent); adapters never resample.
"""

from __future__ import annotations

import functools
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, NamedTuple

from vidaudit.core.contract.suite import Prompt, Suite
from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import canonical_json, sha256_json, sha256_text
from vidaudit.core.timeline import Timeline
from vidaudit.core.types import (
    Condition,
    ModelSpec,
    Presentation,
    Sample,
    Trial,
    VideoRef,
)
from vidaudit.models.base import Capabilities
from vidaudit.run.audit_log import line_json
from vidaudit.run.perturbed import PerturbedInput
from vidaudit.run.servable import (
    coverage_refusals,
    partial_coverage_allowed,
    plan_perturbed,
    raise_refusals,
    raise_unservable,
    servable_problems,
)
from vidaudit.run.store.records import KeyedTrial, TrialDraft
from vidaudit.run.trial_json import (
    PER_TRIAL,
    PROMPT_IS_ITS_SHA,
    TRIAL_FIELDS,
    Kept,
    TrialJson,
    carries,
    new_trial,
    prompt_sha256,
    record_id,
    selection_sha256,
    trial_of,
    trial_text,
)
from vidaudit.video.sampling import FrameSelection, around_events, at_fps, every_frame, uniform_count


@dataclass(frozen=True)
class PlannedTrial:
    """A trial with everything resolved for it: the sample, the frames to send and the prompt text."""

    trial: Trial
    sample: Sample
    selection: FrameSelection
    prompt: Prompt
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: the condition's perturbation chain on this sample (None: the sample's own video)
    perturbed: PerturbedInput | None = None
    #: the trial's JSON and id, computed once by the plan (None: hashed on demand)
    keyed: KeyedTrial | None = None

    @property
    def id(self) -> str:
        return self.trial.id if self.keyed is None else self.keyed.id

    @property
    def video(self) -> VideoRef:
        """The facts of the video the frames are selected from (the perturbed one, if any)."""
        return self.sample.video if self.perturbed is None else self.perturbed.video


_PLANNED_FIELDS = ("trial", "sample", "selection", "prompt", "metadata", "perturbed", "keyed")


def _planned(
    trial: Trial,
    sample: Sample,
    selection: FrameSelection,
    prompt: Prompt,
    metadata: Mapping[str, Any],
    perturbed: PerturbedInput | None,
    keyed: KeyedTrial,
) -> PlannedTrial:
    """``PlannedTrial(...)`` with every field given, without the frozen dataclass's field-by-field set-up (a run
    makes one per trial); the plain constructor when its fields are not the ones listed here."""
    if _PLANNED_FAST:
        p = object.__new__(PlannedTrial)
        object.__setattr__(
            p,
            "__dict__",
            {
                "trial": trial,
                "sample": sample,
                "selection": selection,
                "prompt": prompt,
                "metadata": metadata,
                "perturbed": perturbed,
                "keyed": keyed,
            },
        )
        return p
    return PlannedTrial(trial, sample, selection, prompt, metadata, perturbed, keyed)


_PLANNED_FAST = tuple(f.name for f in fields(PlannedTrial)) == _PLANNED_FIELDS


def select_frames(
    sample: Sample, condition: Condition, video: VideoRef | None = None, *, clock: Timeline | None = None
) -> FrameSelection:
    """The frames a resolved condition shows of a sample (of ``video``, its perturbed video, when given);
    ``clock``: the video's timeline, when the caller has it already."""
    v = video or sample.video
    p = condition.presentation
    if p is Presentation.KEYFRAMES and video is not None:
        raise ConfigError(
            f"condition {condition.id}: keyframes are the trace's event frames of the source video "
            "and do not apply to a perturbed video; use frames@K or native"
        )
    clock = clock or v.timeline
    if p is Presentation.FRAMES:
        if condition.n_frames is not None:
            return uniform_count(clock, condition.n_frames)
        return at_fps(clock, condition.fps or 1.0)
    if p is Presentation.KEYFRAMES:
        return around_events(
            sample.trace.times, [e.frame for e in sample.trace.events], clock, condition.keyframe_offset_s
        )
    if not condition.resolved:
        raise ConfigError(f"condition {condition.id} is not resolved to a rate; the plan resolves it per model")
    return _every_frame(clock) if condition.all_frames else at_fps(clock, condition.fps)


#: ``every_frame`` memoised as ``at_fps`` is: a streamed plan selects again on every pass, and a plan has few clocks
_every_frame = functools.lru_cache(maxsize=1024)(every_frame)


@dataclass(frozen=True)
class _Group:
    """One model under one resolved condition: what every trial of it shares."""

    model: ModelSpec
    condition: Condition
    options: dict[str, Any]
    #: the resolved condition's index among the plan's distinct ones (models that resolve a condition alike
    #: share it): the key of its per-sample inputs in ``PlanStream``'s memo
    slot: int = 0
    #: ``model.label`` and ``condition.id``, computed once for every trial of the group
    label: str = ""
    condition_id: str = ""


#: (sample, resolved condition) inputs a ``PlanStream`` keeps (a prompt and two hashes: about 1 KB each at most,
#: equal prompts held once); a plan with more does without the memo for the rest
INPUT_MEMO_LIMIT = 1 << 16
#: frames of the distinct selections the memo keeps (about 60 bytes each); past it an input keeps its hashes and
#: its frames are selected again when asked (``video.sampling`` memoises the common ones)
INPUT_MEMO_FRAMES = 1 << 18

#: one trial's input: its prompt and that prompt's sha256, its frames (None in the memo: select them again) and
#: the input's sha256
_Input = tuple[Prompt, str, FrameSelection | None, str]


class PlanStream:
    """The plan as a stream: samples x conditions x models, produced trial by trial as it is consumed.

    Order (models, then conditions, then samples), trial ids and everything in a ``PlannedTrial`` are
    those of ``planned()``, which is this stream made a list. Nothing per trial is held but its id: each
    pass (``check``, ``__iter__``, ``for_model``) computes the trials again, sharing per (model, condition)
    what does not change between samples (the condition's and model's JSON, the adapter options), and a
    full pass of ``keys`` (registration) keeps each trial's id and sample index (36 bytes) so that later
    passes do not write and hash each trial's JSON again.
    What a trial is sent does not depend on the model once the condition is resolved, so each (sample,
    resolved condition)'s prompt, frames and their hashes are computed once and shared by every model
    and every pass (up to ``INPUT_MEMO_LIMIT`` of them, and ``INPUT_MEMO_FRAMES`` frames; perturbed inputs
    are computed per trial).
    """

    def __init__(
        self,
        samples: Sequence[Sample],
        conditions: Sequence[Condition],
        models: Sequence[ModelSpec],
        *,
        suite: Suite,
        caps_by_model: Mapping[str, Capabilities],
        options_by_model: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        options_by_model = options_by_model or {}
        self.samples = list(samples)
        self.suite = suite
        self._clocks = [x.video.timeline for x in self.samples]  # each pass selects frames on every clock
        self._keyframes: dict[tuple[int, float], FrameSelection] = {}  # per sample: few frames, asked per model
        self._sizes: dict[int, list[int]] = {}  # per slot: each sample's selection size (``check``)
        self._metadata: dict[str, tuple[Sample, Mapping[str, Any]]] = {}  # per sample id (``_request_metadata``)
        #: per model, its trials' ids and sample indices from a full ``keys`` pass (``for_model``)
        self._ids: dict[str, Kept] = {}
        self.caps_by_model = caps_by_model
        self.groups: dict[str, list[_Group]] = {}
        seen: dict[str, str] = {}
        slots: dict[str, int] = {}  # a resolved condition's canonical JSON -> its slot
        for m in models:
            caps = caps_by_model[m.label]
            opts = dict(options_by_model.get(m.label, {}))
            groups = self.groups.setdefault(m.label, [])
            for c in conditions:
                suite.check_prompt(c.prompt)
                rc = c.resolved_for(caps.default_native_fps)
                key = f"{m.label} {rc.id}"
                if key in seen:
                    raise ConfigError(
                        f"conditions {seen[key]} and {c.id} are the same input for {m.label} "
                        f"(both {rc.id}); list it once"
                    )
                seen[key] = c.id
                slot = slots.setdefault(canonical_json(rc.model_dump(mode="json")), len(slots))
                groups.append(_Group(m, rc, opts, slot, m.label, rc.id))
        n = len(self.samples)
        #: per slot, each sample's ``_Input`` once computed (None: not yet); none for perturbed conditions
        self._memo: dict[int, list[_Input | None]] = {}
        for groups in self.groups.values():
            for g in groups:
                if (
                    not g.condition.perturbations
                    and g.slot not in self._memo
                    and (len(self._memo) + 1) * n <= INPUT_MEMO_LIMIT
                ):
                    self._memo[g.slot] = [None] * n
        self._prompts: dict[Any, tuple[Prompt, str]] = {}  # equal prompts held once with their sha256
        self._kept_selections: set[int] = set()  # ids of the selections the memo holds (alive while it does)
        self._kept_frames = 0
        by_id: dict[str, list[Sample]] = {}
        for x in self.samples:  # the same sample twice is the same trial twice (as ``planned``'s id check finds)
            twins = by_id.setdefault(x.sample_id, [])
            if any(t == x for t in twins):
                raise ConfigError("the plan repeats a trial: a model or condition is listed twice")
            twins.append(x)

    @property
    def labels(self) -> list[str]:
        return list(self.groups)

    def count(self, label: str) -> int:
        """Trials of one model (every sample under every condition: a refused one stops the run in ``check``)."""
        return len(self.groups[label]) * len(self.samples)

    def __len__(self) -> int:
        return sum(self.count(label) for label in self.groups)

    def __iter__(self) -> Iterator[PlannedTrial]:
        for label in self.groups:
            yield from self.for_model(label)

    def _select(self, i: int, s: Sample, rc: Condition, pin: PerturbedInput | None) -> FrameSelection:
        if pin is not None:
            return select_frames(s, rc, pin.video)
        if rc.presentation is Presentation.KEYFRAMES:
            key = (i, rc.keyframe_offset_s)
            sel = self._keyframes.get(key)
            if sel is None:
                sel = self._keyframes[key] = select_frames(s, rc, clock=self._clocks[i])
            return sel
        return select_frames(s, rc, clock=self._clocks[i])

    def inputs(
        self, refused: list[str] | None = None
    ) -> Iterator[tuple[_Group, Sample, FrameSelection, PerturbedInput | None]]:
        """Each trial's input without its prompt or id (what checks and estimates need), in plan order;
        a refused perturbed input is appended to ``refused`` and skipped."""
        refused = [] if refused is None else refused
        for groups in self.groups.values():
            for g in groups:
                yield from self._group_inputs(g, refused)

    def _group_inputs(
        self, g: _Group, refused: list[str]
    ) -> Iterator[tuple[_Group, Sample, FrameSelection, PerturbedInput | None]]:
        rc = g.condition
        for i, s in enumerate(self.samples):
            pin = plan_perturbed(s, rc, self.suite, refused) if rc.perturbations else None
            if rc.perturbations and pin is None:
                continue
            sel = self._select(i, s, rc, pin)
            if pin is not None and pin.strip_info is not None and not partial_coverage_allowed(s):
                refused += coverage_refusals(s, rc, g.model.label, pin, sel)
            yield g, s, sel, pin

    def _to_check(self, refused: list[str]) -> Iterator[tuple[str, Condition, Sample, FrameSelection, VideoRef]]:
        """What ``servable_problems`` reads of each trial, less the trials that cannot add a problem: after a
        (model, condition)'s first trial, what is checked once is done and a trial adds one only if it sends no
        frame, or more images than its model takes. A resolved condition's selection sizes are counted once for
        every model that shares it (``_sizes``); perturbed inputs are all read."""
        for label, groups in self.groups.items():
            caps = self.caps_by_model[label]
            limit = caps.max_images if caps.images else None
            for g in groups:
                rc = g.condition
                if rc.perturbations:
                    for _, s, sel, pin in self._group_inputs(g, refused):
                        yield label, rc, s, sel, pin.video if pin else s.video
                    continue
                sizes = self._sizes.get(g.slot)
                if sizes is None:
                    sizes = self._sizes[g.slot] = self._slot_sizes(rc)
                native = rc.presentation is Presentation.NATIVE
                for i, (s, n) in enumerate(zip(self.samples, sizes, strict=True)):
                    if i == 0 or n == 0 or (not native and limit is not None and n > limit):
                        yield label, rc, s, self._select(i, s, rc, None), s.video

    def _slot_sizes(self, rc: Condition) -> list[int]:
        """Each sample's selection size under the unperturbed condition ``rc``. Frames at a rate or count and
        native frames depend on the video's clock alone: counted once per distinct clock (a dataset has few),
        not per sample; keyframes follow each sample's trace (selected per sample, kept for the plan's walk)."""
        if rc.presentation is Presentation.KEYFRAMES:
            return [len(self._select(i, s, rc, None)) for i, s in enumerate(self.samples)]
        by_clock: dict[Timeline, int] = {}
        out = []
        for i, (s, clock) in enumerate(zip(self.samples, self._clocks, strict=True)):
            n = by_clock.get(clock)
            if n is None:
                n = by_clock[clock] = len(self._select(i, s, rc, None))
            out.append(n)
        return out

    def refusals(self) -> None:
        """Raise, before any call, on the perturbed inputs the suite refuses (all of them named)."""
        refused: list[str] = []
        if any(g.condition.perturbations for groups in self.groups.values() for g in groups):
            for _ in self.inputs(refused):
                pass
        raise_refusals(refused)

    def planned(self) -> list[PlannedTrial]:
        """Every trial of the design as a list, in plan order (see the module docstring), after ``refusals``;
        refused if it repeats a trial (what tests and benchmarks read whole; a run streams)."""
        self.refusals()
        out = list(self)
        ids = [p.id for p in out]
        if len(set(ids)) != len(ids):
            raise ConfigError("the plan repeats a trial: a model or condition is listed twice")
        return out

    def check(self) -> None:
        """``refusals``, then ``check_servable``, from one pass over the inputs, holding none of them."""
        refused: list[str] = []
        problems = servable_problems(self._to_check(refused), self.caps_by_model)
        raise_refusals(refused)
        raise_unservable(problems)

    def for_model(self, label: str) -> Iterator[PlannedTrial]:
        """One model's trials in plan order (a lane of the executor reads these as it goes). After a full pass of
        ``keys`` (registration) the ids are those it hashed: this pass writes no trial JSON."""
        metadata = self._request_metadata
        for trial_id, made, (s, sel, prompt, pin) in self._walk(label, ids=self._ids.get(label)):
            if isinstance(made, KeyedTrial):
                keyed = made
            else:  # a lane writes no trial line: no log JSON, and the trial's data (and JSON) only if asked
                keyed = KeyedTrial(
                    _trial_from(made),
                    None,
                    made.text,
                    trial_id,
                    None,
                    head=(s.sample_id, made.group.label, made.group.condition_id),
                    build=functools.partial(_trial_parts, made),
                )
            yield _planned(keyed.trial, s, sel, prompt, metadata(s), pin, keyed)

    def _request_metadata(self, s: Sample) -> Mapping[str, Any]:
        """The suite's request metadata of sample ``s``, made once per sample and shared, read-only, by its trials
        (``RequestBuilder`` copies it into each request); for a sample of another plan, made afresh."""
        got = self._metadata.get(s.sample_id)
        if got is None or got[0] is not s:
            got = self._metadata[s.sample_id] = (s, MappingProxyType(self.suite.request_metadata(s)))
        return got[1]

    def keys(self) -> Iterator[TrialDraft]:
        """Every trial in plan order as registering it needs it (a ``TrialDraft``: its id, its row's strings and
        its log JSON, its ``Trial`` built only if asked). A full pass keeps each model's ids and sample indices, 36
        bytes a trial, so that the run pass (``for_model``) does not hash the trials again."""
        for label in self.groups:
            kept: tuple[bytearray, array[int]] = (bytearray(), array("I"))
            for trial_id, made, (s, _, _, _) in self._walk(label, log=True, keep=kept):
                if isinstance(made, KeyedTrial):
                    yield TrialDraft(trial_id, label, functools.partial(_given, made))
                else:
                    yield TrialDraft(
                        trial_id,
                        label,
                        functools.partial(_keyed, made, trial_id),
                        s.sample_id,
                        made.group.condition_id,
                        made.text,
                        made.log,
                    )
            self._ids[label] = (bytes(kept[0]), kept[1])

    def _walk(
        self,
        label: str,
        *,
        log: bool = False,
        ids: Kept | None = None,
        keep: tuple[bytearray, array[int]] | None = None,
    ) -> Iterator[tuple[str, KeyedTrial | _Spliced, tuple[Sample, FrameSelection, Prompt, PerturbedInput | None]]]:
        """Each trial of one model: its id (hashed from the group's JSON template), its ``KeyedTrial`` (the group's
        first, validated) or what makes one (``_Spliced``), and its sample, frames, prompt and perturbed input.
        ``log``: a spliced trial carries its audit-log JSON too; ``ids``: the ids of an earlier full walk of this
        model (``keys``, which passes ``keep`` to record them), 32 bytes each with the trial's sample index, taken
        instead of writing and hashing each trial's JSON. A trial whose sample index differs from the recorded one
        (a walk that skipped another perturbed input), or a group's first trial (hashed again) whose id differs,
        drops ``ids`` for the rest of the walk: its trials are hashed as on a first walk."""
        suite = self.suite
        refused: list[str] = []
        k = 0  # trials walked: ``ids[32 * k:]`` is the next one's
        for g in self.groups[label]:
            rc, template, spliced, logged = g.condition, None, None, None
            base: dict[str, Any] = {}
            memo = self._memo.get(g.slot)
            for i, s in enumerate(self.samples):
                pin = None
                got = memo[i] if memo is not None else None
                if got is None:
                    pin = plan_perturbed(s, rc, suite, refused) if rc.perturbations else None
                    if rc.perturbations and pin is None:
                        continue
                    got = self._input(i, s, rc, pin, keep=memo is not None)
                    if memo is not None:
                        memo[i] = self._kept(got)
                prompt, prompt_sha, sel, input_sha = got
                if sel is None:
                    sel = self._select(i, s, rc, None)
                fields: dict[str, Any] = {
                    "sample_id": s.sample_id,
                    "video_sha256": s.video.sha256,
                    "prompt_sha256": prompt_sha,
                    "input_sha256": input_sha,
                }
                if template is None:  # the group's first trial, validated; its JSON is the template (else every one)
                    first = KeyedTrial.of(
                        Trial(condition=rc, model=g.model, suite=suite.name, adapter_options=g.options, **fields)
                    )
                    if ids is not None and not carries(ids, k, i, first.id):
                        ids = None
                    k += 1
                    if keep is not None:
                        record_id(keep, first.id, i)
                    template = (
                        first.data
                        if PER_TRIAL | {"condition", "model", "suite", "adapter_options"} == set(Trial.model_fields)
                        and trial_of(dict(first.trial)) == first.trial
                        else None
                    )
                    if template is not None:
                        spliced = TrialJson(first.data, first.json)
                        logged = TrialJson(first.data, line_json(first.data), line_json)
                        if not logged.ok or logged.keys != spliced.keys:
                            logged = None
                        shared = {"condition": rc, "model": g.model, "suite": suite.name, "adapter_options": g.options}
                        base = {f: shared.get(f) for f in TRIAL_FIELDS}
                    yield first.id, first, (s, sel, prompt, pin)
                    continue
                if ids is not None and not carries(ids, k, i):
                    ids = None
                if ids is not None:
                    trial_id, text, line = ids[0][32 * k : 32 * k + 32].hex(), None, None
                else:
                    text, line = trial_text(spliced, logged if log else None, template, fields)
                    trial_id = sha256_text(text)
                k += 1
                if keep is not None:
                    record_id(keep, trial_id, i)
                yield trial_id, _Spliced(g, suite.name, template, fields, text, line, base), (s, sel, prompt, pin)

    def _kept(self, got: _Input) -> _Input:
        """``got`` as the memo holds it: its frames only while the distinct selections held stay under
        ``INPUT_MEMO_FRAMES`` frames (a dataset of many long clips under ``native@all`` would hold every frame)."""
        sel = got[2]
        if sel is None or id(sel) in self._kept_selections:
            return got
        if self._kept_frames + len(sel) > INPUT_MEMO_FRAMES:
            return got[0], got[1], None, got[3]
        self._kept_selections.add(id(sel))
        self._kept_frames += len(sel)
        return got

    def _input(self, i: int, s: Sample, rc: Condition, pin: PerturbedInput | None, *, keep: bool) -> _Input:
        """The prompt, frames and their hashes of sample ``i`` under ``rc`` (perturbed by ``pin``, if given);
        ``keep``: the result goes into the memo (its prompt is then held once however many samples share it)."""
        prompt = self.suite.render_prompt(s, rc)
        if keep and PROMPT_IS_ITS_SHA:  # by its system and text (all a Prompt holds): hashed once, held once
            got = self._prompts.get((prompt.system, prompt.text))
            if got is None:
                got = self._prompts[(prompt.system, prompt.text)] = (prompt, prompt_sha256(prompt))
            prompt, prompt_sha = got
        else:
            prompt_sha = prompt_sha256(prompt)
            if keep:
                prompt = self._prompts.setdefault(prompt, (prompt, prompt_sha))[0]
        sel = self._select(i, s, rc, pin)
        input_sha = selection_sha256(sel)
        if pin is not None:
            input_sha = sha256_json({"selection": input_sha, "perturbed": pin.sha256})
        return prompt, prompt_sha, sel, input_sha


class _Spliced(NamedTuple):
    """A trial of a group after its first, unvalidated: its JSON spliced from the validated first trial's."""

    group: _Group
    suite: str
    template: dict[str, Any]
    fields: dict[str, Any]
    #: the trial's canonical JSON (None: the run pass took its id from registration and writes it only if asked)
    text: str | None
    #: its audit-log JSON, spliced (None: not asked for, or the store writes the trial line the generic way)
    log: str | None
    #: the group's ``Trial`` values in field order, the per-trial ones None (``_trial_from``)
    base: dict[str, Any]


def _given(k: KeyedTrial) -> KeyedTrial:
    return k


def _keyed(made: _Spliced, trial_id: str) -> KeyedTrial:
    """The ``KeyedTrial`` of a spliced trial, as registering it needs: its id, JSON, log JSON and row labels; its
    ``Trial`` and data are built when first asked for."""
    return KeyedTrial(
        None,
        None,
        made.text,
        trial_id,
        made.log,
        head=(made.fields["sample_id"], made.group.label, made.group.condition_id),
        build=functools.partial(_trial_parts, made),
    )


def _trial_parts(made: _Spliced) -> tuple[Trial, dict[str, Any]]:
    return _trial_from(made), {**made.template, **made.fields}


def _trial_from(made: _Spliced) -> Trial:
    """``trial_of`` of a spliced trial's values: its group's, in field order, with its own strings put in."""
    values = made.base.copy()
    values.update(made.fields)
    return new_trial(values)


def check_servable(planned: Iterable[PlannedTrial], caps_by_model: Mapping[str, Capabilities]) -> None:
    """Refuse, before any call, a condition a model cannot serve (native video, image count, zero frames)."""
    raise_unservable(
        servable_problems(
            ((p.trial.model.label, p.trial.condition, p.sample, p.selection, p.video) for p in planned), caps_by_model
        )
    )
