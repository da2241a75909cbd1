"""RepCount-style loader: real tiny videos written with PyAV, real CSV files, real manifests."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import DataError
from vidaudit.core.hashing import sha256_file
from vidaudit.core.manifest import load_samples, read_dataset_info, video_path
from vidaudit.suites.counting.aggregate import COUNT_BINS, aggregate, count_bin, count_bins
from vidaudit.suites.counting.repcount import (
    DEFAULT_QUESTION,
    REAL_WORLD_TEMPLATES,
    RepcountRow,
    load_repcount,
    mean_rate_hz,
    parse_repcount_csv,
    parse_repcount_text,
    sample_id,
    scan_repcount,
    write_repcount_dataset,
)
from vidaudit.suites.counting.running_count import replay
from vidaudit.suites.counting.scoring import score_trial
from vidaudit.video.decode import read_frames
from vidaudit.video.encode import write_video
from vidaudit.video.probe import probe

FPS, SIZE, SQUARE, LEAD, TAIL = 10, 64, 12, 3, 2
LEFT, RIGHT = 4, SIZE - 4 - SQUARE


def square_x(phase: float) -> int:
    """Left edge of the square: LEFT at phase 0, RIGHT at phase 0.5, back at phase 1 (a triangle wave)."""
    return round(LEFT + (RIGHT - LEFT) * (1 - abs(1 - 2 * phase)))


def make_video(path: Path, n_reps: int, period: int = 6) -> list[tuple[int, int]]:
    """A square moving right and back ``n_reps`` times; returns each repetition's (start, end) frame."""
    xs = [LEFT] * LEAD
    for _ in range(n_reps):
        xs += [square_x(i / period) for i in range(period)]
    xs += [LEFT] * TAIL

    def frames():
        for x in xs:
            f = np.zeros((SIZE, SIZE, 3), np.uint8)
            f[26 : 26 + SQUARE, x : x + SQUARE] = (255, 200, 0)
            yield f

    write_video(path, frames(), FPS, SIZE, SIZE)
    return [(LEAD + k * period, LEAD + (k + 1) * period) for k in range(n_reps)]


HEADER_COLUMNS = 40  # L1..L40: room for 20 pairs


def csv_line(
    action: str, name: str, count: object, values: list[object], index: int | None = None, width: int = HEADER_COLUMNS
) -> str:
    cells = [str(v) for v in values] + [""] * (width - len(values))
    lead = [str(index), str(index)] if index is not None else []
    return ",".join(lead + [action, name, str(count)] + cells)


def header(width: int = HEADER_COLUMNS, leading_index: bool = False) -> str:
    lead = ["", "Unnamed: 0"] if leading_index else []
    return ",".join(lead + ["type", "name", "count"] + [f"L{i}" for i in range(1, width + 1)])


def flat(segments: list[tuple[int, int]], pandas_floats: bool = False) -> list[object]:
    """L values as RepCount writes them: the first pair as ints, later ones as pandas floats."""
    out: list[object] = []
    for k, (s, e) in enumerate(segments):
        out += [f"{s}.0", f"{e}.0"] if pandas_floats and k else [s, e]
    return out


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[tuple[int, int]]]]:
    root = tmp_path_factory.mktemp("repcount")
    vdir = root / "videos"
    vdir.mkdir()
    segs = {
        "squat_1.mp4": make_video(vdir / "squat_1.mp4", 1),
        "situp_3.mp4": make_video(vdir / "situp_3.mp4", 3, period=8),
        "jump_5.mp4": make_video(vdir / "jump_5.mp4", 5, period=4),
    }
    return vdir, segs


