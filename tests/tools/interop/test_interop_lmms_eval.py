"""`vidaudit export lmms-eval` run by the real lmms-eval, and its `--log_samples` imported back.

Round trip: smoke samples -> task directory -> `python -m lmms_eval` (its `dummy` mock, and its `openai`
chat model against a local fake server that answers each video differently) -> `score-responses --from
lmms-eval` -> the same per-trial records as `score-responses --responses` on the same texts, and the same
numbers as lmms-eval's own table (its `process_results` is vidaudit's scorer).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from test_interop_support import canned_answer, comparable, small_dataset
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples
from vidaudit.score.stage import score_responses
from vidaudit.tools.interop.lmms_eval import export_lmms_eval, model_label
from vidaudit.tools.interop.logs import import_responses

_MISSING = [
    m for m in ("lmms_eval", "torch", "transformers", "accelerate", "datasets") if importlib.util.find_spec(m) is None
]
needs_lmms_eval = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"lmms-eval cannot run here ({', '.join(_MISSING)} not "
    "installed): pip install 'vidaudit[interop-lmms-eval]' && pip install --no-deps "
    "lmms-eval==0.7.3",
)
CONDITION = "native/structured_trace"


def run_lmms_eval(
    taskdir: Path, out: Path, hf_home: Path, model: str, model_args: str, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HF_HOME": str(hf_home),
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        **(extra_env or {}),
    }
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "lmms_eval",
            "--model",
            model,
            "--model_args",
            model_args,
            "--tasks",
            "vidaudit_counting",
            "--include_path",
            str(taskdir),
            "--log_samples",
            "--output_path",
            str(out),
            "--verbosity",
            "ERROR",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # lmms-eval logs an evaluation error and still exits 0: the samples log is what says it ran
    assert r.returncode == 0 and list(out.rglob("*_samples_*.jsonl")), r.stdout[-3000:] + r.stderr[-3000:]
    return r


def run_served(taskdir: Path, root: Path, answer: Callable[[str], str]) -> None:
    """lmms-eval's `openai` chat model runs the task against a local OpenAI-compatible fake server (as a vLLM
    server is passed the video URL) that answers each request with ``answer(path of the video it names)``."""
    from httpfake import FakeServer, Recorded, Reply

    def reply(req: Recorded) -> Reply:
        content = req.json()["messages"][-1]["content"]
        url = next(c["video_url"]["url"] for c in content if c.get("type") == "video_url")
        message = {"role": "assistant", "content": answer(url.removeprefix("file://"))}
        return Reply(
            json={
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "fake-vlm",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }
        )

    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=reply)
        run_lmms_eval(
            taskdir,
            root / "out",
            root / "hf",
            "openai",
            f"model_version=fake-vlm,base_url={srv.url}/v1,pass_video_url=True,max_retries=1",
            {"OPENAI_API_KEY": "sk-test-not-a-secret"},
        )


def samples_file(out: Path) -> Path:
    (f,) = out.rglob("*_samples_vidaudit_counting.jsonl")
    return f


def results_file(out: Path) -> dict:
    (f,) = out.rglob("*_results.json")
    return json.loads(f.read_text())


def own_scores(manifest: Path, texts: dict[str, str], model: str, tmp: Path) -> list:
    """vidaudit's own scoring of the same responses: score-responses on a responses.jsonl."""
    f = tmp / "responses.jsonl"
    f.write_text(
        "".join(
            json.dumps({"sample_id": sid, "response": t, "model": model, "condition": CONDITION}) + "\n"
            for sid, t in texts.items()
        )
    )
    return score_responses(manifest, f, suite="counting").records


