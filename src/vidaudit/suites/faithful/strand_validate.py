"""Validate the STRAND release (per-video JSON: ``video_name``, ``questions``, ``answers``,
``sub-questions``, ``sub-answers``) instead of zipping its lists.

Findings, each naming the file, the target index and the kind:

- ``length_mismatch``: the four target-level lists differ in length (the file's alignment cannot be
  trusted: every target of the file is affected; the index is the first position without a full
  set), or one target's sub-question and sub-answer lists differ (that target);
- ``non_yes_no``: one per answer (target or sub) that is not Yes/No after case and space
  normalisation, "NA" included (normalisations that changed an answer are logged in ``normalised``);
- ``sub_equals_target``: a target listed verbatim among its own sub-questions;
- ``conflicting_answers``: one per question text that carries both Yes and No in one video, at target
  or sub level (every target where the text occurs is affected);
- ``duplicate_target``: a target text repeated in one file (the later copies are affected);
- ``sliding_sub_lists``: a run of at least two consecutive targets that the best one-to-one, order-keeping
  alignment of the file's targets with its sub-question lists pairs with lists other than their own
  position's (a slide: lists inserted or dropped part-way, as in the release's ``sample_0071``). The alignment
  maximises the summed overlap of each target with its list (Dice coefficient of content words) minus
  ``SLIDE_GAP`` for every list or target it leaves unpaired, within ``SLIDE_MAX_OFFSET`` positions; the
  diagonal wins ties. A list that fits its own target is kept for it, so nested targets (a target that is a
  sub-question of the one before) are not a slide.

A policy decides what is kept: ``drop-target`` (drop affected targets; the default),
``drop-file`` (drop every file with a finding), ``keep-as-wrong`` (keep every target; affected ones
are never right). Counts per kind and the final N are stored; nothing is dropped silently. The
cluster key is the source video parsed from ``video_name`` (``NNNN[_k]_<11-character id>.mp4``: the
release cuts some sources into several clips), or the file with ``cluster_by="file"``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidaudit.sdk import ConfigError, DataError, read_json_file, write_json_atomic

KINDS = (
    "length_mismatch",
    "non_yes_no",
    "sub_equals_target",
    "conflicting_answers",
    "duplicate_target",
    "sliding_sub_lists",
)
POLICIES = ("drop-target", "drop-file", "keep-as-wrong")
CLUSTER_BY = ("source", "file")
VALIDATION = "validation.json"
#: a release file is a few KB (one video's questions); anything near this cap is not one
MAX_RELEASE_FILE_BYTES = 16 * 1024 * 1024
#: the slide detector's alignment: leaving a list or a target unpaired costs SLIDE_GAP (in Dice units: a slide is
#: found when the lists it pairs fit their targets better, summed over the run, than the gaps that make it cost);
#: lists are paired at most SLIDE_MAX_OFFSET positions away from their target
SLIDE_GAP, SLIDE_MAX_OFFSET = 0.4, 3
_NAME = re.compile(r"^(?P<num>\d+)(?:_(?P<clip>\d+))?_(?P<source>[A-Za-z0-9_-]{11})$")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "did",
        "does",
        "do",
        "is",
        "was",
        "were",
        "are",
        "be",
        "been",
        "in",
        "of",
        "to",
        "and",
        "or",
        "on",
        "at",
        "for",
        "with",
        "this",
        "that",
        "these",
        "those",
        "he",
        "she",
        "his",
        "her",
        "him",
        "it",
        "its",
        "they",
        "them",
        "their",
        "by",
        "from",
        "as",
        "any",
        "after",
        "before",
        "then",
        "when",
        "while",
        "into",
        "onto",
        "video",
        "there",
        "here",
        "who",
        "whom",
        "which",
        "what",
    ]
)


@dataclass(frozen=True)
class Finding:
    file: str
    index: int | None
    kind: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "index": self.index, "kind": self.kind, "detail": self.detail}


@dataclass
class ReleaseSub:
    text: str
    answer: str  # "Yes"/"No", or the raw text when invalid
    valid: bool


@dataclass
class ReleaseTarget:
    file: str
    index: int
    video_name: str
    cluster: str
    text: str
    answer: str
    valid: bool
    subs: list[ReleaseSub]
    invalid: set[str] = field(default_factory=set)  # kinds of the findings that affect this target


#: the paper's own statistics of its benchmark (§4, §4.1, §4.4) as it prints them (50.8% for 497 of 977):
#: what the release is compared with
PAPER_STATISTICS: dict[str, float | int] = {
    "videos": 88,
    "targets": 977,
    "subs": 2516,
    "subs_per_target": 2.58,
    "targets_per_video": 11.1,
    "target_yes": 497,
    "target_yes_share": 0.508,
    "sub_yes": 1298,
    "sub_yes_share": 0.516,
    "majority_a_faith": 0.191,
}


def statistics(targets: list[ReleaseTarget]) -> dict[str, Any]:
    """Counts of a set of release targets, in the paper's terms: videos (files), sources, targets, subs,
    subs per target (mean, min, max and the histogram), Yes shares over the Yes/No answers as written
    (an answer that is not Yes/No is counted apart), and what always-Yes would score as A_faith (every
    target and sub-question answered Yes; a target with an invalid answer is never right)."""
    subs = [sub for t in targets for sub in t.subs]
    per = [len(t.subs) for t in targets]
    t_yes = sum(t.valid and t.answer == "Yes" for t in targets)
    t_no = sum(t.valid and t.answer == "No" for t in targets)
    s_yes = sum(x.valid and x.answer == "Yes" for x in subs)
    s_no = sum(x.valid and x.answer == "No" for x in subs)
    files = len({t.file for t in targets})
    always_yes = sum(
        t.valid and t.answer == "Yes" and not t.invalid and all(x.valid and x.answer == "Yes" for x in t.subs)
        for t in targets
    )
    return {
        "videos": files,
        "sources": len({t.cluster for t in targets}),
        "targets": len(targets),
        "subs": len(subs),
        "subs_per_target": sum(per) / len(per) if per else None,
        "subs_per_target_min": min(per, default=None),
        "subs_per_target_max": max(per, default=None),
        "subs_per_target_histogram": {str(m): per.count(m) for m in sorted(set(per))},
        "targets_per_video": len(targets) / files if files else None,
        "target_yes": t_yes,
        "target_no": t_no,
        "target_not_yes_no": len(targets) - t_yes - t_no,
        "target_yes_share": t_yes / (t_yes + t_no) if t_yes + t_no else None,
        "sub_yes": s_yes,
        "sub_no": s_no,
        "sub_not_yes_no": len(subs) - s_yes - s_no,
        "sub_yes_share": s_yes / (s_yes + s_no) if s_yes + s_no else None,
        "always_yes_a_faith": always_yes / len(targets) if targets else None,
    }


@dataclass
class ValidationResult:
    files: int
    targets_read: int
    targets_kept: int
    counts: dict[str, int]
    findings: list[Finding]
    normalised: list[dict[str, Any]]
    policy: str
    cluster_by: str
    kept: list[ReleaseTarget]
    n_clusters: int
    unparsed_video_names: list[str]
    statistics: dict[str, Any] = field(default_factory=dict)  # {"read", "kept", "paper"}: see statistics()

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "targets_read": self.targets_read,
            "targets_kept": self.targets_kept,
            "counts": dict(self.counts),
            "findings": [f.to_dict() for f in self.findings],
            "policy": self.policy,
            "cluster_by": self.cluster_by,
            "n_clusters": self.n_clusters,
            "normalised": list(self.normalised),
            "unparsed_video_names": list(self.unparsed_video_names),
            "statistics": self.statistics,
        }


def normalise_answer(raw: Any) -> tuple[str | None, str]:
    """("Yes"/"No" or None, a text form of the raw answer) after case and space normalisation."""
    if not isinstance(raw, str):
        return None, json.dumps(raw)
    s = " ".join(raw.split()).casefold()
    return ({"yes": "Yes", "no": "No"}.get(s), raw)


def norm_text(text: str) -> str:
    return " ".join(str(text).split()).casefold().rstrip("?. ")


def words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", str(text).casefold()) if w not in _STOP)


def source_of(video_name: str) -> str | None:
    """The source video id in ``NNNN[_k]_<id>.mp4`` (None when the name does not follow the pattern)."""
    m = _NAME.match(Path(video_name).stem)
    return m.group("source") if m else None


def _lists(path: Path, data: Any) -> tuple[str, list, list, list, list]:
    if not isinstance(data, dict):
        raise DataError(f"{path}: a release file is a JSON object, got {type(data).__name__}")
    out: list[list[Any]] = []
    for key in ("questions", "answers", "sub-questions", "sub-answers"):
        v = data.get(key, [])
        if not isinstance(v, list):
            raise DataError(f"{path}: {key!r} must be a list, got {type(v).__name__}")
        out.append(v)
    for key in ("sub-questions", "sub-answers"):
        for i, v in enumerate(data.get(key, [])):
            if not isinstance(v, list):
                raise DataError(f"{path}: {key}[{i}] must be a list, got {type(v).__name__}")
    name = data.get("video_name")
    return (str(name) if name else path.stem + ".mp4"), out[0], out[1], out[2], out[3]


def _dice(a: frozenset[str], b: frozenset[str], weight: dict[str, float] | None = None) -> float:
    """Dice coefficient of two word sets, each word weighted (1 without weights)."""
    if not a or not b:
        return 0.0
    w = weight or {}
    return 2 * sum(w.get(x, 1.0) for x in a & b) / (sum(w.get(x, 1.0) for x in a) + sum(w.get(x, 1.0) for x in b))


def _weights(lists: list[frozenset[str]]) -> dict[str, float]:
    """Inverse document frequency over the file's lists, log(1 + N / df): a word every list repeats ("shootout",
    "goalkeeper") tells lists apart less than a shooter's number."""
    df: dict[str, int] = {}
    for words_ in lists:
        for x in words_:
            df[x] = df.get(x, 0) + 1
    return {x: math.log(1 + len(lists) / d) for x, d in df.items()}