def write_csv(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def good_csv(path: Path, segs: dict[str, list[tuple[int, int]]]) -> Path:
    rows = [
        csv_line("squat", "squat_1.mp4", 1, flat(segs["squat_1.mp4"]), index=0),
        csv_line("situp", "situp_3.mp4", "3.0", flat(segs["situp_3.mp4"], pandas_floats=True), index=1),
        csv_line("jump_jack", "jump_5.mp4", 5, flat(segs["jump_5.mp4"], pandas_floats=True), index=2),
    ]
    return write_csv(path, [header(leading_index=True), *rows])


# --------------------------------------------------------------------------- loading


def test_square_is_at_its_turning_point_at_every_annotated_start(videos) -> None:
    """The test videos themselves: the square is leftmost at each start and rightmost mid-repetition."""
    vdir, segs = videos
    for name, pairs in segs.items():
        starts = [s for s, _ in pairs]
        mids = [(s + e) // 2 for s, e in pairs]
        frames = read_frames(vdir / name, starts + mids)
        xs = [int(np.argmax(f[32, :, 0] > 128)) for f in frames]
        assert xs[: len(starts)] == [LEFT] * len(starts)
        assert xs[len(starts) :] == [RIGHT] * len(mids)


def test_load_builds_samples_traces_and_video_fields(tmp_path: Path, videos) -> None:
    vdir, segs = videos
    samples = load_repcount(good_csv(tmp_path / "test.csv", segs), vdir, split_name="test")
    assert [s.sample_id for s in samples] == ["repcount-test-squat_1", "repcount-test-situp_3", "repcount-test-jump_5"]
    by_name = {s.params["video_name"]: s for s in samples}
    for name, pairs in segs.items():
        s = by_name[name]
        info = probe(vdir / name)
        assert s.suite == "counting" and s.question == DEFAULT_QUESTION
        assert s.answer == len(pairs) == s.params["n_events"] == replay(s.trace)
        assert s.params["frequency_hz"] is None and s.params["source"] == "repcount"
        assert s.params["split"] == "test"
        assert s.params["segments"] == [list(p) for p in pairs]
        assert [e.frame for e in s.trace.events] == [p[0] for p in pairs]
        assert [e.t for e in s.trace.events] == pytest.approx([p[0] / FPS for p in pairs])
        assert [e.count for e in s.trace.events] == list(range(1, len(pairs) + 1))
        assert {e.type for e in s.trace.events} == {"repetition"}
        n_frames = LEAD + TAIL + pairs[-1][1] - pairs[0][0]
        assert (s.video.n_frames, s.video.fps, s.video.width, s.video.height) == (n_frames, FPS, SIZE, SIZE)
        assert s.video.n_frames == info.n_frames and s.video.duration_s == pytest.approx(n_frames / FPS)
        assert s.video.sha256 == sha256_file(vdir / name)
        assert Path(s.video.path) == (vdir / name).resolve()  # absolute without relative_to
    assert by_name["squat_1.mp4"].params["domain"] == "real:squat"
    assert by_name["jump_5.mp4"].params["domain"] == "real:jump_jack"
    assert by_name["squat_1.mp4"].params["rate_hz"] is None  # one repetition has no rate
    assert by_name["situp_3.mp4"].params["rate_hz"] == pytest.approx(FPS / 8)
    assert by_name["jump_5.mp4"].params["rate_hz"] == pytest.approx(FPS / 4)


def test_default_question_and_real_world_templates_are_the_papers_c7_text() -> None:
    assert DEFAULT_QUESTION == "How many times does the person perform the repetitive exercise in this video?"
    _, zero = REAL_WORLD_TEMPLATES["real_zero_shot"]
    assert zero.format(question=DEFAULT_QUESTION) == (
        "How many times does the person perform the repetitive exercise in this video? "
        "Show your reasoning and put the final answer in \\boxed{}."
    )
    _, cot = REAL_WORLD_TEMPLATES["real_cot"]
    assert cot.format(question=DEFAULT_QUESTION).endswith(
        "noting approximately when each one occurs. Finally, provide your total count. "
        "Put the final answer in \\boxed{}."
    )
    assert REAL_WORLD_TEMPLATES["real_direct"][1].format(question="ignored") == (
        "Count the number of exercise repetitions in this video. Reply with only a number."
    )


def test_write_dataset_manifest_round_trips_and_paths_resolve_after_a_move(tmp_path: Path, videos) -> None:
    vdir, segs = videos
    data = tmp_path / "data"
    shutil.copytree(vdir, data / "videos")
    csv_path = good_csv(data / "test.csv", segs)
    res = write_repcount_dataset(csv_path, data / "videos", data / "out", split_name="test")
    loaded = load_samples(data / "out")
    assert loaded == res.samples and len(loaded) == 3
    info = read_dataset_info(data / "out")
    assert info["suite"] == "counting" and info["source"] == "repcount" and info["real_video"] is True
    assert info["n_samples"] == 3 and info["count_range"] == [1, 5] and info["skipped"] == []
    assert info["annotations"]["sha256"] == sha256_file(csv_path)
    assert info["domains"] == ["real:jump_jack", "real:situp", "real:squat"]
    for s in loaded:
        assert not Path(s.video.path).is_absolute() and s.video.path.startswith("../videos/")
        assert sha256_file(video_path(data / "out", s)) == s.video.sha256
    moved = tmp_path / "elsewhere"
    shutil.move(str(data), str(moved))
    for s in load_samples(moved / "out"):
        assert sha256_file(video_path(moved / "out", s)) == s.video.sha256


# --------------------------------------------------------------------------- bad input


BAD_ROWS = [
    (
        "count_mismatch",
        lambda segs: csv_line("squat", "situp_3.mp4", 2, flat(segs["situp_3.mp4"])),
        "count is 2 but 3 start/end pairs",
    ),
    ("odd_l_values", lambda segs: csv_line("squat", "situp_3.mp4", 3, flat(segs["situp_3.mp4"])[:-1]), "odd number"),
    (
        "non_increasing_starts",
        lambda segs: csv_line("squat", "situp_3.mp4", 3, [3, 11, 3, 19, 19, 27]),
        "starts must strictly increase",
    ),
    (
        "end_before_start",
        lambda segs: csv_line("squat", "situp_3.mp4", 3, [3, 11, 11, 9, 19, 27]),
        "ends at frame 9 before it starts",
    ),
    (
        "frame_beyond_video",
        lambda segs: csv_line("squat", "squat_1.mp4", 1, [3, 11]),
        "ends at frame 11 but squat_1.mp4 has 11 frames",
    ),
    ("missing_video", lambda segs: csv_line("squat", "nowhere.mp4", 1, [0, 4]), "not found"),
    (
        "non_integer_count",
        lambda segs: csv_line("squat", "squat_1.mp4", "one", [3, 9]),
        "count is 'one', not an integer",
    ),
    ("fractional_frame", lambda segs: csv_line("squat", "squat_1.mp4", 1, [3, "9.5"]), "L2 is '9.5', not an integer"),
    ("negative_frame", lambda segs: csv_line("squat", "squat_1.mp4", 1, [-3, 9]), "negative"),
    ("gap_in_pairs", lambda segs: csv_line("squat", "squat_1.mp4", 1, [3, "", 9]), "L2 is empty but L3"),
    ("empty_count", lambda segs: csv_line("squat", "squat_1.mp4", "", [3, 9]), "count is '', not an integer"),
    ("path_escape", lambda segs: csv_line("squat", "../videos/squat_1.mp4", 1, [3, 9]), "climbs out"),
    ("duplicate_video", None, "already annotated on line 2"),
]


@pytest.mark.parametrize(("case", "make_row", "needle"), BAD_ROWS, ids=[c[0] for c in BAD_ROWS])
def test_each_bad_row_raises_a_data_error_naming_its_line(tmp_path: Path, videos, case, make_row, needle) -> None:
    vdir, segs = videos
    good = csv_line("jump_jack", "jump_5.mp4", 5, flat(segs["jump_5.mp4"]))
    bad = good if make_row is None else make_row(segs)
    csv_path = write_csv(tmp_path / "bad.csv", [header(), good, bad])
    with pytest.raises(DataError) as err:
        load_repcount(csv_path, vdir)
    assert f"{csv_path}:3" in str(err.value)
    assert needle in str(err.value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "the CSV is empty"),
        ("video,count,L1,L2\na.mp4,1,0,3\n", "no action type column"),
        ("type,name,count,L1,L3\nsquat,a.mp4,1,0,3\n", "not L2"),
        ('type,name,count,L1,L2\nsquat,"a.mp4,1,0,3\n', "not valid CSV"),
        ("type,name,count,L1,L2\nsquat,a.mp4,1,0,3,7\n", "header only 5 columns"),
    ],
)
def test_malformed_files_raise_data_errors(text: str, needle: str) -> None:
    with pytest.raises(DataError, match=needle):
        parse_repcount_text(text)


