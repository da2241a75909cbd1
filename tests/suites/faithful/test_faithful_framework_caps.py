"""Hostile extraction answers under ``object-centric:`` (``framework.schema.AnswerCaps``): a real ``vidaudit run
faithful`` against a local HTTP server speaking the OpenAI API, whose extract stage answers one video's first
chunk with JSON nested 100,000 deep, more objects than ``max_objects`` or more records than ``max_records``.
That video's trials error as ``too_large``; the other video's finish ok; the run is not stopped, and a resume
(with ``--retry-errors``) reads the stored answer again and errors the same way, never a crash."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from httpfake import FakeServer, Recorded, Reply
from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ErrorKind, ModelSpec, Status
from vidaudit.run.store.reader import StoreReader
from vidaudit.suites.faithful.framework.schema import AnswerCaps, AnswerTooLarge, parse_chunk
from vidaudit.suites.faithful.framework.spec import parse_spec
from vidaudit.suites.faithful.framework.summarise import parse_trajectories

CHAT = "/v1/chat/completions"
SMALL = "chunk_s=6,chunk_frames=3,answer_frames=1,retrieval=all"  # a 12 s video: 2 chunks, no retrieve call


def completion(text: str) -> dict:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "bb",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }


def _obj(k: int, t0: float, states: int = 1) -> dict:
    return {
        "id": f"o{k}",
        "category": "agent",
        "attributes": {"colour": "red", "shape": "circle"},
        "first_seen": t0,
        "last_seen": t0 + 1,
        "position": {"first": [0.2, 0.5], "last": [0.3, 0.5]},
        "states": [{"t": t0 + s / (states + 1), "kind": "action", "predicate": "enters"} for s in range(states)],
    }


def deep(_t0: float) -> str:
    return '{"objects": ' + "[" * 100_000 + "]" * 100_000 + "}"


def many_objects(t0: float) -> str:
    return json.dumps({"objects": [_obj(k, t0) for k in range(65)]})  # valid, one over the default 64


def many_states(t0: float) -> str:
    return json.dumps({"objects": [_obj(0, t0, states=1024)]})  # 1 object + 1,024 states: over 1,024 records


class Backbone:
    """Answers every stage; the extract request of the first video's first chunk (identified by its frames)
    gets ``hostile(t0)``, every other extract request one valid object."""

    def __init__(self, hostile) -> None:  # type: ignore[no-untyped-def]
        self.hostile = hostile
        self.target: str | None = None
        self.lock = threading.Lock()

    def __call__(self, rec: Recorded) -> Reply:
        msgs = rec.json()["messages"]
        parts = [
            p
            for m in msgs
            for p in (m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}])
        ]
        text = "\n".join(p.get("text", "") for p in parts if p.get("type") == "text")
        if "List every object that moves" not in text:
            return Reply(json=completion("Answer: Yes"))
        t0 = float(re.search(r"from ([\d.]+) s to", text).group(1))  # type: ignore[union-attr]
        frames = hashlib.sha256(
            "".join(p["image_url"]["url"] for p in parts if p.get("type") == "image_url").encode()
        ).hexdigest()
        with self.lock:
            if self.target is None and t0 == 0.0:
                self.target = frames
            hostile = frames == self.target
        return Reply(json=completion(self.hostile(t0) if hostile else json.dumps({"objects": [_obj(0, t0)]})))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vidaudit.suites.faithful.generate import generate, specs_for

    out = tmp_path_factory.mktemp("caps") / "data"
    generate(
        specs_for(
            "smoke", seeds=2, max_targets=2, agents=4, events=6, occlusions=0, lookalikes=0, repeats=0, duration_s=12.0
        ),
        out,
        workers=1,
    )
    return out


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-faithful-caps")


def _run(data: Path, out: Path, model: str, *extra: str):  # type: ignore[no-untyped-def]
    from vidaudit.cli import app

    return CliRunner().invoke(
        app,
        [
            "run",
            "faithful",
            "--data",
            str(data),
            "--model",
            model,
            "--condition",
            "native@1",
            "--out",
            str(out),
            *extra,
        ],
    )


def _latest(out: Path) -> dict[str, tuple[str, Status, ErrorKind | None, str | None]]:
    """Each trial's (video, last status, error kind, message), from the store the run wrote."""
    samples = {
        json.loads(line)["sample_id"]: json.loads(line)["video"]["path"]
        for line in (Path(json.loads((out / "run.json").read_text())["data_dir"]) / "manifest.jsonl")
        .read_text()
        .splitlines()
        if line.strip()
    }
    with StoreReader(out) as store:
        rows = store.trial_rows()
        last = {r.trial_id: store.attempts(r.trial_id)[-1] for r in rows}
        return {
            r.trial_id: (
                samples[r.sample_id],
                last[r.trial_id].status,
                last[r.trial_id].error_kind,
                last[r.trial_id].error_message,
            )
            for r in rows
        }