def align(qs: list, subq: list) -> dict[int, int | None]:
    """The best one-to-one, order-keeping alignment of targets with sub-question lists: target index -> list
    index (None: left without a list). Score: the summed Dice of each target's content words with its list's,
    minus ``SLIDE_GAP`` per unpaired target or list; pairs at most ``SLIDE_MAX_OFFSET`` apart; ties go to the
    diagonal. A file whose two lengths differ by more than ``SLIDE_MAX_OFFSET`` is paired by position (its
    length mismatch already affects every target)."""
    n, m = len(qs), len(subq)
    if abs(n - m) > SLIDE_MAX_OFFSET:
        return {i: (i if i < m else None) for i in range(n)}
    own = [words(q) for q in qs]
    lists = [frozenset().union(*(words(x) for x in sl)) if sl else frozenset() for sl in subq]
    weight = _weights(lists)
    lo, hi = min(0, m - n) - SLIDE_MAX_OFFSET, max(0, m - n) + SLIDE_MAX_OFFSET  # the band of j - i the path may use
    neg = float("-inf")
    best: dict[tuple[int, int], tuple[float, int, tuple[int, int] | None, bool]] = {(0, 0): (0.0, 0, None, False)}
    for i in range(n + 1):
        for j in range(max(0, i + lo), min(m, i + hi) + 1):
            here = best.get((i, j))
            if here is None:
                continue
            score, diag, _, _ = here
            moves = []
            if i < n and j < m and abs(i - j) <= SLIDE_MAX_OFFSET:
                moves.append(((i + 1, j + 1), score + _dice(own[i], lists[j], weight), diag + (i == j), True))
            if i < n:
                moves.append(((i + 1, j), score - SLIDE_GAP, diag, False))
            if j < m:
                moves.append(((i, j + 1), score - SLIDE_GAP, diag, False))
            for to, sc, dg, paired in moves:
                if not lo <= to[1] - to[0] <= hi:
                    continue
                old = best.get(to, (neg, -1, None, False))
                if sc > old[0] + 1e-12 or (abs(sc - old[0]) <= 1e-12 and dg > old[1]):
                    best[to] = (sc, dg, (i, j), paired)
    out: dict[int, int | None] = dict.fromkeys(range(n))
    at: tuple[int, int] | None = (n, m)
    while at is not None and at != (0, 0):
        _, _, prev, paired = best[at]
        if paired and prev is not None:
            out[prev[0]] = prev[1]
        at = prev
    return out


