"""Reported events from free text: explicit timestamps only (Low-Frequency Trap, appendix C.15).

A number becomes a reported event only when it is written as a time: ``m:ss(.f)``, a number
with a seconds unit (``3.5s``, ``4 sec``, ``2.0 seconds``) or a number after a temporal cue
(``at``, ``from``, ``between``, ``t=``, ``time:``, ``@``). Ordinals ("Event 3"), counts
("count: 4") and boxed answers never create events, so trace metrics measure only evidence the
model wrote down, and neither do a time the model negates or writes as no valid time: a minus sign after its
cue ("at -2 s"), an invalid clock ("1:75"), a decimal comma ("1,5 s"), a negated cue ("not at 3 s", "no blink
at 3 s"), or another unit than seconds ("2 min", "2.5 ms"); these contexts are ``timestamp_lexicon``'s. A list of
times sharing one cue and one unit ("at 1, 2 and 3 s") is read whole: the bare numbers inside it are cued.
A range ("1.5-2.0s", "from 3s to 4s", "0:03-0:04") is one event at its start.
Mentions within ``merge_s`` (0.1 s) of an earlier kept mention are merged into it; times
outside ``[0, duration + slack]`` are dropped. Both are counted, never hidden.

Frame mentions (C.15 lists "frame" among the temporal cues). ``frame K`` (also ``Frame #K``,
``frame no. K``, ``frames K-L``) with an integer K is a time only when the caller passes
``frame_times``, the presentation times of the frames actually sent, in the order sent: it maps to
``frame_times[K - 1]`` (models number the frames they see from 1). K = 0 or K beyond the frames
sent is dropped and counted in ``n_frame_out_of_range``; mapped mentions are counted in
``n_frame_mentions`` (before merging). A frame mention written next to an explicit time on the
same line ("Frame 12 (t = 6.0 s)", "at 6.0s, frame 12": at most 16 characters apart with no
other number between) names that same moment: the explicit time is kept and the frame number is
not a second event. A range of frames ("frames 12-14", "frame 12 to frame 14") is one event at
its first frame. Without ``frame_times`` a frame number is never a time (as for any ordinal).

Labels (the state or wall a ledger line names) are read with patterns the suite supplies, so
that this module stays generic: each pattern's first group is the label.

What a time looks like in text (the patterns, cue and "not a time" contexts, ranges, frame mentions, labels) is
:mod:`~vidaudit.suites.counting.timestamp_lexicon`; the one-pass scan that finds the candidate times of a whole
text is :mod:`~vidaudit.suites.counting.timestamp_scan`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vidaudit.suites.counting.timestamp_lexicon import (
    CONTEXT_CHARS,
    CORES,
    FRAME_REV,
    LABEL_CACHE,
    MERGE_S,
    NEG_REV,
    NEG_SEEN,
    NOT_A_TIME_AFTER,
    RANGE_WORDS,
    SLACK_S,
    atom_value,
    boxed_regions,
    context_before,
    find_atoms,
    frame_mention,
    frame_time,
    is_int,
    opens_range,
    read_label,
    sep_core,
)
from vidaudit.suites.counting.timestamp_scan import FRAME_WORD, scan_times

#: what :func:`_keep` makes of the chosen times: the kept ones' times, labels and indices in the chosen list, the
#: times dropped (out of range) and the number merged
_Kept = tuple[list[float], list[str | None], list[int], list[float], int]


@dataclass(frozen=True)
class ReportedEvent:
    """One reported event: its time in seconds, the span of the timestamp, and an optional label.

    ``frame`` is the 1-based frame number when the time was read from a "frame K" mention.
    """

    t: float
    span: tuple[int, int]
    label: str | None = None
    frame: int | None = None


_new_object = object.__new__
_set_attr = object.__setattr__


def _new_event(t: float, span: tuple[int, int], label: str | None, frame: int | None) -> ReportedEvent:
    """``ReportedEvent(t, span, label, frame)``, the same object, without the frozen ``__init__``'s four
    ``object.__setattr__`` calls (an extractor makes one per reported event)."""
    ev = _new_object(ReportedEvent)
    _set_attr(ev, "__dict__", {"t": t, "span": span, "label": label, "frame": frame})
    return ev


@dataclass(frozen=True)
class TimestampReport:
    """The events a response reports, in the order written, and what was discarded to get them.

    ``n_frame_mentions`` counts "frame K" mentions mapped to a time (before merging, so a mapped
    mention merged into an earlier event is counted here and in ``n_merged``);
    ``n_frame_out_of_range`` counts frame numbers with no sent frame (dropped, not in ``n_dropped``).
    """

    events: tuple[ReportedEvent, ...] = ()
    n_dropped: int = 0
    n_merged: int = 0
    dropped: tuple[float, ...] = field(default=(), repr=False)
    n_frame_mentions: int = 0
    n_frame_out_of_range: int = 0

    @property
    def times(self) -> list[float]:
        return [e.t for e in self.events]

    @property
    def labels(self) -> list[str | None]:
        return [e.label for e in self.events]

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": [{"t": e.t, "span": list(e.span), "label": e.label, "frame": e.frame} for e in self.events],
            "n_dropped": self.n_dropped,
            "n_merged": self.n_merged,
            "n_frame_mentions": self.n_frame_mentions,
            "n_frame_out_of_range": self.n_frame_out_of_range,
        }


def _new_report(
    events: tuple[ReportedEvent, ...],
    n_dropped: int,
    n_merged: int,
    dropped: tuple[float, ...],
    n_frame_mentions: int,
    n_frame_out_of_range: int,
) -> TimestampReport:
    """``TimestampReport(...)`` (every field, in order), the same object, without the frozen ``__init__``'s six
    ``object.__setattr__`` calls (one report per scored trial)."""
    report = _new_object(TimestampReport)
    _set_attr(
        report,
        "__dict__",
        {
            "events": events,
            "n_dropped": n_dropped,
            "n_merged": n_merged,
            "dropped": dropped,
            "n_frame_mentions": n_frame_mentions,
            "n_frame_out_of_range": n_frame_out_of_range,
        },
    )
    return report


def extract_timestamps(
    text: str | None,
    duration_s: float,
    *,
    label_patterns: Sequence[re.Pattern[str]] = (),
    merge_s: float = MERGE_S,
    slack_s: float = SLACK_S,
    frame_times: Sequence[float] | None = None,
) -> TimestampReport:
    """Reported events of ``text`` (see the module docstring); never raises on any text.

    One pass of ``ATOM`` finds every number; a bare number's cue, and a candidate time's "not a time"
    context, is one anchored match of the reversed piece of text back to the previous number, at most
    CONTEXT_CHARS long (so hostile text stays linear), and a piece already seen is not matched again;
    a number's value, and everything else, is read only for the few numbers that can be times.
    """
    if not isinstance(text, str) or not text:
        return TimestampReport()
    if frame_times is None or FRAME_WORD.search(text) is None:  # no "frame K" can be read: the one-pass scan
        found = scan_times(text, boxed_regions(text))
        if found is None:
            return TimestampReport()
        return _events(found, _keep(text, found, duration_s, label_patterns, merge_s, slack_s), 0, 0)
    atoms = find_atoms(text, boxed_regions(text))
    if not atoms:
        return TimestampReport()
    size = len(text)
    rev = text[::-1] if frame_times is not None else ""  # "frame K" is looked for only when frames are known
    neg_get, frame_match = NEG_SEEN.get, FRAME_REV.match
    not_after = NOT_A_TIME_AFTER.match
    chosen: list[tuple[int, int, float, int | None]] = []  # (start, end, time, frame number)
    n_frames_mapped = n_frames_out = 0
    last_time_atom = -1  # index in ``atoms`` of the last explicit or cued time kept
    n_atoms = len(atoms)
    last = n_atoms - 1
    cores_get = CORES.get
    i = 0
    while i < n_atoms:
        a = atoms[i]
        start, end, kind, cue, _ = a
        if i < last:
            nxt = atoms[i + 1]
            sep = text[end : nxt[0]] if nxt[0] - end <= 12 else ""
        else:
            nxt, sep = None, ""
        if (
            frame_times is not None
            and not (kind or cue)
            and is_int(text, a)
            and frame_match(rev, size - start) is not None
        ):
            step, beside = frame_mention(text, atoms, i, sep, last_time_atom)
            if not beside:
                k = int(atom_value(text, a))
                t = frame_time(k, frame_times)
                if t is None:
                    n_frames_out += 1
                else:
                    n_frames_mapped += 1
                    chosen.append((start, end, t, k))
            i += step
            continue
        is_range = False
        if sep:
            core = cores_get(sep) or sep_core(sep)
            is_range = (
                (core in RANGE_WORDS or core == "and")
                and atom_value(text, a) <= atom_value(text, nxt)  # type: ignore[arg-type]
                and opens_range(text, a, nxt, sep, core)  # type: ignore[arg-type]
            )
        if is_range or kind or cue:
            lo = atoms[i - 1][1] - 1 if i and atoms[i - 1][1] - 1 > start - CONTEXT_CHARS else start - CONTEXT_CHARS
            piece = text[lo if lo > 0 else 0 : start]
            negative = neg_get(piece)
            if negative is None:
                negative = context_before(piece, NEG_REV, NEG_SEEN)
            negative = negative or not_after(text, end) is not None
            if not negative:
                chosen.append((start, end, atom_value(text, a), None))
                last_time_atom = i + 1 if is_range else i
        i += 2 if is_range else 1
    kept = _keep(text, chosen, duration_s, label_patterns, merge_s, slack_s)
    return _events(chosen, kept, n_frames_mapped, n_frames_out)


def _events(
    chosen: list[tuple[int, int, float, int | None]], kept: _Kept, n_frames_mapped: int, n_frames_out: int
) -> TimestampReport:
    """The report of the chosen times (start, end, time, frame number) from what :func:`_keep` made of them (range
    check, merging, labels)."""
    times, labels, kept_at, dropped, n_merged = kept
    events = []
    for v, label, k in zip(times, labels, kept_at, strict=True):
        c = chosen[k]
        ev = _new_object(ReportedEvent)
        _set_attr(ev, "__dict__", {"t": v, "span": (c[0], c[1]), "label": label, "frame": c[3]})  # _new_event inline
        events.append(ev)
    return _new_report(tuple(events), len(dropped), n_merged, tuple(dropped), n_frames_mapped, n_frames_out)


def reported(
    text: str | None,
    duration_s: float,
    label_patterns: Sequence[re.Pattern[str]] = (),
    frame_times: Sequence[float] | None = None,
) -> tuple[list[float], list[str | None], int, int, int, int]:
    """What scoring reads of :func:`extract_timestamps` (default merge and slack): the events' times and labels,
    ``n_dropped``, ``n_merged``, ``n_frame_mentions`` and ``n_frame_out_of_range``, without making the events."""
    if isinstance(text, str) and text and (frame_times is None or FRAME_WORD.search(text) is None):
        found = scan_times(text, boxed_regions(text))
        if found is None:
            return [], [], 0, 0, 0, 0
        times, labels, _, dropped, n_merged = _keep(text, found, duration_s, label_patterns, MERGE_S, SLACK_S)
        return times, labels, len(dropped), n_merged, 0, 0
    report = extract_timestamps(text, duration_s, label_patterns=label_patterns, frame_times=frame_times)
    return (
        report.times,
        report.labels,
        report.n_dropped,
        report.n_merged,
        report.n_frame_mentions,
        report.n_frame_out_of_range,
    )


def _keep(
    text: str,
    chosen: list[tuple[int, int, float, int | None]],
    duration_s: float,
    label_patterns: Sequence[re.Pattern[str]],
    merge_s: float,
    slack_s: float,
) -> _Kept:
    """Of the chosen times, those kept (in range, not merged into an earlier kept one): their times, labels and
    indices in ``chosen``; then the times dropped (out of range) and the number merged."""
    size = len(text)
    times: list[float] = []
    labels: list[str | None] = []
    kept_at: list[int] = []
    dropped: list[float] = []
    n_merged = 0
    limit = float(duration_s) + slack_s
    merge_gap = merge_s + 1e-9
    kept: list[float] = []  # sorted: only the nearest kept time on each side can be within merge_gap
    cache: dict[str, str | None] = {}
    if label_patterns and type(label_patterns) is tuple:  # a tuple cannot change, so its reads can be kept
        entry = LABEL_CACHE.get(id(label_patterns))
        if entry is None or entry[0] is not label_patterns:
            if len(LABEL_CACHE) >= 64:
                LABEL_CACHE.clear()
            entry = LABEL_CACHE[id(label_patterns)] = (label_patterns, {})  # held, so its id is not reused
        cache = entry[1]
    cache_get = cache.get
    last = len(chosen) - 1
    for k, (start, end, v, _) in enumerate(chosen):
        if not (0.0 <= v <= limit):
            dropped.append(v)
            continue
        if not kept or v - kept[-1] > merge_gap:  # after every kept time and clear of the last: the usual ledger
            kept.append(v)
        else:
            j = bisect.bisect_left(kept, v)
            if (j < len(kept) and abs(v - kept[j]) <= merge_gap) or (j > 0 and abs(v - kept[j - 1]) <= merge_gap):
                n_merged += 1
                continue
            kept.insert(j, v)
        label = None
        if label_patterns:  # _label inline: the line after the time (up to the next time), else before it
            next_start = chosen[k + 1][0] if k < last else size
            le = text.find("\n", start)
            piece = text[end : next_start if le < 0 or next_start < le else le]
            label = cache_get(piece, cache)
            if label is cache:
                label = read_label(piece, label_patterns, cache)
            if label is None:
                piece = text[max(text.rfind("\n", 0, start) + 1, chosen[k - 1][1] if k else 0) : start]
                label = cache_get(piece, cache)
                if label is cache:
                    label = read_label(piece, label_patterns, cache)
        times.append(v)
        labels.append(label)  # type: ignore[arg-type]
        kept_at.append(k)
    return times, labels, kept_at, dropped, n_merged