def test_missing_csv_or_folder_and_non_utf8_raise_data_errors(tmp_path: Path, videos) -> None:
    _, segs = videos
    with pytest.raises(DataError, match="annotation CSV not found"):
        parse_repcount_csv(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="video folder not found"):
        load_repcount(good_csv(tmp_path / "a.csv", segs), tmp_path / "no_videos")
    (tmp_path / "latin1.csv").write_bytes("type,name,count\nsquat,caf\xe9.mp4,0\n".encode("latin-1"))
    with pytest.raises(DataError, match="not UTF-8"):
        parse_repcount_csv(tmp_path / "latin1.csv")


def test_skip_invalid_keeps_good_rows_and_records_every_skipped_one(tmp_path: Path, videos) -> None:
    vdir, segs = videos
    lines = [
        header(),
        csv_line("squat", "squat_1.mp4", 1, flat(segs["squat_1.mp4"])),
        csv_line("situp", "situp_3.mp4", 2, flat(segs["situp_3.mp4"])),  # count mismatch
        csv_line("situp", "gone.mp4", 1, [0, 4]),  # missing video
        csv_line("jump_jack", "jump_5.mp4", 5, flat(segs["jump_5.mp4"])),
    ]
    csv_path = write_csv(tmp_path / "mixed.csv", lines)
    with pytest.raises(DataError, match=":3: count is 2"):
        scan_repcount(csv_path, vdir)
    scan = scan_repcount(csv_path, vdir, skip_invalid=True)
    assert [s.params["video_name"] for s in scan.samples] == ["squat_1.mp4", "jump_5.mp4"]
    assert [(p.line, p.name) for p in scan.skipped] == [(3, "situp_3.mp4"), (4, "gone.mp4")]
    res = write_repcount_dataset(csv_path, vdir, tmp_path / "out", skip_invalid=True)
    skipped = json.loads((tmp_path / "out" / "dataset.json").read_text())["skipped"]
    assert [s["line"] for s in skipped] == [3, 4] and "not found" in skipped[1]["reason"]
    assert len(res.samples) == 2