def _sliding(file: str, qs: list, subq: list) -> list[Finding]:
    """Targets the alignment (``align``) pairs with another position's list, or leaves without one while a list
    sits at their position, in runs of at least two: what zipping the lists would mis-pair."""
    pairing = align(qs, subq)
    off = {
        i: (j - i if j is not None else None) for i, j in pairing.items() if j != i and (j is not None or i < len(subq))
    }
    lists = [frozenset().union(*(words(x) for x in sl)) if sl else frozenset() for sl in subq]
    weight = _weights(lists)
    out = []
    for i in sorted(off):
        if i - 1 not in off and i + 1 not in off:  # a run of >= 2
            continue
        own, j = words(qs[i]), pairing[i]
        mine = _dice(own, lists[i], weight) if i < len(lists) else 0.0
        if j is None:
            detail = (
                f"questions[{i}] is left without a sub-question list by the best alignment of the file's targets "
                f"and lists (its own position's list overlaps it by {mine:.0%}, weighted Dice of content words)"
            )
        else:
            detail = (
                f"questions[{i}] aligns with sub-questions[{j}] (offset {j - i:+d}; weighted Dice of content words "
                f"{_dice(own, lists[j], weight):.0%}), not with its own position's list ({mine:.0%})"
            )
        out.append(Finding(file, i, "sliding_sub_lists", detail))
    return out