@pytest.fixture(scope="module")
def small(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_dataset(smoke_dir, tmp_path_factory.mktemp("lmms") / "data")


@pytest.fixture(scope="module")
def taskdir(small: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lmms") / "task"
    res = export_lmms_eval(small, out)
    assert res.task == "vidaudit_counting" and res.n_docs == 5 and res.condition == CONDITION
    return out


@pytest.fixture(scope="module")
def served(small: Path, taskdir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """lmms-eval's `openai` chat model against a local OpenAI-compatible fake server (like a vLLM server that
    is passed the video URL): each video gets its own canned answer."""
    pytest.importorskip("openai", reason="lmms-eval's openai model needs the openai SDK (vidaudit[openai])")
    pytest.importorskip("dotenv", reason="lmms-eval's openai model needs python-dotenv")
    samples = load_samples(small)
    by_video = {str(small.resolve() / s.video.path): s for s in samples}
    sent: dict[str, str] = {}

    def answer(path: str) -> str:
        s = by_video[path]
        sent[s.sample_id] = canned_answer(s)
        return sent[s.sample_id]

    root = tmp_path_factory.mktemp("served")
    run_served(taskdir, root, answer)
    assert len(sent) == 5
    return root / "out", sent


def test_task_directory(taskdir: Path, small: Path) -> None:
    yaml_text = (taskdir / "vidaudit_counting.yaml").read_text()
    assert "process_results: !function utils.process_results" in yaml_text
    assert "- metric: vidaudit_f1" in yaml_text and 'vidaudit_suite: "counting"' in yaml_text
    assert "until: []" in yaml_text  # no stop sequence cuts a ledger at its first blank line
    docs = [json.loads(x) for x in (taskdir / "docs.jsonl").read_text().splitlines()]
    assert [d["sample_id"] for d in docs] == [s.sample_id for s in load_samples(small)]
    assert all(Path(d["video"]).is_file() and d["condition"] == CONDITION for d in docs)
    assert "--include_path" in (taskdir / "README.md").read_text()
    # rendered videos are plain: handed over as they are, no copies
    assert "plain copies" not in (taskdir / "README.md").read_text() and not (taskdir / "videos").exists()
    assert "plain_copies" not in json.loads((taskdir / ".vidaudit-export.json").read_text())
    assert all(d["video"] == str(small.resolve() / s.video.path) for d, s in zip(docs, load_samples(small)))


@needs_lmms_eval
def test_round_trip_through_a_fake_server(served: tuple[Path, dict[str, str]], small: Path, tmp_path: Path) -> None:
    out, sent = served
    scored = import_responses("lmms-eval", out, small / "manifest.jsonl")
    assert {r.model for r in scored.records} == {"openai:fake-vlm"}
    assert comparable(scored.records) == comparable(
        own_scores(small / "manifest.jsonl", sent, "openai:fake-vlm", tmp_path)
    )
    kinds = {(r.correct, r.parse.method) for r in scored.records}
    assert len(kinds) >= 2, kinds  # the canned answers differ in kind: right, wrong, unparseable
    # lmms-eval's per-row metrics are vidaudit's, and its table is their mean
    rows = {json.loads(x)["vidaudit_sample_id"]: json.loads(x) for x in samples_file(out).read_text().splitlines()}
    for r in scored.records:
        assert rows[r.sample_id]["vidaudit_record"]["metrics"] == r.metrics
        assert rows[r.sample_id]["vidaudit_correct"] == float(r.correct)
    table = results_file(out)["results"]["vidaudit_counting"]
    assert table["vidaudit_correct,none"] == pytest.approx(sum(r.correct for r in scored.records) / 5)
    f1 = [r.metrics["f1"] for r in scored.records if r.metrics["f1"] is not None]
    assert table["vidaudit_f1,none"] == pytest.approx(sum(f1) / len(f1))


@needs_lmms_eval
def test_round_trip_with_the_dummy_mock(taskdir: Path, small: Path, tmp_path: Path) -> None:
    text = "- at 2.27 s: contact (running count 1) Final Answer: \\boxed{1}"  # no comma: model_args splits on it
    run_lmms_eval(taskdir, tmp_path / "out", tmp_path / "hf", "dummy", f"response={text}")
    scored = import_responses("lmms-eval", tmp_path / "out", small)
    assert {r.model for r in scored.records} == {"dummy"}
    ids = [s.sample_id for s in load_samples(small)]
    assert comparable(scored.records) == comparable(
        own_scores(small / "manifest.jsonl", dict.fromkeys(ids, text), "dummy", tmp_path)
    )
    table = results_file(tmp_path / "out")["results"]["vidaudit_counting"]
    assert table["vidaudit_correct,none"] == pytest.approx(sum(r.correct for r in scored.records) / 5)
    # the same through the command line
    import typer
    from typer.testing import CliRunner

    from vidaudit.tools.interop.cli import register

    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(
        app,
        [
            "score-responses",
            "--from",
            "lmms-eval",
            str(tmp_path / "out"),
            "--samples",
            str(small),
            "--out",
            str(tmp_path / "scores.jsonl"),
        ],
    )
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert sorted(lines, key=lambda d: d["sample_id"]) == comparable(scored.records)


def _rewrite(log: Path, dest: Path, edit) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    edit(rows)
    f = dest / log.name
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


@needs_lmms_eval
def test_refusals_name_what_they_found(served: tuple[Path, dict[str, str]], small: Path, tmp_path: Path) -> None:
    log = samples_file(served[0])
    manifest = small / "manifest.jsonl"

    def other_suite(rows):
        for r in rows:
            r["vidaudit_suite"] = "toy"

    with pytest.raises(DataError, match="log of suite toy, but .* holds counting samples"):
        import_responses("lmms-eval", _rewrite(log, tmp_path / "a", other_suite), manifest)

    def unknown_ids(rows):
        rows[0]["vidaudit_sample_id"] = "counting-nope-1"
        rows[1]["vidaudit_sample_id"] = "counting-nope-2"

    with pytest.raises(DataError, match=r"2 of 5 rows .* 2 sample id\(s\) .*: counting-nope-1, counting-nope-2"):
        import_responses("lmms-eval", _rewrite(log, tmp_path / "b", unknown_ids), manifest)

    def future(rows):
        rows[2]["vidaudit_format"] = 99

    with pytest.raises(DataError, match="vidaudit_format=99, which this vidaudit .* does not know"):
        import_responses("lmms-eval", _rewrite(log, tmp_path / "c", future), manifest)

    def foreign(rows):
        for r in rows:
            for k in [k for k in r if k.startswith("vidaudit_")]:
                del r[k]

    with pytest.raises(DataError, match="not from a task written by `vidaudit export lmms-eval`"):
        import_responses("lmms-eval", _rewrite(log, tmp_path / "d", foreign), manifest)
    with pytest.raises(DataError, match="not an lmms-eval --log_samples row"):
        import_responses("lmms-eval", _rewrite(log, tmp_path / "e", lambda rows: rows[0].pop("doc_id")), manifest)


def test_model_label_names_the_checkpoint() -> None:
    cfg = {"config": {"model": "llava_onevision", "model_args": "pretrained=lmms-lab/llava-ov-7b,conv_template=qwen"}}
    assert model_label(cfg) == "llava_onevision:lmms-lab/llava-ov-7b"
    assert model_label({"config": {"model": "dummy", "model_args": "response=x"}}) == "dummy"
    assert model_label({}) == "lmms-eval"


def test_export_refuses(small: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="system instruction"):
        export_lmms_eval(small, tmp_path / "t1", prompt="role_prompting")
    with pytest.raises(ConfigError, match="unknown prompt"):
        export_lmms_eval(small, tmp_path / "t2", prompt="nope")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("x")
    with pytest.raises(ConfigError, match="not a task directory vidaudit wrote"):
        export_lmms_eval(small, tmp_path / "busy")
    res = export_lmms_eval(small, tmp_path / "t3", prompt="direct")
    again = export_lmms_eval(small, tmp_path / "t3")  # re-export into its own directory: one task left
    assert res.task == "vidaudit_counting_direct" and again.task == "vidaudit_counting"
    assert [p.name for p in (tmp_path / "t3").glob("*.yaml")] == ["vidaudit_counting.yaml"]


# --------------------------------------------------------------------------- videos one step off the common case


def odd_dataset(small: Path, d: Path) -> dict[str, str]:
    """``small`` copied to ``d`` with its five samples moved onto real files a harness's loader reads differently
    from vidaudit (a phone clip turned by its display matrix, an anamorphic clip, two video streams whose second is
    ffmpeg's pick, a mirroring display matrix) and one it reads alike (two frame rates, upright): ``{sample_id:
    kind}``."""
    from quirkvideos import _anamorphic, pipe_encode
    from realvideos import frame_image, make_mirrored, write_video
    from vidaudit.core.manifest import write_manifest
    from vidaudit.video.probe import video_ref

    shutil.copytree(small, d)
    odd = d / "videos" / "odd"
    odd.mkdir()
    write_video(odd / "rot90.mp4", list(range(12)), Fraction(1, 12), rate=12, rotation=90)
    pipe_encode(
        odd / "sar.mp4",
        [_anamorphic(k, (340, 256), (426, 256)) for k in range(12)],
        12,
        ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-vf", "setsar=64/51", "-x264-params", "log-level=error"],
    )
    first, second = d / "first.mp4", d / "second.mp4"
    pipe_encode(
        first, [frame_image(100 + k, 64, 48) for k in range(12)], 12, ["-c:v", "libx264", "-pix_fmt", "yuv420p"]
    )
    pipe_encode(second, [frame_image(k, 96, 64) for k in range(12)], 12, ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(first), "-i", str(second), "-map", "0:v", "-map", "1:v", "-c", "copy"]
        + [str(odd / "two_streams.mkv")],
        check=True,
    )
    first.unlink()
    second.unlink()
    shutil.move(make_mirrored(d / "_m", n=12)["hflip.mp4"].path, odd / "hflip.mp4")
    shutil.rmtree(d / "_m")
    pts = [i * 3000 for i in range(12)] + [36000 + i * 9000 for i in range(4)]
    write_video(odd / "vfr.mp4", pts, Fraction(1, 90000))
    kinds = ("rot90.mp4", "sar.mp4", "two_streams.mkv", "hflip.mp4", "vfr.mp4")
    samples = load_samples(d)
    moved = [s.model_copy(update={"video": video_ref(d, f"videos/odd/{k}")}) for s, k in zip(samples, kinds)]
    write_manifest(d, moved)
    return {s.sample_id: k for s, k in zip(samples, kinds)}


def vidaudit_codes(data: Path, sample) -> list[int]:
    from realvideos import frame_code
    from vidaudit.video.decode import read_frames

    frames = read_frames(data / sample.video.path, range(sample.video.n_frames), stream=sample.video.stream)
    return [frame_code(f) for f in frames]


@pytest.fixture(scope="module")
def odd(small: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    if not (shutil.which("ffmpeg") and shutil.which("ffprobe")):
        pytest.skip("ffmpeg/ffprobe not found: apt-get install -y ffmpeg")
    root = tmp_path_factory.mktemp("odd")
    kinds = odd_dataset(small, root / "data")
    export_lmms_eval(root / "data", root / "task")
    return root / "data", kinds, root / "task"


def test_lmms_eval_loader_sees_the_frames_vidaudit_scores(odd: tuple[Path, dict[str, str], Path]) -> None:
    """lmms-eval's own video loader (``read_video``, PyAV, what its llava/qwen/gemma models decode with), given
    what the exported task's ``doc_to_visual`` returns, decodes every frame vidaudit scores against: the same
    frame codes, upright, at the displayed size. The rotated, anamorphic, two-stream and mirrored files are
    handed over as plain copies (recorded in the export's metadata, checked with ffmpeg as a player); the
    upright two-rate clip as it is."""
    load_video = pytest.importorskip("lmms_eval.models.model_utils.load_video", reason="lmms-eval not installed")
    from realvideos import Player, frame_code, is_upright
    from vidaudit.tools.interop.lmms_eval_runtime import doc_to_visual

    data, kinds, task = odd
    samples = {s.sample_id: s for s in load_samples(data)}
    docs = {d["sample_id"]: d for d in map(json.loads, (task / "docs.jsonl").read_text().splitlines())}
    meta = json.loads((task / ".vidaudit-export.json").read_text())
    copied = {sid for c in meta.get("plain_copies", []) for sid in c["samples"]}
    player = Player.required()
    for sid, s in samples.items():
        (visual,) = doc_to_visual(docs[sid])
        frames = load_video.read_video(visual, num_frm=s.video.n_frames)
        want = vidaudit_codes(data, s)
        assert want == list(range(s.video.n_frames)), kinds[sid]
        assert [frame_code(f) for f in frames] == want, kinds[sid]
        assert all(is_upright(f) for f in frames), kinds[sid]
        assert frames.shape[1:3] == (s.video.height, s.video.width), kinds[sid]
        if sid in copied:
            entry = next(c for c in meta["plain_copies"] if sid in c["samples"])
            assert Path(visual) == task / entry["copy"] and entry["source"] == str(data / s.video.path)
            assert docs[sid]["video_source"] == entry["source"] and docs[sid]["video_sha256"] == s.video.sha256
            t_src, f_src = player.frames(data / s.video.path)
            t_copy, f_copy = player.frames(Path(visual))
            assert [frame_code(f) for f in f_copy] == [frame_code(f) for f in f_src]
            assert t_copy == pytest.approx(t_src, abs=1e-3)
            assert np.mean([np.abs(a.astype(int) - b.astype(int)).mean() for a, b in zip(f_copy, f_src)]) < 3
        else:
            assert visual == str(data / s.video.path) and "video_source" not in docs[sid]
    assert {kinds[sid] for sid in copied} == {"rot90.mp4", "sar.mp4", "two_streams.mkv", "hflip.mp4"}
    readme = (task / "README.md").read_text()
    assert all(f"`{c['copy']}` from `{c['source']}`" in readme for c in meta["plain_copies"])
    assert sorted(p.name for p in (task / "videos").iterdir()) == sorted(
        Path(c["copy"]).name for c in meta["plain_copies"]
    )


def test_export_refuses_a_clip_a_copy_would_retime(small: Path, tmp_path: Path) -> None:
    """A phone clip both turned and variable-rate (a constant-rate copy would move its frames in time) and a turned
    clip of odd size (yuv420p cannot hold it): the export refuses, naming both files and why, and writes no task."""
    from realvideos import write_video
    from vidaudit.core.manifest import write_manifest
    from vidaudit.video.probe import video_ref

    data = tmp_path / "data"
    shutil.copytree(small, data)
    jitter = [0, 2900, 6100, 9000, 12100, 14900, 18000, 21200, 23900, 27000, 30100, 33000]
    write_video(data / "videos" / "phone.mp4", jitter, Fraction(1, 90000), rotation=180)
    write_video(
        data / "videos" / "odd.mp4",
        list(range(6)),
        Fraction(1, 10),
        rate=10,
        rotation=90,
        size=(65, 49),
        pix_fmt="yuv444p",
    )
    samples = load_samples(data)
    refs = [video_ref(data, "videos/phone.mp4"), video_ref(data, "videos/odd.mp4")]
    write_manifest(data, [s.model_copy(update={"video": r}) for s, r in zip(samples, refs)] + samples[2:])
    with pytest.raises(DataError) as e:
        export_lmms_eval(data, tmp_path / "task")
    assert "2 video(s)" in str(e.value)
    assert "phone.mp4 (display matrix turns it 180 degrees, variable frame rate)" in str(e.value)
    assert "odd.mp4 (display matrix turns it 90 degrees, odd displayed size 65x49)" in str(e.value)
    assert not (tmp_path / "task").exists()


@needs_lmms_eval
def test_a_served_model_is_sent_the_frames_vidaudit_scores(
    odd: tuple[Path, dict[str, str], Path], tmp_path: Path
) -> None:
    """The exported task run by lmms-eval (its `openai` model, passing the video to a local fake server as a vLLM
    server is passed it): the file each request names, decoded with lmms-eval's loader, holds vidaudit's frames
    for every odd video; the log scores back as vidaudit scores the same answers."""
    pytest.importorskip("openai", reason="lmms-eval's openai model needs the openai SDK (vidaudit[openai])")
    pytest.importorskip("dotenv", reason="lmms-eval's openai model needs python-dotenv")
    from lmms_eval.models.model_utils.load_video import read_video

    from realvideos import frame_code

    data, kinds, task = odd
    samples = {s.sample_id: s for s in load_samples(data)}
    paths: dict[str, str] = {}
    sent: dict[str, str] = {}
    docs = [json.loads(x) for x in (task / "docs.jsonl").read_text().splitlines()]
    by_video = {d["video"]: d["sample_id"] for d in docs}

    def answer(path: str) -> str:
        sid = by_video[path]
        paths[sid] = path
        sent[sid] = canned_answer(samples[sid])
        return sent[sid]

    run_served(task, tmp_path, answer)
    assert set(paths) == set(samples)
    for sid, path in paths.items():
        s = samples[sid]
        frames = read_video(path, num_frm=s.video.n_frames)
        assert [frame_code(f) for f in frames] == vidaudit_codes(data, s), kinds[sid]
        assert frames.shape[1:3] == (s.video.height, s.video.width), kinds[sid]
    scored = import_responses("lmms-eval", tmp_path / "out", data / "manifest.jsonl")
    assert comparable(scored.records) == comparable(
        own_scores(data / "manifest.jsonl", sent, "openai:fake-vlm", tmp_path)
    )


def test_re_export_drops_copies_it_no_longer_needs(
    odd: tuple[Path, dict[str, str], Path], small: Path, tmp_path: Path
) -> None:
    """Exporting a plain dataset into a task directory that held copies leaves none behind (a stale copy
    would sit beside documents that no longer name it) and no `plain_copies` in the metadata."""
    task = tmp_path / "task"
    shutil.copytree(odd[2], task)
    assert any((task / "videos").iterdir())
    export_lmms_eval(small, task)
    assert not any((task / "videos").iterdir())
    assert "plain_copies" not in json.loads((task / ".vidaudit-export.json").read_text())