@pytest.mark.parametrize(
    "hostile,option", [(deep, "max_depth=32"), (many_objects, "max_objects=64"), (many_states, "max_records=1024")]
)
def test_a_hostile_extract_answer_errors_its_video_and_the_run_goes_on(
    data: Path, tmp_path: Path, hostile, option: str
) -> None:
    out = tmp_path / "run"
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Backbone(hostile))
        model = f"object-centric:{SMALL},openai:bb@{srv.url}/v1"
        r = _run(data, out, model)
        assert r.exception is None or isinstance(r.exception, SystemExit), r.output
        assert r.exit_code == 0, r.output  # some trials ok, some failed: a summary, no traceback
        flat = " ".join(r.output.split())
        assert "api_error (too_large)" in flat and option in flat, r.output
        trials = _latest(out)
        by_video: dict[str, set] = {}
        for video, status, kind, _ in trials.values():
            by_video.setdefault(video, set()).add((status, kind))
        assert len(by_video) == 2, by_video
        assert sorted(map(sorted, by_video.values())) == [
            [(Status.API_ERROR, ErrorKind.TOO_LARGE)],
            [(Status.OK, None)],
        ], by_video
        messages = {m for _, s, _, m in trials.values() if s is Status.API_ERROR}
        assert len(messages) == 1 and f"object-centric:{option.split('=')[0]}=N" in messages.pop()
        with StoreReader(out) as store:
            assert all(len(store.attempts(t)) == 1 for t in trials)  # too_large: not retried

        from vidaudit.cli import app

        # the resume the summary suggests: the stored answer is read again and errors the same way
        again = CliRunner().invoke(app, ["run", "--resume", str(out), "--retry-errors"])
        assert again.exit_code == 0 and "api_error (too_large)" in " ".join(again.output.split()), again.output
        assert {t: s for t, (_, s, _, _) in _latest(out).items()} == {t: s for t, (_, s, _, _) in trials.items()}


def test_the_caps_are_spec_options_with_defaults() -> None:
    o = parse_spec(ModelSpec.parse("object-centric:openai:gpt-4o"))
    assert o.caps == AnswerCaps() == AnswerCaps(max_depth=32, max_objects=64, max_records=1024)
    o = parse_spec(ModelSpec.parse("object-centric:max_depth=8,max_objects=500,max_records=9000,openai:gpt-4o"))
    assert o.caps == AnswerCaps(max_depth=8, max_objects=500, max_records=9000)
    for bad in ("max_objects=0", "max_depth=-1", "max_records=many"):
        with pytest.raises(ConfigError, match="max_"):
            parse_spec(ModelSpec.parse(f"object-centric:{bad},openai:gpt-4o"))


def test_caps_are_read_before_validation_and_raised_caps_admit_the_answer() -> None:
    text = many_objects(0.0)
    with pytest.raises(AnswerTooLarge) as info:
        parse_chunk(text, 0.0, 6.0)
    assert info.value.option == "max_objects"
    assert len(parse_chunk(text, 0.0, 6.0, caps=AnswerCaps(max_objects=65)).objects) == 65
    with pytest.raises(AnswerTooLarge, match="max_objects=64"):  # 20,000 objects: refused, not aggregated
        parse_chunk(json.dumps({"objects": [_obj(k, 0.0) for k in range(20_000)]}), 0.0, 6.0)
    nested = '{"objects": [{"id": "o1", "category": "agent", "attributes": {"colour": ' + "[" * 40 + "]" * 40 + "}}]}"
    with pytest.raises(AnswerTooLarge, match="max_depth=32"):
        parse_chunk(nested, 0.0, 6.0)
    assert "colour" in str(pytest.raises(Exception, parse_chunk, nested, 0.0, 6.0, caps=AnswerCaps(max_depth=64)).value)
    # the summarise reply: its caps scale with the chunks it merges
    traj = [
        {
            "id": f"T{k}",
            "category": "agent",
            "attributes": {"colour": "red", "shape": "circle"},
            "seen": [[0, 1]],
            "states": [[0.5, "action", "enters", None, None]],
        }
        for k in range(100)
    ]
    with pytest.raises(AnswerTooLarge, match="max_objects=64 trajectories"):
        parse_trajectories(json.dumps({"trajectories": traj}), 12.0)
    assert len(parse_trajectories(json.dumps({"trajectories": traj}), 12.0, chunks=2)) == 100
    with pytest.raises(AnswerTooLarge, match="max_depth"):
        parse_trajectories("[" * 100_000, 12.0)


