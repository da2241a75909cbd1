"""The objects every stage passes along (DESIGN.md "The objects").

Persisted objects are frozen pydantic models so that they validate on load and serialise to
canonical JSON; ``Request`` carries pixel arrays and is a plain frozen dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from vidaudit.core.hashing import canonical_json, sha256_json


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- ground truth


class Event(_Frozen):
    """One event of an executable trace; ``frame`` is the first frame that shows it."""

    t: float
    frame: int
    type: str
    state_before: str | None = None
    state_after: str | None = None
    count: int


class Trace(_Frozen):
    """An executable event trace: executing it replays the running count and returns the final one."""

    events: tuple[Event, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Trace:
        self.execute()
        return self

    def execute(self) -> int:
        """Replay the ledger, checking ``count_i = count_{i-1} + 1`` and time order; return the final count."""
        count, last_t = 0, float("-inf")
        for i, e in enumerate(self.events):
            if e.count != count + 1:
                raise ValueError(f"event {i}: count {e.count} does not follow {count}")
            if e.t < last_t:
                raise ValueError(f"event {i}: time {e.t} precedes {last_t}")
            count, last_t = e.count, e.t
        return count

    @property
    def times(self) -> list[float]:
        return [e.t for e in self.events]


class VideoRef(_Frozen):
    """A video as read back from its encoded file (``path`` relative to the dataset dir)."""

    path: str
    sha256: str | None = None
    fps: float
    width: int
    height: int
    n_frames: int
    duration_s: float


class Sample(_Frozen):
    """One question about one video, with its answer and the trace that proves it."""

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


class Condition(_Frozen):
    """How a sample is shown and asked. ``fps=None`` under ``native`` means the backend's default."""

    presentation: Presentation = Presentation.NATIVE
    fps: float | None = None
    prompt: str = "structured_trace"
    timestamps: bool = True
    keyframe_offset_s: float = 0.1

    @model_validator(mode="after")
    def _check(self) -> Condition:
        if self.presentation is Presentation.FRAMES and (self.fps is None or self.fps <= 0):
            raise ValueError("frames@K needs a positive K, e.g. frames@4")
        if self.presentation is Presentation.KEYFRAMES and self.fps is not None:
            raise ValueError("keyframes takes no fps")
        if self.fps is not None and self.fps <= 0:
            raise ValueError(f"fps must be positive, got {self.fps}")
        return self

    @property
    def video_id(self) -> str:
        if self.presentation is Presentation.KEYFRAMES:
            return "keyframes"
        if self.fps is None:
            return self.presentation.value
        return f"{self.presentation.value}@{self.fps:g}"

    @property
    def id(self) -> str:
        parts = [self.video_id, self.prompt]
        if not self.timestamps:
            parts.append("nots")
        return "/".join(parts)

    def canonical(self) -> str:
        return canonical_json(self.model_dump(mode="json"))


# --------------------------------------------------------------------------- models


class GenerationSettings(_Frozen):
    temperature: float | None = 0.0
    max_tokens: int = 2048
    seed: int | None = None
    top_p: float | None = None


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
        return cls(provider=provider, name=rest, base_url=base_url or None,
                   settings=GenerationSettings(**{k: v for k, v in settings.items() if v is not None}))

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


class ErrorKind(StrEnum):
    """How an attempt failed; decides retry and the stored status."""

    RATE_LIMIT = "rate_limit"      # 429: retry after Retry-After
    QUOTA = "quota"                # 429 quota exhausted: stop the run
    TRANSIENT = "transient"        # connection, 408/409/5xx/529: retry with backoff
    TIMEOUT = "timeout"            # request timed out: retry
    BAD_REQUEST = "bad_request"    # 400/404/413/422: never retried
    AUTH = "auth"                  # 401/403: never retried, stops the run
    REFUSED = "refused"            # safety/content refusal
    MALFORMED = "malformed"        # unparseable provider payload: retry
    UNSUPPORTED = "unsupported"    # condition the adapter cannot serve


class Status(StrEnum):
    OK = "ok"
    API_ERROR = "api_error"
    REFUSED = "refused"
    TIMEOUT = "timeout"


class Trial(_Frozen):
    """sample x condition x model; the id is a sha256 of their canonical JSON."""

    sample_id: str
    video_sha256: str | None
    condition: Condition
    model: ModelSpec

    @property
    def id(self) -> str:
        return sha256_json({
            "sample_id": self.sample_id,
            "video_sha256": self.video_sha256,
            "condition": self.condition.model_dump(mode="json"),
            "model": self.model.model_dump(mode="json"),
        })


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


ParseStatus = Literal["parsed", "unparseable"]
