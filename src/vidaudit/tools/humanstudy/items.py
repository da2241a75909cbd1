"""A study's items: what one annotator is shown and asked about one sample, and the study's content id.

An item is built from a sample and the prompt the model was asked (``suite.render_prompt``). Its kind:

- ``choice``: the prompt lists lettered options (lines ``A. ...``, ``B. ...``, from A, at least two);
  the page shows them as radio inputs and the answer is the letter;
- ``text``: no lettered options: the task is free text, answered in a text box;
- ``quality``: the data-quality question about the sample's ``params.statement`` (answers ``yes`` / ``no``).

The correct answer travels in the study manifest only, never in the page, and is left out of the study
id (a content hash of everything the page shows), so the id cannot be used to guess it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from vidaudit.core.hashing import sha256_json
from vidaudit.core.types import Sample

QUALITY_QUESTION = "Does this statement describe something that does not occur in the video?"
QUALITY_OPTIONS: tuple[tuple[str, str], ...] = (
    ("yes", "Yes: it describes something that does not occur"),
    ("no", "No: what it describes occurs in the video"),
)
#: the item condition when the sample names none (the clip as generated, played at its own rate)
DEFAULT_CONDITION = "video"
PHASE_CONDITION = {1: "masked", 2: "raw"}

_OPTION_LINE = re.compile(r"^\s*([A-H])[.)]\s+(\S.*?)\s*$")


class StudyItem(BaseModel):
    """One question about one clip, as the page shows it (plus ``correct``, which only the manifest keeps)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str
    sample_id: str
    kind: Literal["choice", "text", "quality"]
    probe: str
    condition: str
    system: str | None = None
    question: str
    statement: str | None = None
    options: list[tuple[str, str]] = []
    video_sha256: str | None = None
    video_path: str
    pair: str | None = None
    phase: int | None = None
    #: sha256 of the video shown when it is not the sample's own (a condition's perturbed rendering, whose
    #: path is ``video_path``); the sample's own stays ``video_sha256``, which import checks
    shown_sha256: str | None = None
    correct: str | None = None

    def public(self) -> dict[str, Any]:
        """What the page may carry: everything but the correct answer."""
        return self.model_dump(mode="json", exclude={"correct"})


def split_options(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The prompt without its option lines, and the options (letter, text) when they run A, B, ... (two or more).

    With options, the lines that only tell a model how to format its letter (they hold ``\\boxed{``) are
    dropped from what a person reads: the radio buttons replace them. Without options the prompt is kept
    verbatim, its answer-format instruction included: a free-text answer is read by the suite's parser."""
    lines = text.splitlines()
    found = [(i, m.group(1), m.group(2)) for i, line in enumerate(lines) if (m := _OPTION_LINE.match(line))]
    letters = [f[1] for f in found]
    if len(found) >= 2 and letters == [chr(ord("A") + k) for k in range(len(found))]:
        drop = {i for i, _, _ in found}
        keep_lines = [ln for i, ln in enumerate(lines) if i not in drop and "\\boxed{" not in ln]
        return "\n".join(keep_lines).strip(), [(ltr, opt) for _, ltr, opt in found]
    return text.strip(), []


def item_condition(sample: Sample) -> str:
    """The stratum's condition: ``params.condition``, else the paired phase (masked / raw), else ``video``."""
    p = sample.params
    if isinstance(p.get("condition"), str) and p["condition"]:
        return p["condition"]
    phase = p.get("study_phase")
    if phase in PHASE_CONDITION:
        return PHASE_CONDITION[phase]
    return DEFAULT_CONDITION


def item_probe(sample: Sample) -> str:
    probe = sample.params.get("probe")
    return probe if isinstance(probe, str) and probe else sample.suite


def pair_of(sample: Sample) -> tuple[str | None, int | None]:
    """``params.study_pair`` (the shared id) and ``params.study_phase`` (1 masked, 2 raw), when both are set."""
    pair, phase = sample.params.get("study_pair"), sample.params.get("study_phase")
    if pair is None and phase is None:
        return None, None
    return (str(pair), phase) if pair is not None and phase in (1, 2) else (None, None)


def _item_id(kind: str, sample: Sample) -> str:
    return "i" + sha256_json(["human-study-item", kind, sample.sample_id, sample.video.sha256])[:12]


def performance_item(sample: Sample, system: str | None, prompt: str) -> StudyItem:
    """The question the model was asked, with its options as choices, or as free text."""
    question, options = split_options(prompt)
    pair, phase = pair_of(sample)
    correct = None
    if options:
        correct = _correct_letter(sample, options)
    elif sample.answer is not None:
        correct = str(sample.answer)
    return StudyItem(
        item_id=_item_id("performance", sample),
        sample_id=sample.sample_id,
        kind="choice" if options else "text",
        probe=item_probe(sample),
        condition=item_condition(sample),
        system=system,
        question=question,
        options=options,
        video_sha256=sample.video.sha256,
        video_path=str(sample.video.path),
        pair=pair,
        phase=phase,
        correct=correct,
    )


def _correct_letter(sample: Sample, options: list[tuple[str, str]]) -> str | None:
    """The option letter of the sample's answer: ``params.option`` when a suite records it, else the answer
    when it is a letter. The import scores with the suite's own ``score()``; this is for the manifest."""
    letters = {ltr for ltr, _ in options}
    for v in (sample.params.get("option"), sample.answer):
        if isinstance(v, str) and v.upper() in letters:
            return v.upper()
    return None


def quality_item(sample: Sample) -> StudyItem:
    """The data-quality question about the sample's statement; correct when ``params.claim_is_true`` is set."""
    truth = sample.params.get("claim_is_true")
    return StudyItem(
        item_id=_item_id("quality", sample),
        sample_id=sample.sample_id,
        kind="quality",
        probe=item_probe(sample),
        condition="quality",
        question=QUALITY_QUESTION,
        statement=str(sample.params["statement"]),
        options=list(QUALITY_OPTIONS),
        video_sha256=sample.video.sha256,
        video_path=str(sample.video.path),
        correct=None if not isinstance(truth, bool) else ("no" if truth else "yes"),
    )


def has_statement(sample: Sample) -> bool:
    s = sample.params.get("statement")
    return isinstance(s, str) and bool(s.strip())


def study_id(kind: str, suite: str, items: list[StudyItem]) -> str:
    """The content id of a study: the hash of what its page shows (item order included), not of the answers."""
    return "hs-" + sha256_json(["human-study", kind, suite, [i.public() for i in items]])[:16]