def test_a_video_past_max_frame_pixels_errors_before_a_frame_is_decoded(data: Path, tmp_path: Path) -> None:
    """A real run with the cap below the smoke videos' frames: every trial errors too_large and no extract
    request is ever sent (nothing was decoded to send)."""
    out = tmp_path / "run"
    with FakeServer() as srv:
        srv.script("POST", CHAT, default=Backbone(deep))
        r = _run(data, out, f"object-centric:{SMALL},max_frame_pixels=1000,openai:bb@{srv.url}/v1")
        assert not srv.requests_to(CHAT)
    flat = " ".join(r.output.split())
    assert r.exit_code == 1 and "api_error (too_large)" in flat and "over max_frame_pixels=1,000" in flat, r.output
    assert {(s, k) for _, s, k, _ in _latest(out).values()} == {(Status.API_ERROR, ErrorKind.TOO_LARGE)}


def test_frame_size_reads_the_header_of_a_large_real_video(tmp_path: Path) -> None:
    """A 4000x2200 H.264 file written by Debian's ffmpeg: its size as ffprobe reports it, read without decoding,
    and the composite refuses it at the default cap before any stage call."""
    import asyncio
    import subprocess

    from vidaudit.core.types import Request, TextPart, VideoPart
    from vidaudit.suites.faithful.framework.composite import ObjectCentricAdapter, frame_size

    video = tmp_path / "big.mp4"
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "color=c=red:s=4000x2200:r=2",
            "-t",
            "1",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            str(video),
        ],
        check=True,
    )
    probed = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=width,height",
            "-of",
            "csv=p=0",
            str(video),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert frame_size(str(video)) == tuple(int(x) for x in probed.split(",")) == (4000, 2200)
    assert frame_size(str(tmp_path / "missing.mp4")) is None

    adapter = ObjectCentricAdapter(ModelSpec.parse("object-centric:offline"))
    part = VideoPart(path=str(video), sha256=None, fps=1.0, duration_s=1.0, n_frames=2, source_fps=2.0)

    async def no_call(stage, sub_adapter, sub_request):  # type: ignore[no-untyped-def]
        raise AssertionError(f"stage {stage} called")

    from vidaudit.models.base import ModelCallError

    with pytest.raises(ModelCallError) as info:
        asyncio.run(adapter.run(Request(trial_id="t", parts=(part, TextPart("Question: Is it red?"))), no_call))
    assert info.value.kind is ErrorKind.TOO_LARGE and "4000x2200 (8,800,000 pixels)" in info.value.message
    assert "max_frame_pixels=8,294,400" in info.value.message and adapter.frames.misses == 0


def test_the_pixel_cap_reads_the_stream_the_frames_come_from(tmp_path: Path) -> None:
    """An MKV written by Debian's ffmpeg with a small video stream first and a default-marked 2000x1500 one second
    (the one ffmpeg shows): the cap is checked on the stream the frames are decoded from, the one ffmpeg picks or the one the
    request names, at its displayed size; it once read stream 0 whatever the request, so the large stream passed
    a cap of 1,000,000 pixels unchecked."""
    import asyncio
    import subprocess

    from vidaudit.core.types import Request, TextPart, VideoPart
    from vidaudit.models.base import ModelCallError
    from vidaudit.suites.faithful.framework.composite import ObjectCentricAdapter, frame_size

    video = tmp_path / "two.mkv"
    lavfi = ("-f", "lavfi", "-t", "1", "-i")
    subprocess.run(
        ["ffmpeg", "-v", "error", *lavfi, "color=c=red:s=64x48:r=2", *lavfi, "color=c=blue:s=2000x1500:r=2"]
        + ["-map", "0", "-map", "1", "-disposition:v:0", "0", "-disposition:v:1", "default"]
        + ["-c:v", "libx264", "-pix_fmt", "yuv420p", str(video)],
        check=True,
    )
    shown = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(video), "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-"],
        check=True,
        capture_output=True,
    ).stdout
    assert len(shown) == 2000 * 1500  # the stream ffmpeg shows is the large one
    assert frame_size(str(video)) == (2000, 1500) and frame_size(str(video), 0) == (64, 48)

    adapter = ObjectCentricAdapter(ModelSpec.parse("object-centric:max_frame_pixels=1000000,offline"))

    async def no_call(stage, sub_adapter, sub_request):  # type: ignore[no-untyped-def]
        raise AssertionError(f"stage {stage} called")

    def request(stream: int | None) -> Request:
        part = VideoPart(
            path=str(video), sha256=None, fps=1.0, duration_s=1.0, n_frames=2, source_fps=2.0, stream=stream
        )
        return Request(trial_id="t", parts=(part, TextPart("Question: Is it red?")))

    for stream in (None, 1):
        with pytest.raises(ModelCallError) as info:
            asyncio.run(adapter.run(request(stream), no_call))
        assert info.value.kind is ErrorKind.TOO_LARGE and "2000x1500 (3,000,000 pixels)" in info.value.message
    assert adapter.frames.misses == 0
