"""The objects every stage passes along (DESIGN.md "The objects").

Persisted objects are frozen pydantic models so that they validate on load and serialise to
canonical JSON; ``Request`` carries pixel arrays and is a plain frozen dataclass.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import pairwise
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from vidaudit.core.errors import validation_message
from vidaudit.core.hashing import canonical_json, sha256_json
from vidaudit.core.timeline import Timeline


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_M = TypeVar("_M", bound=BaseModel)


def unvalidated(cls: type[_M], values: dict[str, Any], given: frozenset[str]) -> _M:
    """``cls(**{k: values[k] for k in given})`` without validating, for a hot path whose values are each already of
    its field's exact type (``str``, ``int``, ``float``, an instance of the field's model...), which validation
    returns as they are: the caller checks the types, and falls back to ``cls(...)`` when unsure. ``values`` sets
    every field (the defaults of those not ``given``); ``given`` is what ``model_fields_set`` reports."""
    m = object.__new__(cls)
    object.__setattr__(m, "__dict__", values)
    object.__setattr__(m, "__pydantic_fields_set__", set(given))
    object.__setattr__(m, "__pydantic_extra__", None)
    object.__setattr__(m, "__pydantic_private__", None)
    return m


# --------------------------------------------------------------------------- ground truth


class Event(BaseModel):
    """One event the video truly shows: when (``t``, on the player's clock), the first frame that shows it
    (``frame``), its kind, and the visible state it changes, when it changes one.

    A suite may attach fields of its own (counting: ``count``, the running count its ledger replays); they
    ride along as extra fields, serialised after these in the order given, and the suite that wrote them
    reads and checks them (``extra``), so no shared layer carries one suite's ledger.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    t: float
    frame: int
    type: str
    state_before: str | None = None
    state_after: str | None = None

    def extra(self, name: str) -> Any:
        """A suite's own field of this event (None when the event has none)."""
        return (self.__pydantic_extra__ or {}).get(name)


class Trace(_Frozen):
    """The true events of a sample's video, in time order: the ground truth a suite may check answers and
    reported events against (empty when the suite's truth is not a list of events)."""

    events: tuple[Event, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Trace:
        last_t = float("-inf")
        for i, e in enumerate(self.events):
            if e.t < last_t:
                raise ValueError(f"event {i}: time {e.t} precedes {last_t}")
            last_t = e.t
        return self

    @property
    def times(self) -> list[float]:
        return [e.t for e in self.events]


#: Bounds past which a manifest's video facts are refused as absurd rather than planned (a hostile
#: ``n_frames: 1e12`` would otherwise grow memory until the machine gives out); ``video.probe`` reads files
#: against the same bounds.
MAX_FRAMES = 10_000_000
MAX_FPS = 1000.0
MAX_DURATION_S = 7 * 24 * 3600.0
MAX_SIZE = 1 << 16


class VideoRef(_Frozen):
    """A video as read back from its encoded file (``path`` relative to the dataset dir), as a player shows it.

    ``width``/``height`` are the displayed size: the stored picture (``stored_size``) with its sample aspect
    ratio applied (``sar``, width scaled: ``floor(w * sar)``), then turned by ``rotation`` (degrees
    counter-clockwise). Times are on the player's clock (``core.timeline``): ``start_s`` is the first frame's
    time and ``frame_times`` lists every frame's time when the rate is not constant. ``stream`` is the index of
    the video stream the frames come from, in a file with several (None: the one ffmpeg picks, the only one).
    Each of these is written only when it differs from a constant-rate, upright, square-pixel, single-stream
    clip starting at 0, so the manifests of such clips (every rendered one) are unchanged.
    """

    path: str
    sha256: str | None = None
    fps: float
    width: int
    height: int
    n_frames: int
    duration_s: float
    rotation: int = 0
    start_s: float = 0.0
    frame_times: tuple[float, ...] | None = None
    sar: tuple[int, int] | None = None  # sample aspect ratio (num, den), when pixels are not square
    stored_size: tuple[int, int] | None = None  # the stored picture's (width, height), when pixels are not square
    stream: int | None = None  # the video stream's index, in a file with several

    @model_validator(mode="after")
    def _check(self) -> VideoRef:
        self._check_bounds()
        self._check_player_facts()
        return self

    def _check_bounds(self) -> None:
        """The facts every manifest carries, within the bounds that keep a hostile manifest from planning
        absurd work (see ``MAX_FRAMES``)."""
        for name in ("fps", "duration_s", "start_s"):
            v = getattr(self, name)
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"video {name} must be a finite number >= 0, got {v}")
        if not 0 <= self.n_frames <= MAX_FRAMES:
            raise ValueError(f"video n_frames must be in 0..{MAX_FRAMES:,}, got {self.n_frames}")
        if not (0 <= self.width <= MAX_SIZE and 0 <= self.height <= MAX_SIZE):
            raise ValueError(f"video size {self.width}x{self.height} is out of range")
        if self.duration_s > MAX_DURATION_S:
            raise ValueError(f"video duration_s {self.duration_s} is longer than a week")
        if self.rotation not in (0, 90, 180, 270):
            raise ValueError(f"video rotation must be 0, 90, 180 or 270, got {self.rotation}")
        if self.n_frames > 0:  # a real video (placeholders of not-yet-rendered samples have none)
            if not 0 < self.fps <= MAX_FPS:
                raise ValueError(f"video fps must be in (0, {MAX_FPS:g}] for a video with frames, got {self.fps}")
            if self.n_frames / self.fps > MAX_DURATION_S:
                raise ValueError(f"video n_frames {self.n_frames} at {self.fps:g} fps is longer than a week")

    def _check_player_facts(self) -> None:
        """The optional facts written only for clips that are not constant-rate, square-pixel, single-stream:
        each must describe something a player could show."""
        if self.frame_times is not None:
            ft = self.frame_times
            if len(ft) != self.n_frames:
                raise ValueError(f"video frame_times has {len(ft)} entries for {self.n_frames} frames")
            if any(not math.isfinite(t) for t in ft) or any(b <= a for a, b in pairwise(ft)):
                raise ValueError("video frame_times must be finite and strictly increasing")
        if self.sar is not None and not (0 < self.sar[0] < 1 << 31 and 0 < self.sar[1] < 1 << 31):
            raise ValueError(f"video sar must be two positive integers, got {list(self.sar)}")
        if self.stored_size is not None and not all(0 < v <= MAX_SIZE for v in self.stored_size):
            raise ValueError(f"video stored_size is out of range: {list(self.stored_size)}")
        if self.stream is not None and not 0 <= self.stream < 1 << 16:
            raise ValueError(f"video stream must be a stream index >= 0, got {self.stream}")

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key, default in (
            ("rotation", 0),
            ("start_s", 0.0),
            ("frame_times", None),
            ("sar", None),
            ("stored_size", None),
            ("stream", None),
        ):
            if data.get(key, default) == default:
                data.pop(key, None)
        return data

    @property
    def timeline(self) -> Timeline:
        """The player's clock of this video (needs at least one frame)."""
        return Timeline.of_facts(self.n_frames, self.fps, self.start_s, self.frame_times, self.duration_s)


class Sample(_Frozen):
    """One question about one video, with its answer and the true events that prove it (``trace``)."""

    sample_id: str
    suite: str
    params: dict[str, Any]
    question: str
    answer: Any
    trace: Trace = Field(default_factory=Trace)
    video: VideoRef

    @property
    def group_id(self) -> str:
        """Cluster key for bootstrap resampling: samples that share a source video."""
        return self.video.sha256 or self.sample_id


# --------------------------------------------------------------------------- conditions


class Presentation(StrEnum):
    NATIVE = "native"
    FRAMES = "frames"
    KEYFRAMES = "keyframes"


class PerturbationSpec(_Frozen):
    """One perturbation applied to the video before it is presented (the stress suites fill these).

    Perturbed videos are content-addressed by the source video's sha256 and this spec's canonical JSON.
    """

    name: str = Field(min_length=1, pattern=r"^[a-z][a-z0-9_]*$")
    params: dict[str, Any] = Field(default_factory=dict)

    def __hash__(self) -> int:  # params is a dict: hash the canonical JSON, so Conditions stay hashable
        return hash(canonical_json(self.model_dump(mode="json")))

    @property
    def id(self) -> str:
        if not self.params:
            return self.name
        return f"{self.name}(" + ",".join(f"{k}={self.params[k]}" for k in sorted(self.params)) + ")"


DEFAULT_KEYFRAME_OFFSET_S = 0.1


class Condition(_Frozen):
    """How a sample is shown and asked; every field that changes the input is in ``id``.

    - ``native``: the video file. ``fps`` is the rate asked of the backend; ``all_frames`` means every
      frame of the file. A bare ``native`` (neither set) is a request for the backend's default and is
      *resolved* at plan time, per model, into ``native@K`` or ``native@all`` (see ``resolved_for``).
    - ``frames@K``: the frame on screen every 1/K s; ``frames#K``: exactly K frames, uniform over the clip.
    - ``keyframes``: frames at t_i - offset, the event's first frame and t_i + offset for each true event.
    - ``perturbations``: applied in order to the video before any of the above.

    ``prompt`` names one of the suite's prompts and has no default here: a caller without one asks the
    suite (``Suite.default_prompt``), so no shared layer assumes a suite's prompt names.
    """

    presentation: Presentation = Presentation.NATIVE
    fps: float | None = None
    n_frames: int | None = None
    all_frames: bool = False
    prompt: str
    timestamps: bool = True
    keyframe_offset_s: float = DEFAULT_KEYFRAME_OFFSET_S
    perturbations: tuple[PerturbationSpec, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Condition:
        if self.fps is not None and not (math.isfinite(self.fps) and self.fps > 0):
            raise ValueError(f"fps must be a positive finite number, got {self.fps}")
        if self.n_frames is not None and self.n_frames < 1:
            raise ValueError(f"frames#K needs K >= 1, got {self.n_frames}")
        p = self.presentation
        if p is Presentation.FRAMES and (self.fps is None) == (self.n_frames is None):
            raise ValueError("frames takes either a rate (frames@K) or a count (frames#K), e.g. frames@4 or frames#16")
        if p is not Presentation.FRAMES and self.n_frames is not None:
            raise ValueError("a frame count (#K) applies to frames#K only")
        if p is Presentation.KEYFRAMES and self.fps is not None:
            raise ValueError("keyframes takes no fps")
        if self.all_frames and (p is not Presentation.NATIVE or self.fps is not None):
            raise ValueError("all frames (native@all) applies to native video without an fps")
        if not (math.isfinite(self.keyframe_offset_s) and self.keyframe_offset_s > 0):
            raise ValueError(f"keyframe offset must be a positive number of seconds, got {self.keyframe_offset_s}")
        return self

    @property
    def resolved(self) -> bool:
        """False only for a bare ``native``, whose rate the backend decides until the plan fixes it."""
        return self.presentation is not Presentation.NATIVE or self.fps is not None or self.all_frames

    def resolved_for(self, default_native_fps: float | None) -> Condition:
        """A bare ``native`` made explicit with a backend's default rate (None: every frame)."""
        if self.resolved:
            return self
        if default_native_fps is None:
            return self.model_copy(update={"all_frames": True})
        return self.model_copy(update={"fps": float(default_native_fps)})

    @property
    def video_id(self) -> str:
        p = self.presentation
        if p is Presentation.KEYFRAMES:
            base = (
                "keyframes"
                if self.keyframe_offset_s == DEFAULT_KEYFRAME_OFFSET_S
                else f"keyframes+-{self.keyframe_offset_s:g}s"
            )
        elif p is Presentation.FRAMES:
            base = f"frames@{self.fps:g}" if self.fps is not None else f"frames#{self.n_frames}"
        elif self.all_frames:
            base = "native@all"
        elif self.fps is None:
            base = "native"
        else:
            base = f"native@{self.fps:g}"
        return base + "".join(f"+{q.id}" for q in self.perturbations)

    @property
    def id(self) -> str:
        parts = [self.video_id, self.prompt]
        if not self.timestamps:
            parts.append("nots")
        return "/".join(parts)

    def canonical(self) -> str:
        return canonical_json(self.model_dump(mode="json"))


def names_perturbations(condition_id: str) -> bool:
    """Whether a ``Condition.id`` names perturbations: a ``+`` followed by an op's name (a lowercase letter; the
    rule ``parse_condition`` splits on), never in a presentation (``keyframes+-2s``, ``frames@1e+06``)."""
    return re.search(r"\+[a-z]", condition_id) is not None


# --------------------------------------------------------------------------- models


class GenerationSettings(_Frozen):
    """What vidaudit asks of the decoder. ``None`` means "send nothing: the provider's default"."""

    temperature: float | None = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=2048, ge=1, le=1_000_000)
    seed: int | None = None
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)

    @classmethod
    def provider_defaults(cls) -> GenerationSettings:
        """Send no temperature, token limit, seed or top_p (as the Low-Frequency Trap paper did)."""
        return cls(temperature=None, max_tokens=None, seed=None, top_p=None)

    def sent(self) -> dict[str, Any]:
        """The settings that are actually sent (None = left to the provider)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


#: what a base URL starts with: a scheme (``http://``, ``https://``, ...)
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: a bare model name's usual provider, by how the name starts (for the hint of a spec without a provider)
_NAME_PROVIDERS = (
    ("gpt-", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("gemini", "gemini"),
    ("claude", "anthropic"),
)


def likely_spec(provider: str) -> str | None:
    """The ``provider:name`` that a spec naming no provider (``--model gpt-4o``: read as provider ``gpt-4o``)
    probably meant, or None when nothing is likely."""
    for prefix, name in _NAME_PROVIDERS:
        if provider.lower().startswith(prefix):
            return f"{name}:{provider}"
    if "/" in provider:  # a Hugging Face repo id: local weights, or a vLLM / SGLang server speaking the OpenAI API
        return f"hf:{provider} (local weights) or openai:{provider}@http://HOST:PORT/v1 (a vLLM or SGLang server)"
    return None


class ModelSpec(_Frozen):
    """``provider:name[@base_url]`` plus generation settings; never holds a secret."""

    provider: str
    name: str = ""
    base_url: str | None = None
    settings: GenerationSettings = Field(default_factory=GenerationSettings)

    @classmethod
    def parse(cls, spec: str, **settings: Any) -> ModelSpec:
        if ":" in spec:
            provider, rest = spec.split(":", 1)
        else:
            provider, rest = spec, ""
        base_url = None
        if "@" in rest:
            rest, base_url = rest.split("@", 1)
        if not provider:
            raise ValueError(f"model spec {spec!r} has no provider; write provider:name, e.g. openai:gpt-4o")
        if base_url and not _URL_SCHEME.match(base_url):  # refused here, not retried as a network failure later
            scheme = "http" if base_url.startswith(("localhost", "127.", "[::1]", "0.0.0.0")) else "https"
            raise ValueError(
                f"the base URL {base_url!r} of model {spec!r} has no scheme; write "
                f"{provider}:{rest}@{scheme}://{base_url}"
            )
        try:
            return cls(
                provider=provider,
                name=rest,
                base_url=base_url or None,
                settings=GenerationSettings(**{k: v for k, v in settings.items() if v is not None}),
            )
        except ValueError as e:  # a pydantic ValidationError: its first problem, in one line
            raise ValueError(f"model {spec!r}: {validation_message(e)}") from None

    @property
    def label(self) -> str:
        s = f"{self.provider}:{self.name}" if self.name else self.provider
        return f"{s}@{self.base_url}" if self.base_url else s


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class ImagePart:
    """A decoded RGB frame (H, W, 3 uint8) and where it came from."""

    image: np.ndarray = field(repr=False)
    frame_index: int
    t: float


@dataclass(frozen=True)
class VideoPart:
    """The video file itself; ``fps`` is the sampling rate asked of the backend."""

    path: str
    sha256: str | None
    fps: float
    duration_s: float
    n_frames: int
    source_fps: float
    frame_indices: tuple[int, ...] = ()
    timestamps: tuple[float, ...] = ()
    stream: int | None = None  # the file's video stream the frames come from (None: the one ffmpeg picks)


Part = TextPart | ImagePart | VideoPart


@dataclass(frozen=True)
class Request:
    """What goes to a model. ``metadata`` is public (e.g. the domain), never the answer."""

    trial_id: str
    parts: tuple[Part, ...]
    system: str | None = None
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def images(self) -> list[ImagePart]:
        return [p for p in self.parts if isinstance(p, ImagePart)]

    @property
    def videos(self) -> list[VideoPart]:
        return [p for p in self.parts if isinstance(p, VideoPart)]

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    def sent_frames(self) -> tuple[list[int], list[float]]:
        """Source frame indices and timestamps actually sent (images, or the video's sampled frames)."""
        idx: list[int] = []
        ts: list[float] = []
        for p in self.parts:
            if isinstance(p, ImagePart):
                idx.append(p.frame_index)
                ts.append(p.t)
            elif isinstance(p, VideoPart):
                idx.extend(p.frame_indices)
                ts.extend(p.timestamps)
        return idx, ts


class Usage(_Frozen):
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


class Response(_Frozen):
    text: str
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None
    model_version: str | None = None
    cost_usd: float | None = None
    #: Source frame indices the model saw, when the adapter knows them better than the request's
    #: (e.g. a server's own sampling rule); None: the request's frames (``Request.sent_frames``).
    frames_sent: tuple[int, ...] | None = None
    #: True when the frames the model saw are vidaudit's estimate of the server's sampling, not known.
    frames_estimated: bool = False

    @classmethod
    def computed(cls, text: str, t0: float, version: str, frames_sent: tuple[int, ...] | None = None) -> Response:
        """An answer a program on this machine computed (a baseline, an observer, a composite's local stage):
        no tokens, no cost, timed from ``t0`` (``time.perf_counter()`` when the call began)."""
        return cls(
            text=text,
            latency_s=time.perf_counter() - t0,
            finish_reason="stop",
            model_version=version,
            cost_usd=0.0,
            frames_sent=frames_sent,
        )


class ErrorKind(StrEnum):
    """How an attempt failed; decides retry and the stored status."""

    RATE_LIMIT = "rate_limit"  # 429: retry after Retry-After
    QUOTA = "quota"  # 429 quota exhausted: stop the run
    TRANSIENT = "transient"  # connection, 408/409/5xx/529: retry with backoff
    TIMEOUT = "timeout"  # request timed out: retry
    BAD_REQUEST = "bad_request"  # 400/404/413/422: never retried
    AUTH = "auth"  # 401/403: never retried, stops the run
    REFUSED = "refused"  # safety/content refusal
    MALFORMED = "malformed"  # unparseable provider payload: retry
    UNSUPPORTED = "unsupported"  # condition the adapter cannot serve
    TRUNCATED = "truncated"  # the output budget ran out (often on thinking) before any answer: not retried
    TOO_LARGE = "too_large"  # the response body passed the adapter's max_response_bytes: not read, not retried


class Status(StrEnum):
    OK = "ok"
    API_ERROR = "api_error"
    REFUSED = "refused"
    TIMEOUT = "timeout"
    TRUNCATED = "truncated"  # the model used its whole output budget and gave no answer text


class Trial(_Frozen):
    """sample x condition x model; the id is a sha256 of this object's canonical JSON.

    It covers everything that decides what the model receives: the sample and its video's sha256, the
    (resolved) condition, the rendered prompt text (``prompt_sha256``), the frames selected
    (``input_sha256``), the model spec with its generation settings, and every adapter option that
    changes the request (``adapter_options``). Anything else (paths, row numbers, run names) is not.
    """

    sample_id: str
    video_sha256: str | None
    condition: Condition
    model: ModelSpec
    suite: str | None = None
    prompt_sha256: str | None = None
    input_sha256: str | None = None
    adapter_options: dict[str, Any] = Field(default_factory=dict)

    @property
    def id(self) -> str:
        return sha256_json(self.model_dump(mode="json"))


class Attempt(_Frozen):
    """One stored call: appended to the run store when it ends."""

    trial_id: str
    attempt: int
    status: Status
    error_kind: ErrorKind | None = None
    error_message: str | None = None
    response: Response | None = None
    frame_indices: tuple[int, ...] = ()
    frame_times: tuple[float, ...] = ()
    started_at: float
    ended_at: float
