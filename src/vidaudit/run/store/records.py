"""What the run store holds, as Python records, and each record as its row and its audit-log line.

The records: a trial with its id computed once (``KeyedTrial``), a stored trial (``TrialRow``), what is
stored of a trial (``TrialStatus``), and a composite model's stage calls (``StageCallRecord``, and the
``StageRef`` an attempt lists for each stage it used). The codecs turn each into the row the writer inserts
and back (text losslessly: see ``enc``), and into the line the audit log holds; the writer, the reader and
the log sync (``store/writer.py``, ``store/reader.py``, ``store/sync.py``) share them, so a row rebuilt
from the log is the row the writer wrote.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _encode_str
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from vidaudit.core.hashing import canonical_json, sha256_text
from vidaudit.core.types import Attempt, ErrorKind, ModelSpec, Response, Status, Trial, Usage
from vidaudit.run.log_lines import frames_json, last_remembered, trial_line, usage_text


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StageRef(_Frozen):
    """One stage of a composite's trial attempt: which stored call answered it, and whether it was a hit."""

    stage: str
    call_key: str
    status: Status
    cached: bool


class StageCallRecord(_Frozen):
    """One stored call of a composite model's stage.

    ``attempt`` numbers the calls of one (trial, stage) from 1 (0: not yet numbered; the store numbers
    it when it is appended); ``trial_attempt`` is the number of the trial attempt it was made for.
    ``request`` is the fingerprint the key was computed from (text verbatim, pixels by hash).
    """

    trial_id: str
    stage: str
    attempt: int = Field(default=0, ge=0)
    trial_attempt: int = Field(ge=1)
    call_key: str
    model: ModelSpec
    request: dict[str, Any]
    status: Status
    error_kind: ErrorKind | None = None
    error_message: str | None = None
    response: Response | None = None
    started_at: float
    ended_at: float


# --------------------------------------------------------------------------- lossless text


def enc(s: str | None) -> str | bytes | None:
    """A str as SQLite can hold it losslessly: itself, or (lone surrogates) a BLOB of its WTF-8 bytes."""
    if s is None or s.isascii():
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass")
    return s


def dec(v: str | bytes | None) -> str | None:
    """The inverse of ``enc``."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogatepass")
    return v


def json_col(obj: Any) -> str | bytes:
    return enc(canonical_json(obj))  # type: ignore[return-value]


def from_json_col(v: str | bytes) -> Any:
    return json.loads(dec(v))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- rows


class KeyedTrial:
    """A trial with its JSON form and id, computed once: the id is the sha256 of exactly the canonical JSON
    that ``trials.trial_json`` stores, so the plan, the executor and the store never hash a trial twice.

    The plan makes one per trial and registering it needs only its id, its JSON, its log JSON and its row's
    labels (``head``), so the ``Trial`` and its ``data`` may be given as ``build``, called on first use. The
    plan's run pass knows the id from registration (``PlanStream.keys``) and gives no JSON: it is then
    ``canonical_json(data)``, written when first asked for."""

    __slots__ = ("_json", "id", "log", "head", "_trial", "_data", "_build")

    def __init__(
        self,
        trial: Trial | None,
        data: dict[str, Any] | None,
        json: str | None,
        id: str,
        log: str | None = None,
        *,
        head: tuple[str, str, str] | None = None,
        build: Callable[[], tuple[Trial, dict[str, Any]]] | None = None,
    ) -> None:
        if (trial is None or data is None) and build is None:
            raise ValueError("a KeyedTrial needs its trial and data, or a build() that makes them")
        self._json = json
        self.id = id
        #: ``data`` as the audit log's trial line holds it (``audit_log.line_json``), when the plan wrote it already
        self.log = log
        #: (sample id, model label, condition id): the trial's row labels, when the plan has them already
        self.head = head
        self._trial, self._data, self._build = trial, data, build

    def _built(self) -> None:
        assert self._build is not None
        self._trial, self._data = self._build()
        self._build = None

    @property
    def json(self) -> str:
        """The trial's canonical JSON, the text its id hashes (``trials.trial_json``)."""
        if self._json is None:
            self._json = canonical_json(self.data)
        return self._json

    @property
    def trial(self) -> Trial:
        if self._trial is None:
            self._built()
        return self._trial  # type: ignore[return-value]

    @property
    def data(self) -> dict[str, Any]:
        """The trial as JSON data (``trial.model_dump(mode="json")``)."""
        if self._data is None:
            self._built()
        return self._data  # type: ignore[return-value]

    @classmethod
    def of(cls, trial: Trial) -> KeyedTrial:
        data = trial.model_dump(mode="json")
        text = canonical_json(data)
        return cls(trial, data, text, sha256_text(text))


