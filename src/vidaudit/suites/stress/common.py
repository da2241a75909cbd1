"""What every stress probe's report shares: accuracy over planned trials, and the columns every table has.

Accuracy is over every *planned* trial (a failed call is wrong; ``completion`` says how many were
scored), with a 95% Wilson interval, counted over the items' sources where several items of a cell share one
(``source_of``; ``cluster_wilson_interval``). Every probe table carries the same trailing columns: chance, the
paper's reported value where it gives one, and the human ceiling (filled from a human-study file when
one is imported; "not measured" otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from vidaudit.sdk import (
    AggregateInput,
    ConfigError,
    Figure,
    ParseResult,
    ScoreInput,
    ScoreRecord,
    Section,
    SuiteReport,
    Table,
    TrialScore,
    boxed_spans,
    parse_option,
    select_frames,
    source_interval,
    sources_text,
)

NOT_MEASURED = "not measured"


def pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}"


#: the record parameter naming the source an item of a probe was made from (the scene a camera moves over, the
#: rendered procedure a question or perturbation is made from, the annotated clip a window is cut from). Items of
#: one source answer alike, so a cell holding several of them counts its sources, not its items, in its interval.
#: A probe not listed, or a record without its key, is grouped by its video (``group_id``, the video's sha256):
#: the source itself for cross_frame (both prompts of every question on a clip show the clip) and sycophancy
#: (every claim about a video shows that video).
SOURCE_PARAM: dict[str, str] = {
    "camera_motion": "scene",
    "expectation": "source_name",
    "shortcuts": "source_name",
    "lane_change": "clip",
    "mosaic": "seed",
    "wireframe": "seed",
}
#: what one source of a probe is, in the report's words (a probe not listed: "video")
SOURCE_UNIT: dict[str, str] = {
    "camera_motion": "scene",
    "expectation": "source",
    "shortcuts": "source",
    "lane_change": "clip",
    "mosaic": "still",
    "wireframe": "scene",
}


def source_of(r: ScoreRecord) -> tuple[str, str]:
    """The source of a record's item as (what it is called, its key): the probe's source parameter (``SOURCE_PARAM``,
    called ``SOURCE_UNIT``), else its video. The stress suite's ``Suite.source_of`` (every probe's), which
    ``vidaudit compare`` reads too."""
    key = SOURCE_PARAM.get(str(r.params.get("probe")))
    value = r.params.get(key) if key else None
    if key and value is not None:
        return SOURCE_UNIT.get(str(r.params.get("probe")), "source"), str(value)
    return ("video", r.group_id)


def interval_of(rs: Sequence[ScoreRecord], get: Callable[[ScoreRecord], bool | None]) -> dict[str, Any]:
    """The 95% interval of the share of ``rs`` that ``get`` calls correct, over their sources (``source_of``;
    ``score.stats.source_interval``: Wilson's over items when every source gives one item, else Wilson's at the
    sources' effective size), with ``ci_unit``, ``n_sources`` and ``design_effect``; no records: no interval."""
    block = source_interval([get(r) is True for r in rs], [source_of(r) for r in rs])
    return block if rs else {**block, "ci_low": None, "ci_high": None}


def accuracy_cell(
    rs: Sequence[ScoreRecord], correct: Callable[[ScoreRecord], bool | None] | None = None
) -> dict[str, Any]:
    """k, n and a 95% interval over the planned trials ``rs`` (``interval_of``: Wilson, over the items' sources
    where several items share one); ``correct`` overrides ``record.correct``."""
    get = correct or (lambda r: r.correct)
    n = len(rs)
    k = sum(get(r) is True for r in rs)
    scored = sum(r.status == "ok" for r in rs)
    iv = interval_of(rs, get)
    return {
        "n_planned": n,
        "n_scored": scored,
        "n_correct": k,
        "accuracy": k / n if n else None,
        "ci_low": iv["ci_low"],
        "ci_high": iv["ci_high"],
        "completion": scored / n if n else None,
        "accuracy_of_scored": k / scored if scored else None,
        **{key: iv[key] for key in ("ci_unit", "n_sources", "design_effect")},
    }


def group_records(
    records: Iterable[ScoreRecord], key: Callable[[ScoreRecord], Hashable]
) -> dict[Any, list[ScoreRecord]]:
    """Records grouped by ``key``, groups in sorted key order (stable tables)."""
    out: dict[Any, list[ScoreRecord]] = {}
    for r in records:
        out.setdefault(key(r), []).append(r)
    return {k: out[k] for k in sorted(out, key=lambda k: tuple(map(str, k)) if isinstance(k, tuple) else str(k))}


def by_model_condition(records: Iterable[ScoreRecord]) -> dict[tuple[str, str], list[ScoreRecord]]:
    return group_records(records, lambda r: (r.model, r.condition))


def model_condition_cells(
    records: Iterable[ScoreRecord], numbers: Callable[[list[ScoreRecord]], dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """A probe's cells, one per model x condition, keyed ``MODEL|CONDITION``: each names its model, condition and
    role, then the probe's ``numbers`` of its records (the shape every model x condition probe stores)."""
    return {
        f"{model}|{cond}": {"model": model, "condition": cond, "role": rs[0].model_role, **numbers(rs)}
        for (model, cond), rs in by_model_condition(records).items()
    }


def interval_text(cell: dict[str, Any]) -> str:
    """ "[31.2, 58.0]", and the sources counted when they were not the items: "[20.5, 79.5] (2 scenes)"."""
    text = f"[{pct(cell['ci_low'])}, {pct(cell['ci_high'])}]"
    unit = cell.get("ci_unit", "item")
    if unit == "item":
        return text
    n = cell["n_sources"]
    return f"{text} ({sources_text(n, unit)})"


def clustered_units(res: Any) -> dict[str, int]:
    """How many cells of a probe's numbers (any depth) have an interval counted over sources, per unit."""
    out: dict[str, int] = {}
    if isinstance(res, dict):
        for key, unit in res.items():  # ci_unit, and a cell's other intervals (cross_frame's tbsr_ci_unit)
            if str(key).endswith("ci_unit") and isinstance(unit, str) and unit != "item":
                out[unit] = out.get(unit, 0) + 1
        for v in res.values():
            for u, c in clustered_units(v).items():
                out[u] = out.get(u, 0) + c
    elif isinstance(res, list):
        for v in res:
            for u, c in clustered_units(v).items():
                out[u] = out.get(u, 0) + c
    return out


def sources_note(res: dict[str, Any]) -> list[str]:
    """The note naming what a probe's intervals count where they count sources (none when every interval is over
    items): items made from one source answer alike, so n of them are not n independent trials."""
    units = clustered_units(res)
    if not units:
        return []
    what = ", ".join(f"(N {u}s)" for u in sorted(units))
    return [
        f"95% intervals marked {what} are counted over the items' sources, not the items: a cell's items made "
        f"from one source answer alike, so its interval is Wilson's at the sources' effective size (design effect "
        f"with N - 1 degrees of freedom, Korn & Graubard 1998; Wilson's over the items where the sources vary no "
        f"more than independent items would, and for a single source, whose interval speaks for that source "
        f"only); unmarked intervals are Wilson's over independent items ({sum(units.values())} cells counted over "
        f"sources; docs/stress.md, 'Intervals')"
    ]


def accuracy_text(cell: dict[str, Any]) -> str:
    """ "41.7 (5/12)"; "-" for an empty cell."""
    if not cell["n_planned"]:
        return "-"
    return f"{pct(cell['accuracy'])} ({cell['n_correct']}/{cell['n_planned']})"


def with_interval(cell: dict[str, Any]) -> list[str]:
    """Two table columns: the cell's accuracy (``accuracy_text``) and its 95% Wilson interval."""
    return [accuracy_text(cell), interval_text(cell)]


@dataclass(frozen=True)
class HumanCeiling:
    """An imported human study's accuracy on one probe's samples, per condition and pooled over the probe's
    conditions: what the human-ceiling column of every probe table shows. A probe's ``aggregate`` builds it from
    the human study's records it is given (``AggregateInput.human``) and passes it to its report."""

    #: condition -> accuracy cell of the human answers, and None -> pooled over the probe's conditions
    cells: Mapping[str | None, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, probe: str, records: Iterable[ScoreRecord]) -> HumanCeiling:
        """The cells of the human records (model_role "human") of ``probe``."""
        rs = [r for r in records if r.model_role == "human" and str(r.params.get("probe")) == probe]
        cells: dict[str | None, dict[str, Any]] = {
            k: accuracy_cell(v) for k, v in group_records(rs, lambda r: r.condition).items()
        }
        if rs:
            cells[None] = accuracy_cell(rs)
        return cls(cells)

    def text(self, condition: str | None = None) -> str:
        """The human-ceiling cell of a table row: the human accuracy under this condition, else the pooled one (a
        model's condition such as frames@4 is not one a person saw), else "not measured"."""
        cell = self.cells.get(condition) or self.cells.get(None)
        return accuracy_text(cell) if cell else NOT_MEASURED

    def note(self) -> str:
        """The headline note's words on the human ceiling: the imported study's pooled accuracy, or "not measured"."""
        text = self.text()
        return "human ceiling not measured" if text == NOT_MEASURED else f"human ceiling {text} (imported study)"


#: the columns every probe's main table ends with (see the module docstring); ``reference_cells`` fills them
REFERENCE_COLUMNS = ("chance", "paper reported", "human ceiling")


def reference_cells(chance: float | None, paper: str, ceiling: HumanCeiling, condition: str | None) -> list[str]:
    """A row's ``REFERENCE_COLUMNS``: ``chance`` in percent, the paper's value as the probe words it (``paper``),
    and the human ceiling under ``condition``; one place, so no probe table words them its own way."""
    return [pct(chance), paper, ceiling.text(condition)]


#: in ``ProbeReport.says``: where the headline note gives the human ceiling (``HumanCeiling.note``)
CEILING_NOTE = "<human ceiling>"


@dataclass(frozen=True)
class ProbeReport:
    """One probe's part of the stress report, declared: what differs between probes (name, numbers, title,
    lede, tables, headline words), and in ``__call__`` the one way every probe makes its part from them.

    Why: every probe's report did the same steps by hand: the imported study's ``HumanCeiling``, the probe's
    numbers (``aggregate``), a headline note counting its cells, then one section ``stress-<probe>`` only when
    there are cells (its tables and figures built only then). A probe binds its instance as ``aggregate``."""

    probe: str
    #: the probe's numbers from its records: ``{"cells": {...}, ...}``, stored under ``results[probe]``
    aggregate: Callable[[Sequence[ScoreRecord]], dict[str, Any]]
    title: str
    lede: str
    #: the section's tables from the numbers and the human ceiling
    tables: Callable[[dict[str, Any], HumanCeiling], list[Table]]
    #: what one cell is ("5 model x condition cells"), or a function wording the headline's count itself
    count: str | Callable[[dict[str, Any]], str] = "model x condition"
    #: the headline's clauses after the count, ``CEILING_NOTE`` standing for the human ceiling's note
    says: tuple[str, ...] = (CEILING_NOTE,)
    figures: Callable[[dict[str, Any]], list[Figure]] | None = None
    #: notes after the headline (warnings the numbers or the records raise)
    more_notes: Callable[[Sequence[ScoreRecord], dict[str, Any]], list[str]] | None = None

    def headline(self, res: dict[str, Any], ceiling: HumanCeiling) -> str:
        count = self.count(res) if callable(self.count) else f"{len(res['cells'])} {self.count} cells"
        clauses = [ceiling.note() if s == CEILING_NOTE else s for s in self.says]
        return "; ".join([f"{self.probe}: {count}", *clauses])

    def __call__(self, inputs: AggregateInput) -> SuiteReport:
        ceiling = HumanCeiling.of(self.probe, inputs.human)
        res = self.aggregate(inputs.records)
        if None in ceiling.cells:  # an imported study: its pooled accuracy, where report.json's readers look for it
            res["human_ceiling"] = ceiling.cells[None]
        notes = [self.headline(res, ceiling)]
        if self.more_notes is not None:
            notes += self.more_notes(inputs.records, res)
        notes += sources_note(res)
        sections = []
        if res["cells"]:
            sections.append(
                Section(
                    id="stress-" + self.probe.replace("_", "-"),
                    title=self.title,
                    lede=self.lede,
                    figures=self.figures(res) if self.figures else [],
                    tables=self.tables(res, ceiling),
                )
            )
        return SuiteReport(results={self.probe: res}, sections=sections, notes=notes)


#: regexes on a lower-cased model label -> the Reveal paper's name of that model (its tables' rows)
PAPER_MATCH: tuple[tuple[str, str], ...] = (
    (r"gemini-2\.5-pro", "Gemini 2.5 Pro"),
    (r"gemini-2\.5-flash", "Gemini 2.5 Flash"),
    (r"gpt-5-nano", "GPT-5-nano"),
    (r"qwen3.*235b", "Qwen3-VL-235B"),
    (r"qwen2\.5.*72b", "Qwen2.5-VL-72B"),
    (r"qwen2\.5.*32b", "Qwen2.5-VL-32B"),
    (r"qwen2\.5.*\b7b", "Qwen2.5-VL-7B"),
    (r"llava", "LLaVA"),
)


#: Qwen2-VL base / instruct checkpoints (sycophancy's Table 4, expectation's unlabelled §5.5 scores); instruct first
QWEN2_MATCH: tuple[tuple[str, str], ...] = (
    (r"qwen2-vl-7b-instruct", "Qwen2-VL-7B Instruct"),
    (r"qwen2-vl-7b", "Qwen2-VL-7B Base"),
    (r"qwen2-vl-2b-instruct", "Qwen2-VL-2B Instruct"),
    (r"qwen2-vl-2b", "Qwen2-VL-2B Base"),
)


def paper_name(model_label: str, table: Sequence[tuple[str, str]] = PAPER_MATCH) -> str | None:
    """The paper's name for a model label (``table``'s first regex matching the lower-cased label), or None."""
    low = model_label.lower()
    for pat, name in table:
        if re.search(pat, low):
            return name
    return None


def paper_text(value: float | None, name: str | None = None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" + (f" ({name})" if name else "")


# --------------------------------------------------------------------------- multiple choice

LETTERS = tuple("ABCDEFGH")


def place_at(correct: Any, others: Sequence[Any], slot: int, rng: Any | None = None) -> list[Any]:
    """``others`` (in an order drawn by ``rng``, or as given without one) with ``correct`` inserted at ``slot``.

    Why: a drawn position leaves a small preset with every answer at one letter, so a constant answerer
    scores 100% there. Generators pass a slot from a plan balanced inside every cell their report scores
    (docs/stress.md, "Balanced answers": a cycle over the items, or ``cyclic_offsets``)."""
    rest = list(others)
    if rng is not None:
        rest = [rest[int(i)] for i in rng.permutation(len(rest))]
    if not 0 <= slot <= len(rest):
        raise ValueError(f"slot {slot} is outside 0..{len(rest)}")
    return rest[:slot] + [correct] + rest[slot:]


def cyclic_offsets(
    n_rows: int, columns: Sequence[Hashable], cells: Iterable[Iterable[Hashable]], k: int, budget: int = 200_000
) -> dict[Hashable, int]:
    """Offsets that balance a key plan over rows x columns inside every reported cell.

    A probe whose items are rows (sources) x columns (condition, question, ...), every row having every column,
    puts row ``r``'s item of column ``c`` at slot ``(r + offsets[c]) mod k``. Each column then holds every slot
    ``n_rows div k`` times, plus once more for the ``b = n_rows mod k`` slots from ``offsets[c]`` on. A cell (a
    set of columns, over all rows: what a report table scores separately) of m items is balanced, no slot the
    key of more than ``ceil(m / k)`` of them, when those extra runs cover no slot more than ``ceil(|cell| b / k)``
    times. The offsets are searched column by column (depth first, each column first trying the slot where the
    previous column's run ended, which chains runs into one contiguous cycle), pruning any slot that would put a
    cell over its bound. With ``b = 0`` every plan is balanced and the chain is all zeros. Raises RuntimeError
    when no plan is found within ``budget`` steps (callers' tests prove their shapes are planned)."""
    cols = list(columns)
    if len(set(cols)) != len(cols):
        raise ValueError("columns repeat")
    b = n_rows % k
    groups = [frozenset(c) for c in cells]
    of_col: dict[Hashable, list[int]] = {c: [] for c in cols}
    for gi, g in enumerate(groups):
        for c in g:
            if c not in of_col:
                raise ValueError(f"cell names an unknown column {c!r}")
            of_col[c].append(gi)
    limit = [-(-len(g) * b // k) for g in groups]
    cover = [[0] * k for _ in groups]
    offsets: list[int] = []
    steps = 0

    def fits(c: Hashable, o: int, add: int) -> bool:
        ok = True
        for gi in of_col[c]:
            for j in range(b):
                slot = (o + j) % k
                cover[gi][slot] += add
                ok = ok and cover[gi][slot] <= limit[gi]
        return ok

    def search(i: int) -> bool:
        nonlocal steps
        if i == len(cols):
            return True
        chain = (offsets[-1] + b) % k if offsets else 0
        for o in [chain] + [x for x in range(k) if x != chain]:
            steps += 1
            if steps > budget:
                raise RuntimeError(
                    f"no balanced key plan found for {n_rows} rows x {len(cols)} columns in "
                    f"{len(groups)} cells within {budget} steps"
                )
            if fits(cols[i], o, 1):
                offsets.append(o)
                if search(i + 1):
                    return True
                offsets.pop()
            fits(cols[i], o, -1)
        return False

    if not search(0):
        raise RuntimeError(f"no balanced key plan exists for {n_rows} rows x {len(cols)} columns in these cells")
    return dict(zip(cols, offsets, strict=True))


def options_block(options: Sequence[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))


def boxed_instruction() -> str:
    return "Answer with the letter of exactly one option inside \\boxed{}, for example \\boxed{A}."


def mcq_answer_text(letter: str, option: str) -> str:
    """The answer format of the built-in baselines: the option named, then its boxed letter."""
    return f"The answer is {option}: \\boxed{{{letter}}}"


# --------------------------------------------------------------------------- integration probes


def last_boxed(text: str | None) -> tuple[str, tuple[int, int]] | None:
    """The content and span of the last outermost ``\\boxed{...}`` of ``text`` (None without one)."""
    if not isinstance(text, str) or not text:
        return None
    spans = boxed_spans(text)
    if not spans:
        return None
    start, end, content = spans[-1]
    return content, (start, end)


def score_option(trial: ScoreInput, letters: Sequence[str], value_of: Mapping[str, str], metric: str) -> TrialScore:
    """Score a lettered answer with the strict option parser (never "the last letter anywhere"): correct when
    the letter's value (``value_of``) is the sample's answer; the value is kept as ``metrics[metric]``."""
    text = trial.text
    if trial.status != "ok" or text is None:
        return TrialScore(correct=None)
    parsed = parse_option(text, letters)
    predicted = value_of.get(parsed.value) if parsed.ok else None
    return TrialScore(
        correct=predicted == trial.sample.answer,
        parse=ParseResult(value=parsed.value, method=parsed.method, span=parsed.span),
        metrics={metric: predicted},
    )


def require_every_frame(sample: Any, condition: Any, probe: str) -> None:
    """Refuse (ConfigError) a condition that would not send every frame of ``sample``'s video exactly
    once, in order: the integration probes split their evidence over exactly those frames, so a sampler
    that drops, repeats or adds one changes the stimulus. ``condition`` None (no plan) is not checked."""
    if condition is None:
        return
    n = sample.video.n_frames
    try:
        sel = select_frames(sample, condition)
    except ConfigError as e:
        raise ConfigError(f"probe {probe}: {e}") from e
    if tuple(sel.indices) != tuple(range(n)):
        shown = list(sel.indices)
        raise ConfigError(
            f"probe {probe}: condition {condition.id} sends frames {shown[:8]}{'...' if len(shown) > 8 else ''} "
            f"of the {n}-frame video {sample.sample_id}, but this probe's evidence is split over exactly its "
            f"{n} frames, each sent once; use frames#4 (four images) or native@all (the video)"
        )


def frame_union(frames: Sequence[Any], width: int, height: int) -> Any:
    """The union of the frames an observer was sent: the pixelwise maximum, at ``width`` x ``height``.

    The integration probes mask with black, so wherever a frame shows the stimulus its pixel is the
    stimulus and elsewhere it is (near) zero: the maximum over frames is the stimulus wherever any frame
    showed it. Frames decoded at another size (an observer's half-size decode) are resized first."""
    if not frames:
        raise ValueError("no frames to unite")
    out = None
    for f in frames:
        img = f[2] if isinstance(f, tuple) else f
        if img.shape[1] != width or img.shape[0] != height:
            img = cv2.resize(img, (width, height), interpolation=cv2.INTER_LINEAR)
        out = img.copy() if out is None else np.maximum(out, img)
    return out
