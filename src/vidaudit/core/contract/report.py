"""The typed report: what ``report.json`` holds, validated on write, with a published JSON Schema.

A suite turns its records into ``results`` (every number, machine-readable) and ``sections`` (what a
reader sees: tables of preformatted strings, figures described as data, notes). The report stage
adds the provenance (suite, vidaudit version, git revision, creation time, the settings sent) and
renders the same sections to Markdown and HTML, so the three files cannot drift apart. Figures are
stored as data (a grid of values, a set of series), never as pictures: the HTML page draws them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from vidaudit.core.contract.records import ScoreRecord


REPORT_SCHEMA_VERSION: Final = 2


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Table(_Strict):
    """A titled table of preformatted strings; the first ``key_columns`` columns identify a row."""

    id: str
    title: str
    columns: list[str]
    rows: list[list[str]] = Field(default_factory=list)
    caption: str = ""
    key_columns: int = 0

    @model_validator(mode="after")
    def _check(self) -> Table:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.id!r} row {i} has {len(row)} cells for {len(self.columns)} columns")
        if not 0 <= self.key_columns <= len(self.columns):
            raise ValueError(f"table {self.id!r}: key_columns {self.key_columns} out of range")
        return self


class GridFigure(_Strict):
    """A heatmap: ``values[r][c]`` for row label ``rows[r]`` (drawn bottom to top) and column ``cols[c]``.

    ``annotations`` is an optional second line per cell (e.g. ``"8/10"``); ``outlined`` marks cells to
    frame (e.g. inside an operating boundary). ``None`` values are cells with no data (drawn grey).
    """

    kind: Literal["grid"] = "grid"
    id: str
    title: str
    caption: str = ""
    group: list[str] = Field(default_factory=list)  # e.g. [model, condition]: headings the page groups by
    row_label: str
    col_label: str
    rows: list[str]
    cols: list[str]
    values: list[list[float | None]]
    annotations: list[list[str]] | None = None
    outlined: list[list[bool]] | None = None
    vmin: float = 0.0
    vmax: float = 1.0
    value_label: str = "accuracy"

    @model_validator(mode="after")
    def _check(self) -> GridFigure:
        shape = (len(self.rows), len(self.cols))
        for name in ("values", "annotations", "outlined"):
            grid = getattr(self, name)
            if grid is None:
                continue
            if len(grid) != shape[0] or any(len(r) != shape[1] for r in grid):
                raise ValueError(f"figure {self.id!r}: {name} is not {shape[0]} x {shape[1]}")
        if not self.vmin < self.vmax:
            raise ValueError(f"figure {self.id!r}: vmin must be below vmax")
        return self


class Series(_Strict):
    """One line of a ``LineFigure``: ``y[i]`` at ``x[i]`` of the figure, with an optional interval."""

    name: str
    y: list[float | None]
    low: list[float | None] | None = None
    high: list[float | None] | None = None


class LineFigure(_Strict):
    """Lines over a shared x axis (e.g. accuracy against N, averaged over F)."""

    kind: Literal["line"] = "line"
    id: str
    title: str
    caption: str = ""
    group: list[str] = Field(default_factory=list)
    x_label: str
    y_label: str
    x: list[float]
    series: list[Series]
    y_min: float | None = 0.0
    y_max: float | None = 1.0

    @model_validator(mode="after")
    def _check(self) -> LineFigure:
        for s in self.series:
            for name in ("y", "low", "high"):
                vals = getattr(s, name)
                if vals is not None and len(vals) != len(self.x):
                    raise ValueError(
                        f"figure {self.id!r}: series {s.name!r} {name} has {len(vals)} points "
                        f"for {len(self.x)} x values"
                    )
        return self


Figure = Annotated[GridFigure | LineFigure, Field(discriminator="kind")]


class Section(_Strict):
    """One part of the report, in reading order: a heading, a lede, figures, tables and notes."""

    id: str
    title: str
    lede: str = ""
    figures: list[Figure] = Field(default_factory=list)
    tables: list[Table] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class SuiteReport(_Strict):
    """What a suite's aggregation returns: its numbers, its sections and its headline notes.

    ``headline``: the table the report opens with, one row per model with the suite's main figure and
    its interval (``report.headline.headline_table``); None: the report stage makes the generic one
    (accuracy over every planned trial)."""

    results: dict[str, Any] = Field(default_factory=dict)
    sections: list[Section] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    headline: Table | None = None


class Report(_Strict):
    """The content of ``report.json``."""

    schema_version: Literal[2] = REPORT_SCHEMA_VERSION
    suite: str
    vidaudit_version: str
    git_revision: str | None = None
    git_dirty: bool | None = None
    created_at: str
    source: dict[str, str] = Field(default_factory=dict)  # e.g. {"run_dir": ...} or {"responses": ...}
    models: list[str] = Field(default_factory=list)
    conditions: list[str] = Field(default_factory=list)
    #: what was sent to each model: generation settings and request-changing adapter options
    settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    n_records: int = 0
    #: one row per model: the suite's main figure with its interval, references last (None: no records)
    headline: Table | None = None
    notes: list[str] = Field(default_factory=list)
    sections: list[Section] = Field(default_factory=list)
    results: dict[str, Any] = Field(default_factory=dict)


# --------------------------------------------------------------------------- the trace viewer


class ViewerColumn(_Strict):
    """A column of the viewer's trial list: ``key`` into ``ViewerTrial.columns``."""

    key: str
    label: str
    numeric: bool = False