class TrialDraft(NamedTuple):
    """A planned trial as registering it needs it (``backlog.register_keys``), before any ``Trial`` is built.

    ``make`` builds the trial (a ``Trial`` or ``KeyedTrial``); it is called only for a trial the store lacks
    whose row the draft does not give (``json`` None), or to check it for secrets. When the plan has them the
    draft gives the row's values but ``created_at`` (``sample_id``, ``condition_id``, ``json``: the canonical
    JSON that ``id`` hashes) and the audit log's JSON of the trial (``log``, ``audit_log.line_json``'s), so
    that a new trial is stored from these strings alone."""

    id: str
    model: str
    make: Callable[[], Trial | KeyedTrial]
    sample_id: str | None = None
    condition_id: str | None = None
    json: str | None = None
    log: str | None = None


@dataclass(frozen=True, slots=True)
class TrialStatus:
    """What the store holds of one trial: its attempts and whether one is ok."""

    attempts: int = 0
    ok: bool = False


@dataclass(frozen=True)
class TrialRow:
    trial_id: str
    sample_id: str
    model: str
    condition_id: str
    trial: Trial
    created_at: float


#: a ``Usage``'s JSON in the store (the last one remembered, as ``log_lines._usage``)
_usage_json = last_remembered(Usage.model_dump_json)


def _response_cols(r: Response | None) -> tuple[Any, ...]:
    if r is None:
        return None, None, None, None, None, None
    return (enc(r.text), _usage_json(r.usage), r.cost_usd, r.latency_s, enc(r.finish_reason), enc(r.model_version))


def _response_extra(r: Response | None) -> str | None:
    """What a Response carries beyond its columns: the frames the service used, and whether they are estimates."""
    if r is None or (r.frames_sent is None and not r.frames_estimated):
        return None
    return json.dumps(
        {
            "frames_sent": list(r.frames_sent) if r.frames_sent is not None else None,
            "frames_estimated": r.frames_estimated,
        }
    )


def _response_from(row: sqlite3.Row) -> Response | None:
    if row["text"] is None:
        return None
    extra = json.loads(row["response_extra"]) if row["response_extra"] else {}
    sent = extra.get("frames_sent")
    return Response(
        text=dec(row["text"]),
        usage=Usage.model_validate_json(row["usage_json"] or "{}"),
        latency_s=row["latency_s"] or 0.0,
        finish_reason=dec(row["finish_reason"]),
        model_version=dec(row["model_version"]),
        cost_usd=row["cost_usd"],
        frames_sent=tuple(sent) if sent is not None else None,
        frames_estimated=bool(extra.get("frames_estimated", False)),
    )


def _stages_json(stages: Sequence[StageRef] | None) -> str | bytes | None:
    return None if stages is None else json_col([s.model_dump(mode="json") for s in stages])


def attempt_row(a: Attempt, stages: Sequence[StageRef] | None = None) -> tuple[Any, ...]:
    return (
        a.trial_id,
        a.attempt,
        a.status.value,
        a.error_kind.value if a.error_kind else None,
        enc(a.error_message),
        *_response_cols(a.response),
        frames_json(a.frame_indices) or json.dumps(list(a.frame_indices)),
        frames_json(a.frame_times) or json.dumps(list(a.frame_times)),
        a.started_at,
        a.ended_at,
        _stages_json(stages),
        _response_extra(a.response),
    )


#: a plain call's attempt line, the values in (``log_lines.attempt_line``'s bytes for such an attempt)
_OK_LINE = (
    '{"attempt": {"attempt": %d, "ended_at": %r, "error_kind": null, "error_message": null, "frame_indices": [], '
    '"frame_times": [], "response": {"cost_usd": %r, "finish_reason": %s, "frames_estimated": false, '
    '"frames_sent": null, "latency_s": %r, "model_version": %s, "text": %s, "usage": %s}, "started_at": %r, '
    '"status": %s, "trial_id": %s}}\n'
)


def ok_record(a: Attempt) -> tuple[tuple[Any, ...], bytes] | None:
    """``(attempt_row(a), log_lines.attempt_line(a))`` written in one go, for the attempt of a plain call that sent no
    frames: no error, a response that reports no frames, a float cost, every float finite, every string ASCII (its
    column is then the string itself, its JSON ``encode_basestring``'s). None for anything else: write it the
    generic way (``RunStore`` checks its first one against that way too; ``tests/run/test_run_log_lines.py``)."""
    r = a.response
    if r is None or a.error_kind is not None or a.error_message is not None or a.frame_indices or a.frame_times:
        return None
    cost, latency, finish, version, text = r.cost_usd, r.latency_s, r.finish_reason, r.model_version, r.text
    started, ended, number, tid = a.started_at, a.ended_at, a.attempt, a.trial_id
    if not (
        r.frames_sent is None
        and r.frames_estimated is False
        and type(number) is int
        and type(cost) is float
        and cost - cost == 0.0
        and type(latency) is float
        and latency - latency == 0.0
        and type(started) is float
        and started - started == 0.0
        and type(ended) is float
        and ended - ended == 0.0
        and type(finish) is str
        and finish.isascii()
        and type(version) is str
        and version.isascii()
        and type(text) is str
        and text.isascii()
        and type(tid) is str
        and tid.isascii()
    ):
        return None  # a finite float minus itself is 0.0; inf and nan give nan
    status = a.status.value
    line = _OK_LINE % (
        number,
        ended,
        cost,
        _encode_str(finish),
        latency,
        _encode_str(version),
        _encode_str(text),
        usage_text(r.usage),
        started,
        _encode_str(status),
        _encode_str(tid),
    )
    return (
        (
            tid,
            number,
            status,
            None,
            None,
            text,
            _usage_json(r.usage),
            cost,
            latency,
            finish,
            version,
            "[]",
            "[]",
            started,
            ended,
            None,
            None,
        ),
        line.encode("utf-8"),
    )