def validate_file(
    path: Path, cluster_by: str = "source"
) -> tuple[list[ReleaseTarget], list[Finding], list[dict[str, Any]], bool]:
    """The targets of one file with the findings that affect them, the normalisations, and whether the
    video name was parsed."""
    try:
        data = read_json_file(path, what="release file", max_bytes=MAX_RELEASE_FILE_BYTES)
    except DataError as e:
        raise DataError(f"{e}; fix or remove it") from e
    video_name, qs, ans, subq, suba = _lists(path, data)
    source = source_of(video_name)
    cluster = path.stem if cluster_by == "file" or source is None else source
    check = _FileCheck(path.name, video_name, cluster, {i: set() for i in range(len(qs))})
    check.lengths(qs, ans, subq, suba)
    targets = [check.target(i, q, ans, subq, suba) for i, q in enumerate(qs)]
    check.conflicts(targets)
    check.duplicates(targets)
    check.slides(targets, subq)
    for t in targets:
        t.invalid = check.affected[t.index]
    return targets, check.findings, check.normalised, source is not None


@dataclass
class _FileCheck:
    """What validating one release file collects, one finding kind per method: the findings in the order they
    are found, the answers that normalisation changed, and the kinds of the findings that affect each target."""

    file: str
    video_name: str
    cluster: str
    affected: dict[int, set[str]]
    findings: list[Finding] = field(default_factory=list)
    normalised: list[dict[str, Any]] = field(default_factory=list)

    def answer(self, raw: Any, where: str, index: int, sub_index: int | None = None) -> tuple[str, bool]:
        """(the answer, whether it is Yes/No): a non_yes_no finding when it is not, a logged normalisation
        when case or spaces had to change."""
        value, text = normalise_answer(raw)
        if value is None:
            self.findings.append(
                Finding(
                    self.file,
                    index,
                    "non_yes_no",
                    f"{where} = {text!r}" + (" (NA)" if isinstance(raw, str) and raw.strip().upper() == "NA" else ""),
                )
            )
            return text, False
        if raw != value:
            self.normalised.append(
                {"file": self.file, "index": index, "sub_index": sub_index, "from": raw, "to": value}
            )
        return value, True

    def lengths(self, qs: list, ans: list, subq: list, suba: list) -> None:
        """The four target-level lists differ in length: no target's alignment can be trusted."""
        lengths = [len(qs), len(ans), len(subq), len(suba)]
        if len(set(lengths)) > 1:
            self.findings.append(
                Finding(
                    self.file,
                    min(lengths),
                    "length_mismatch",
                    f"questions {lengths[0]}, answers {lengths[1]}, sub-questions {lengths[2]}, "
                    f"sub-answers {lengths[3]}: the lists cannot be aligned",
                )
            )
            for i in self.affected:
                self.affected[i].add("length_mismatch")

    def target(self, i: int, q: Any, ans: list, subq: list, suba: list) -> ReleaseTarget:
        """Target ``i`` read with its answer and sub-questions, and the findings within it."""
        if i < len(ans):
            a, ok = self.answer(ans[i], f"answers[{i}]", i)
        else:
            a, ok = "", False
        sq = subq[i] if i < len(subq) else []
        sa = suba[i] if i < len(suba) else []
        if (i < len(subq)) != (i < len(suba)) or len(sq) != len(sa):
            self.findings.append(
                Finding(
                    self.file,
                    i,
                    "length_mismatch",
                    f"sub-questions[{i}] has {len(sq)} items, sub-answers[{i}] {len(sa)}",
                )
            )
            self.affected[i].add("length_mismatch")
        subs = self._subs(i, q, sq, sa)
        if not ok and i < len(ans):
            self.affected[i].add("non_yes_no")
        return ReleaseTarget(self.file, i, self.video_name, self.cluster, str(q), a, ok, subs)

    def _subs(self, i: int, q: Any, sq: list, sa: list) -> list[ReleaseSub]:
        """Target ``i``'s sub-questions paired by position with their answers (a sub is valid only when both
        lists have it and are as long as each other); a sub that repeats the target is a finding."""
        subs = []
        for j in range(max(len(sq), len(sa))):
            text = str(sq[j]) if j < len(sq) else ""
            if j < len(sa):
                sub_a, sub_ok = self.answer(sa[j], f"sub-answers[{i}][{j}]", i, j)
            else:
                sub_a, sub_ok = "", False
            subs.append(ReleaseSub(text, sub_a, sub_ok and j < len(sq) and len(sq) == len(sa)))
            if not sub_ok:
                self.affected[i].add("non_yes_no")
            if j < len(sq) and norm_text(text) == norm_text(q):
                self.findings.append(
                    Finding(self.file, i, "sub_equals_target", f"sub-questions[{i}][{j}] repeats the target")
                )
                self.affected[i].add("sub_equals_target")
        return subs

    def conflicts(self, targets: list[ReleaseTarget]) -> None:
        """One video, one answer per question text, at target and sub level alike."""
        seen: dict[str, list[tuple[int, str, str]]] = {}
        for t in targets:
            if t.valid:
                seen.setdefault(norm_text(t.text), []).append((t.index, f"questions[{t.index}]", t.answer))
            for j, s in enumerate(t.subs):
                if s.valid:
                    seen.setdefault(norm_text(s.text), []).append((t.index, f"sub-questions[{t.index}][{j}]", s.answer))
        for _text, places in seen.items():
            if len({a for _, _, a in places}) > 1:
                self.findings.append(
                    Finding(
                        self.file, places[0][0], "conflicting_answers", ", ".join(f"{w} = {a}" for _, w, a in places)
                    )
                )
                for i, _, _ in places:
                    self.affected[i].add("conflicting_answers")

    def duplicates(self, targets: list[ReleaseTarget]) -> None:
        """A target text repeated in the file: the later copies are affected."""
        first: dict[str, int] = {}
        for t in targets:
            key = norm_text(t.text)
            if key in first:
                self.findings.append(
                    Finding(self.file, t.index, "duplicate_target", f"same text as questions[{first[key]}]")
                )
                self.affected[t.index].add("duplicate_target")
            else:
                first[key] = t.index

    def slides(self, targets: list[ReleaseTarget], subq: list) -> None:
        """Runs of targets paired with another position's sub-question list (``_sliding``)."""
        for f in _sliding(self.file, [t.text for t in targets], [list(map(str, x)) for x in subq]):
            self.findings.append(f)
            if f.index is not None:  # a sliding finding always names its target
                self.affected[f.index].add("sliding_sub_lists")