class TimelineEvent(_Strict):
    t: float | None
    label: str | None = None


class EventTimeline(_Strict):
    """True and reported events on one time axis, with the matching between them (indices)."""

    duration_s: float | None
    true_events: list[TimelineEvent] = Field(default_factory=list)
    reported_events: list[TimelineEvent] = Field(default_factory=list)
    matches: list[tuple[int, int]] = Field(default_factory=list)
    window_s: float | None = None


class ViewerFrame(_Strict):
    index: int | None
    t: float | None
    jpeg_b64: str


class ViewerTrial(_Strict):
    """One trial as the viewer shows it; every string is untrusted text shown through textContent."""

    trial_id: str
    sample_id: str
    model: str
    condition: str
    group: str = ""  # the suite's grouping key (counting: the domain)
    status: str
    correct: bool | None = None
    columns: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    facts: list[tuple[str, str]] = Field(default_factory=list)
    timeline: EventTimeline | None = None
    frames: list[ViewerFrame] = Field(default_factory=list)
    raw_text: str = ""
    #: where the trial sits on the suite's design (e.g. [N, F]): the viewer's selection spreads over it
    grid_point: list[str | int | float | None] = Field(default_factory=list)
    #: among correct trials, show these first (counting: correct count with an unfaithful trace)
    preferred: bool = False

    @classmethod
    def of(cls, record: ScoreRecord, raw_text: str | None, **fields: Any) -> ViewerTrial:
        """The row of ``record``'s trial: what it shares with the record (``_VIEWER_RECORD_FIELDS``: ids, model,
        condition, status, correctness), the answer's ``raw_text``, and the suite's own ``fields`` (group, columns,
        facts, ...), so a suite's ``viewer_trial`` names only what it adds."""
        return cls(**{k: getattr(record, k) for k in _VIEWER_RECORD_FIELDS}, raw_text=raw_text or "", **fields)


#: the fields a viewer row takes from its trial's ``ScoreRecord``, under the same names (``ViewerTrial.of``)
_VIEWER_RECORD_FIELDS = ("trial_id", "sample_id", "model", "condition", "status", "correct")


class ViewerSpec(_Strict):
    """How a suite's trials are listed: the group filter's label and the list's columns."""

    group_label: str = "group"
    columns: list[ViewerColumn] = Field(default_factory=list)