def attempt_from_row(row: sqlite3.Row) -> Attempt:
    return Attempt(
        trial_id=row["trial_id"],
        attempt=row["attempt"],
        status=Status(row["status"]),
        error_kind=ErrorKind(row["error_kind"]) if row["error_kind"] else None,
        error_message=dec(row["error_message"]),
        response=_response_from(row),
        frame_indices=tuple(json.loads(row["frame_indices"])),
        frame_times=tuple(json.loads(row["frame_times"])),
        started_at=row["started_at"],
        ended_at=row["ended_at"],
    )


def stages_from_row(row: sqlite3.Row) -> list[StageRef] | None:
    v = row["stages_json"]
    return None if v is None else [StageRef.model_validate(s) for s in from_json_col(v)]


def stage_row(s: StageCallRecord) -> tuple[Any, ...]:
    return (
        s.trial_id,
        enc(s.stage),
        s.attempt,
        s.trial_attempt,
        enc(s.call_key),
        json_col(s.model.model_dump(mode="json")),
        json_col(s.request),
        s.status.value,
        s.error_kind.value if s.error_kind else None,
        enc(s.error_message),
        *_response_cols(s.response),
        s.started_at,
        s.ended_at,
        _response_extra(s.response),
    )


def stage_from_row(row: sqlite3.Row) -> StageCallRecord:
    return StageCallRecord(
        trial_id=row["trial_id"],
        stage=dec(row["stage"]),
        attempt=row["attempt"],
        trial_attempt=row["trial_attempt"],
        call_key=dec(row["call_key"]),
        model=ModelSpec.model_validate(from_json_col(row["model_json"])),
        request=from_json_col(row["request_json"]),
        status=Status(row["status"]),
        error_kind=ErrorKind(row["error_kind"]) if row["error_kind"] else None,
        error_message=dec(row["error_message"]),
        response=_response_from(row),
        started_at=row["started_at"],
        ended_at=row["ended_at"],
    )


# --------------------------------------------------------------------------- log lines


def log_keyed_trial(k: KeyedTrial | TrialDraft, created_at: float) -> dict[str, Any] | bytes:
    """A new trial's log line: spliced from its log JSON when the plan made it, else the generic dict."""
    fast = trial_line(k.log, k.id, created_at) if k.log is not None else None
    if fast is not None:
        return fast
    if isinstance(k, TrialDraft):
        k = keyed_of(k.make())
    return {"trial": k.data, "trial_id": k.id, "created_at": created_at}


def keyed_of(t: Trial | KeyedTrial) -> KeyedTrial:
    return t if isinstance(t, KeyedTrial) else KeyedTrial.of(t)


def log_trial(t: Trial, created_at: float) -> dict[str, Any]:
    return {"trial": t.model_dump(mode="json"), "trial_id": t.id, "created_at": created_at}


def log_attempt(a: Attempt, stages: Sequence[StageRef] | None) -> dict[str, Any]:
    line: dict[str, Any] = {"attempt": a.model_dump(mode="json")}
    if stages is not None:
        line["stages"] = [s.model_dump(mode="json") for s in stages]
    return line


def log_stage_call(s: StageCallRecord) -> dict[str, Any]:
    return {"stage_call": s.model_dump(mode="json")}


def trial_row(k: KeyedTrial | TrialDraft, created_at: float) -> tuple[Any, ...]:
    """A trial's row; a ``TrialDraft``'s from its strings (it must give them: ``json`` not None)."""
    if isinstance(k, TrialDraft):
        return (k.id, enc(k.sample_id), enc(k.model), enc(k.condition_id), enc(k.json), created_at)
    if k.head is not None:
        sample_id, model, condition = k.head
    else:
        t = k.trial
        sample_id, model, condition = t.sample_id, t.model.label, t.condition.id
    return (k.id, enc(sample_id), enc(model), enc(condition), enc(k.json), created_at)