def release_files(directory: str | Path) -> list[Path]:
    d = Path(directory)
    if not d.is_dir():
        raise DataError(f"{d} is not a directory of release JSON files")
    files = sorted(p for p in d.glob("*.json") if p.name != VALIDATION)
    if not files:
        raise DataError(f"{d} holds no .json files; point --dir at the extracted release (one JSON per video)")
    return files


def validate_strand(
    directory: str | Path, *, on_invalid: str = "drop-target", cluster_by: str = "source"
) -> ValidationResult:
    """Validate every release file in ``directory`` and apply the policy (see the module docstring)."""
    if on_invalid not in POLICIES:
        raise ConfigError(f"--on-invalid must be one of {', '.join(POLICIES)}, got {on_invalid!r}")
    if cluster_by not in CLUSTER_BY:
        raise ConfigError(f"--cluster-by must be source or file, got {cluster_by!r}")
    files = release_files(directory)
    all_targets: list[ReleaseTarget] = []
    findings: list[Finding] = []
    normalised: list[dict[str, Any]] = []
    unparsed: list[str] = []
    for path in files:
        targets, found, norm, parsed = validate_file(path, cluster_by)
        all_targets += targets
        findings += found
        normalised += norm
        if not parsed and targets:
            unparsed.append(targets[0].video_name)
    bad_files = {f.file for f in findings}
    if on_invalid == "drop-target":
        kept = [t for t in all_targets if not t.invalid]
    elif on_invalid == "drop-file":
        kept = [t for t in all_targets if t.file not in bad_files]
    else:
        kept = list(all_targets)
    counts = {k: sum(f.kind == k for f in findings) for k in KINDS}
    return ValidationResult(
        files=len(files),
        targets_read=len(all_targets),
        targets_kept=len(kept),
        counts=counts,
        findings=findings,
        normalised=normalised,
        policy=on_invalid,
        cluster_by=cluster_by,
        kept=kept,
        n_clusters=len({t.cluster for t in kept}),
        unparsed_video_names=unparsed,
        statistics={"read": statistics(all_targets), "kept": statistics(kept), "paper": dict(PAPER_STATISTICS)},
    )


def write_validation(result: ValidationResult, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(p, result.to_json())
    return p