# --------------------------------------------------------------------------- scoring and count bins


BIN_COUNTS = (1, 2, 3, 4, 6, 8, 9, 12, 17, 25, 33)


def test_count_bins_group_scored_real_samples_into_the_papers_bins(tmp_path: Path) -> None:
    vdir = tmp_path / "videos"
    vdir.mkdir()
    rows = [header(width=2 * max(BIN_COUNTS))]
    for n in BIN_COUNTS:
        pairs = make_video(vdir / f"clip{n}.mp4", n, period=4)
        rows.append(csv_line("squat", f"clip{n}.mp4", n, flat(pairs, pandas_floats=True), width=2 * max(BIN_COUNTS)))
    samples = load_repcount(write_csv(tmp_path / "bins.csv", rows), vdir)
    records = []
    for s in samples:
        n = s.answer
        for cond, text in (
            ("real_direct", str(n) if n <= 4 else str(n + 1)),
            ("real_zero_shot", f"I count them. \\boxed{{{n}}}"),
        ):
            r = score_trial(s, text).to_dict()
            assert r["trace_available"] is False and r["delta_s"] is None  # EM only: no frequency
            r.update(
                model="m",
                condition=cond,
                domain=s.params["domain"],
                n_events=s.params["n_events"],
                frequency_hz=s.params["frequency_hz"],
                status="ok",
            )
            records.append(r)
    bins = count_bins(records)
    expected = {label for label, _, _ in COUNT_BINS}
    assert set(bins["m"]["real_direct"]) == expected
    for label, lo, hi in COUNT_BINS:
        members = [n for n in BIN_COUNTS if lo <= n <= hi]
        assert bins["m"]["real_zero_shot"][label]["n"] == len(members)
        assert bins["m"]["real_zero_shot"][label]["accuracy"] == 1.0
        assert bins["m"]["real_direct"][label]["correct"] == sum(n <= 4 for n in members)
    assert count_bin(33) == ">30" and count_bin(0) is None
    report = aggregate(records)  # the whole counting aggregate copes with frequency_hz None
    assert report["count_bins"] == bins
    assert all(c["frequency_hz"] is None for c in report["cells"])
    assert report["count_boundary"] == {}


# --------------------------------------------------------------------------- property tests


_ACTIONS = st.sampled_from(["squat", "situp", "bench_pressing", "jump_jack", "others"])


@st.composite
def valid_rows(draw) -> list[RepcountRow]:
    n_rows = draw(st.integers(0, 6))
    names = draw(st.lists(st.text("abcxyz019_", min_size=1, max_size=8), min_size=n_rows, max_size=n_rows, unique=True))
    rows = []
    for i, name in enumerate(names):
        n = draw(st.integers(0, 8))
        starts = sorted(draw(st.sets(st.integers(0, 5000), min_size=n, max_size=n)))
        segs = tuple((s, s + draw(st.integers(0, 300))) for s in starts)
        rows.append(RepcountRow(line=i + 2, action=draw(_ACTIONS), name=f"{name}.mp4", count=n, segments=segs))
    return rows


@given(rows=valid_rows(), floats=st.booleans(), extra=st.integers(0, 4), leading_index=st.booleans())
@settings(max_examples=60, deadline=None)
def test_valid_rows_round_trip_through_the_csv_text(rows, floats, extra, leading_index) -> None:
    width = 16 + extra
    lines = [header(width, leading_index)]
    for i, r in enumerate(rows):
        lines.append(
            csv_line(
                r.action,
                r.name,
                r.count,
                flat(list(r.segments), pandas_floats=floats),
                index=i if leading_index else None,
                width=width,
            )
        )
    assert parse_repcount_text("\n".join(lines) + "\n") == rows


_CELL = st.one_of(
    st.integers(-5, 10_000).map(str),
    st.sampled_from(["", " ", "1.5", "3.0", "nan", "x", "1e3", '"', "a,b", "\u0663", "-0"]),
    st.text(max_size=6),
)


@given(cells=st.lists(st.lists(_CELL, max_size=12), max_size=5), with_header=st.booleans())
@settings(max_examples=200, deadline=None)
def test_garbage_rows_raise_only_data_errors(cells, with_header) -> None:
    lines = ([header(8)] if with_header else []) + [",".join(c) for c in cells]
    try:
        rows = parse_repcount_text("\n".join(lines))
    except DataError:
        return
    for r in rows:  # whatever parses is valid by construction
        assert r.count == len(r.segments) and list(r.starts) == sorted(set(r.starts))


@given(text=st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_arbitrary_text_raises_only_data_errors(text) -> None:
    try:
        parse_repcount_text(text)
    except DataError:
        pass


@given(data=st.binary(max_size=200))
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_arbitrary_bytes_in_a_file_raise_only_data_errors(data) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.csv"
        p.write_bytes(data)
        try:
            parse_repcount_csv(p)
        except DataError:
            pass


@given(
    starts=st.lists(st.integers(0, 10_000), min_size=2, max_size=20, unique=True).map(sorted),
    fps=st.sampled_from([10.0, 25.0, 29.97, 30.0]),
)
def test_mean_rate_is_events_per_second_between_first_and_last_start(starts, fps) -> None:
    rate = mean_rate_hz(starts, fps)
    assert rate == pytest.approx((len(starts) - 1) / ((starts[-1] - starts[0]) / fps), rel=1e-5)


def test_sample_ids_are_stable_and_file_name_safe() -> None:
    assert sample_id("stu1_55.mp4", "test") == "repcount-test-stu1_55"
    assert sample_id("sub dir/a b.mp4") == "repcount-sub_dir_a_b"
