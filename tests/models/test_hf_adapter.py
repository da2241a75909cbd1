"""The hf adapter on tiny random-weight models built and saved locally (nothing is downloaded).

What is proved: the adapter loads through the real ``from_pretrained`` path, sends frames@K as
images in order with their text, sends native video as exactly the listed frames (the visual
token counts and temporal grid match the frames sent, so nothing was resampled), reports usage,
batches with left padding, keeps the event loop free, and classifies failures.
"""

from __future__ import annotations

import asyncio
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="hf extra (torch) not installed")
pytest.importorskip("transformers", reason="hf extra (transformers) not installed")

import tiny_models  # noqa: E402
from vidaudit.core.errors import ConfigError  # noqa: E402
from vidaudit.core.types import ErrorKind, GenerationSettings, ImagePart, ModelSpec, Request, TextPart, VideoPart  # noqa: E402
from vidaudit.models.base import ModelAdapter, ModelCallError  # noqa: E402
from vidaudit.models.hf import HFAdapter  # noqa: E402
from vidaudit.models.hf_families import FAMILIES  # noqa: E402
from vidaudit.models.hf_inputs import build_messages, decode_video  # noqa: E402
from vidaudit.video.encode import write_video  # noqa: E402

FPS, N_FRAMES, SIZE = 10.0, 20, 64
INDICES = (0, 5, 10, 15)
MAX_TOKENS = 6


#: CPU and float32 on CI; a GPU check sets VIDAUDIT_TEST_DEVICE=cuda VIDAUDIT_TEST_DTYPE=bfloat16.
DEVICE_KW = {
    "device": os.environ.get("VIDAUDIT_TEST_DEVICE", "cpu"),
    "dtype": os.environ.get("VIDAUDIT_TEST_DTYPE", "float32"),
}


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_hf")
    return {
        "qwen2_5_vl": tiny_models.build_qwen2_5_vl(root / "qwen2_5_vl"),
        "smolvlm": tiny_models.build_smolvlm(root / "smolvlm"),
    }


@pytest.fixture(scope="session")
def video_path(tmp_path_factory):
    """A 20-frame 64x64 clip whose frame i is a flat grey of level 10 * i (frame identity is readable)."""
    path = tmp_path_factory.mktemp("video") / "clip.mp4"
    frames = (np.full((SIZE, SIZE, 3), 10 * i, np.uint8) for i in range(N_FRAMES))
    write_video(path, frames, FPS, SIZE, SIZE)
    return path


@pytest.fixture(scope="session")
def adapters(model_dirs):
    return {
        k: HFAdapter(ModelSpec(provider="hf", name=str(p)), batch_size=2, **DEVICE_KW) for k, p in model_dirs.items()
    }


def _settings(**kw) -> GenerationSettings:
    return GenerationSettings(**{"temperature": 0.0, "max_tokens": MAX_TOKENS, **kw})


def frames_request(
    trial_id: str = "frames", k: int = 3, prompt: str = "How many times does the ball bounce?", **kw
) -> Request:
    rng = np.random.default_rng(len(trial_id))
    parts: list = []
    for j in range(k):
        t = j * 0.5
        parts.append(TextPart(f"t={t:.2f}s"))
        parts.append(ImagePart(rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8), frame_index=5 * j, t=t))
    parts.append(TextPart(prompt))
    return Request(trial_id=trial_id, parts=tuple(parts), settings=_settings(**kw))


def native_request(video_path, trial_id: str = "native", indices=INDICES) -> Request:
    part = VideoPart(
        path=str(video_path),
        sha256=None,
        fps=2.0,
        duration_s=N_FRAMES / FPS,
        n_frames=N_FRAMES,
        source_fps=FPS,
        frame_indices=tuple(indices),
        timestamps=tuple(i / FPS for i in indices),
    )
    return Request(trial_id=trial_id, parts=(part, TextPart("Count the events.")), settings=_settings())


def text_tokens(adapter: HFAdapter, request: Request) -> int:
    return len(adapter.processor.tokenizer(request.text)["input_ids"])


def count(ids, token_id: int) -> int:
    return int((ids == token_id).sum())


def check_response(adapter: HFAdapter, request: Request, response) -> None:
    assert isinstance(response.text, str)
    assert response.usage.input_tokens > text_tokens(adapter, request)
    assert 1 <= response.usage.output_tokens <= MAX_TOKENS
    assert response.finish_reason in ("stop", "length")
    assert response.latency_s > 0
    assert response.model_version.endswith("frames=exact")


# ------------------------------------------------------------------ Qwen2.5-VL


def qwen_tokens_per_frame(adapter: HFAdapter) -> int:
    ip = adapter.processor.image_processor
    return (SIZE // ip.patch_size) ** 2 // ip.merge_size**2


def test_qwen_frames_sends_every_image_in_order(adapters):
    ad = adapters["qwen2_5_vl"]
    req = frames_request(k=3)
    batch = ad.prepare([req])
    ids = batch.inputs["input_ids"][0]
    assert count(ids, ad.processor.image_token_id) == 3 * qwen_tokens_per_frame(ad)
    assert batch.inputs["image_grid_thw"].tolist() == [[1, SIZE // 8, SIZE // 8]] * 3
    prompt = batch.prompts[0]
    image = "<|vision_start|><|image_pad|><|vision_end|>"
    assert f"t=0.00s{image}t=0.50s{image}t=1.00s{image}How many" in prompt  # each timestamp before its frame
    resp = asyncio.run(ad.generate(req))
    check_response(ad, req, resp)
    assert resp.usage.input_tokens == int(batch.inputs["attention_mask"].sum())


def test_qwen_native_video_keeps_exactly_the_listed_frames(adapters, video_path):
    ad = adapters["qwen2_5_vl"]
    req = native_request(video_path)
    batch = ad.prepare([req])
    tp = ad.processor.video_processor.temporal_patch_size
    # 4 frames, temporal patch 2 -> a temporal grid of 2 (a resampled video would differ)
    assert batch.inputs["video_grid_thw"].tolist() == [[len(INDICES) // tp, SIZE // 8, SIZE // 8]]
    assert count(batch.inputs["input_ids"][0], ad.processor.video_token_id) == len(
        INDICES
    ) // tp * qwen_tokens_per_frame(ad)
    # one temporal patch spans 2 frames 0.5 s apart
    assert batch.inputs["second_per_grid_ts"].tolist() == pytest.approx([tp * 5 / FPS])
    resp = asyncio.run(ad.generate(req))
    check_response(ad, req, resp)


def test_native_grid_tracks_frame_count(adapters, video_path):
    ad = adapters["qwen2_5_vl"]
    batch = ad.prepare([native_request(video_path, indices=range(0, 16, 2))])  # 8 frames
    assert batch.inputs["video_grid_thw"][0, 0].item() == 4


def test_decode_video_returns_the_listed_frames(video_path):
    part = native_request(video_path, indices=(15, 0, 5, 5)).videos[0]
    frames = decode_video(part)
    assert frames.shape == (4, SIZE, SIZE, 3)
    levels = frames.reshape(4, -1).mean(axis=1)
    assert np.allclose(levels, [150, 0, 50, 50], atol=3)


def test_batch_of_two_returns_two_in_order(adapters, video_path):
    ad = adapters["qwen2_5_vl"]
    a, b = frames_request("a", k=2, prompt="short"), frames_request("b", k=3, prompt="a longer question here")
    single = [ad.prepare([r]).inputs["attention_mask"].sum().item() for r in (a, b)]
    batch = ad.prepare([a, b])
    assert batch.inputs["attention_mask"][:, -1].tolist() == [1, 1]  # left padding
    out = asyncio.run(ad.generate_batch([a, b]))
    assert len(out) == 2
    assert [r.usage.input_tokens for r in out] == single  # pad tokens are not counted
    for req, resp in zip((a, b), out, strict=True):
        check_response(ad, req, resp)


def test_greedy_is_repeatable_and_event_loop_stays_free(adapters):
    ad = adapters["qwen2_5_vl"]
    req = frames_request("rep", k=1)

    async def main():
        ticks = 0
        task = asyncio.create_task(ad.generate(req))
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.001)
        return await task, ticks, await ad.generate(req)

    first, ticks, second = asyncio.run(main())
    assert ticks > 1
    assert first.text == second.text


def test_sampling_with_a_seed_is_reproducible(adapters):
    ad = adapters["qwen2_5_vl"]
    req = frames_request("seed", k=1, temperature=1.5, seed=7)
    a, b = asyncio.run(ad.generate(req)), asyncio.run(ad.generate(req))
    assert a.text == b.text and a.usage == b.usage


# ------------------------------------------------------------------ SmolVLM2


def smol_tokens_per_frame(adapter: HFAdapter) -> int:
    return adapter.processor.image_seq_len


def test_smolvlm_frames(adapters):
    ad = adapters["smolvlm"]
    req = frames_request(k=3)
    batch = ad.prepare([req])
    assert count(batch.inputs["input_ids"][0], ad.processor.image_token_id) == 3 * smol_tokens_per_frame(ad)
    assert batch.inputs["pixel_values"].shape[:2] == (1, 3)
    check_response(ad, req, asyncio.run(ad.generate(req)))


def test_smolvlm_native_video_uses_the_true_timestamps(adapters, video_path):
    ad = adapters["smolvlm"]
    req = native_request(video_path)
    batch = ad.prepare([req])
    assert count(batch.inputs["input_ids"][0], ad.processor.image_token_id) == len(INDICES) * smol_tokens_per_frame(ad)
    assert batch.inputs["pixel_values"].shape[:2] == (1, len(INDICES))
    # frames 0, 5, 10, 15 at 10 fps are at 0.0, 0.5, 1.0, 1.5 s (SmolVLM prints whole seconds)
    assert batch.prompts[0].count("<video>") == 1  # the processor expands it into timestamped frames
    decoded = ad.processor.tokenizer.decode(batch.inputs["input_ids"][0])
    assert decoded.count("Frame from") == len(INDICES)
    assert [s[:5] for s in decoded.split("Frame from ")[1:]] == ["00:00", "00:00", "00:01", "00:01"]
    assert "four frames" in decoded
    check_response(ad, req, asyncio.run(ad.generate(req)))


def test_smolvlm_batch_of_two(adapters, video_path):
    ad = adapters["smolvlm"]
    reqs = [native_request(video_path, "n1"), native_request(video_path, "n2", indices=(1, 6, 11, 16))]
    out = asyncio.run(ad.generate_batch(reqs))
    assert len(out) == 2
    for req, resp in zip(reqs, out, strict=True):
        check_response(ad, req, resp)


def test_smolvlm_mixed_requests_batch_like_single_ones(adapters, video_path):
    """Images with videos, or videos of different lengths, must not share a processor call."""
    ad = adapters["smolvlm"]
    reqs = [
        frames_request("f", k=2),
        native_request(video_path, "n4"),
        native_request(video_path, "n3", indices=(0, 3, 6)),
        frames_request("g", k=3),
    ]
    single = [int(ad.prepare([r]).inputs["attention_mask"].sum()) for r in reqs]
    out = asyncio.run(ad.generate_batch(reqs))
    assert [r.usage.input_tokens for r in out] == single


# ------------------------------------------------------------------ failures and config


def test_capabilities(adapters):
    ad = adapters["qwen2_5_vl"]
    assert isinstance(ad, ModelAdapter)
    caps = ad.capabilities
    assert (caps.native_video, caps.local, caps.default_native_fps, caps.batch_size) == (True, True, 2.0, 2)
    assert ad.family.model_type == "qwen2_5_vl"


def test_unsupported_model_type_names_the_supported_ones(tmp_path):
    from transformers import LlamaConfig

    LlamaConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2).save_pretrained(tmp_path)
    with pytest.raises(ConfigError) as e:
        HFAdapter(ModelSpec(provider="hf", name=str(tmp_path)))
    assert "'llama'" in str(e.value) and all(t in str(e.value) for t in FAMILIES)


def test_each_answer_names_model_weights_engine_and_precision(adapters, model_dirs):
    import transformers

    for key, adapter in adapters.items():
        dtype = adapter.request_options()["dtype"]
        assert adapter.model_version == (
            f"{key}:{model_dirs[key].name}@local; transformers {transformers.__version__}; {dtype}; frames=exact"
        )
        assert adapter.capabilities.local and adapter.capabilities.batch_size == 2
        assert adapter.capabilities.concurrency == 1 and adapter.capabilities.max_images is None


def test_bad_options_are_config_errors(model_dirs, tmp_path):
    spec = ModelSpec(provider="hf", name=str(model_dirs["qwen2_5_vl"]))
    for kwargs, says in (
        ({"dtype": "float8"}, "hf dtype 'float8' is not one of float32, bfloat16, float16, auto"),
        ({"batch_size": 0}, "hf batch_size must be a positive integer, got 0"),
        ({"flash": True}, "unknown hf options ['flash']; known: "),
        ({"device": "gpu"}, "hf device 'gpu' is not a torch device"),
    ):
        with pytest.raises(ConfigError) as e:
            HFAdapter(spec, **kwargs)
        assert str(e.value).startswith(says), str(e.value)
    with pytest.raises(ConfigError, match="needs a model path or hub id, e.g. hf:Qwen/"):
        HFAdapter(ModelSpec(provider="hf", name=""))
    with pytest.raises(ConfigError, match="cannot load the config of hf model .*pass a local model directory"):
        HFAdapter(ModelSpec(provider="hf", name=str(tmp_path / "absent")), local_files_only=True)


def test_native_without_frame_indices_is_a_bad_request(adapters, video_path):
    with pytest.raises(ModelCallError) as e:
        asyncio.run(adapters["qwen2_5_vl"].generate(native_request(video_path, indices=())))
    assert e.value.kind is ErrorKind.BAD_REQUEST and "frame_indices" in e.value.message


def test_missing_video_is_a_bad_request(adapters, tmp_path):
    with pytest.raises(ModelCallError) as e:
        adapters["smolvlm"].prepare([native_request(tmp_path / "gone.mp4")])
    assert e.value.kind is ErrorKind.BAD_REQUEST


def test_placeholder_in_text_is_refused(adapters):
    with pytest.raises(ModelCallError) as e:
        adapters["qwen2_5_vl"].prepare([frames_request(k=1, prompt="look <|image_pad|> here")])
    assert e.value.kind is ErrorKind.BAD_REQUEST


def test_out_of_memory_is_classified(adapters):
    ad = adapters["qwen2_5_vl"]
    err = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert ad._oom_error(err, 2).kind is ErrorKind.TRANSIENT
    assert ad._oom_error(err, 1).kind is ErrorKind.BAD_REQUEST


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(alphabet="abc t=.0123456789s", min_size=1, max_size=12), st.integers(0, 1000)),
        min_size=1,
        max_size=8,
    )
)
def test_messages_keep_part_order(items):
    parts = tuple(
        TextPart(x)
        if isinstance(x, str)
        else ImagePart(np.full((4, 4, 3), x % 256, np.uint8), frame_index=x, t=x / FPS)
        for x in items
    )
    req = Request(trial_id="p", parts=parts)
    messages, images, videos, _ = build_messages(req, FAMILIES["qwen2_5_vl"], ["<|image_pad|>"])
    content = messages[-1]["content"]
    assert [c["type"] for c in content] == ["text" if isinstance(x, str) else "image" for x in items]
    assert [c["text"] for c in content if c["type"] == "text"] == [x for x in items if isinstance(x, str)]
    assert [int(im[0, 0, 0]) for im in images] == [x % 256 for x in items if not isinstance(x, str)]
    assert videos == []


# ------------------------------------------------------------------ Qwen3-VL and LLaVA-OneVision


@pytest.fixture(scope="module")
def more_adapters(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_hf_more")
    built = {
        "qwen3_vl": tiny_models.build_qwen3_vl(root / "qwen3_vl"),
        "llava_onevision": tiny_models.build_llava_onevision(root / "llava_onevision"),
    }
    return {k: HFAdapter(ModelSpec(provider="hf", name=str(p)), batch_size=2, **DEVICE_KW) for k, p in built.items()}


def test_qwen3_vl_native_prints_the_true_frame_times(more_adapters, video_path):
    ad = more_adapters["qwen3_vl"]
    batch = ad.prepare([native_request(video_path)])
    thw = batch.inputs["video_grid_thw"][0].tolist()
    assert thw[0] == len(INDICES) // 2
    assert count(batch.inputs["input_ids"][0], ad.processor.video_token_id) == thw[0] * thw[1] * thw[2] // 4
    decoded = ad.processor.tokenizer.decode(batch.inputs["input_ids"][0])
    times = [float(s.split(" seconds>")[0]) for s in decoded.split("<")[1:] if " seconds>" in s]
    # one time per temporal patch: the mean of frames (0, 5) and (10, 15) at 10 fps
    assert times == pytest.approx([0.25, 1.25], abs=0.051)


def test_llava_onevision_counts_frames(more_adapters, video_path):
    ad = more_adapters["llava_onevision"]
    one = count(ad.prepare([frames_request(k=1)]).inputs["input_ids"][0], ad.processor.image_token_id)
    three = count(ad.prepare([frames_request(k=3)]).inputs["input_ids"][0], ad.processor.image_token_id)
    assert one > 0 and three == 3 * one
    batch = ad.prepare([native_request(video_path)])
    assert batch.inputs["pixel_values_videos"].shape[:2] == (1, len(INDICES))
    per_frame = (SIZE // 16 // 2) ** 2  # patch 16, 2x2 pooling per frame
    assert count(batch.inputs["input_ids"][0], ad.processor.video_token_id) == len(INDICES) * per_frame + 1


@pytest.mark.parametrize("family", ["qwen3_vl", "llava_onevision"])
def test_more_families_generate_in_batches(more_adapters, video_path, family):
    ad = more_adapters[family]
    reqs = [frames_request("f", k=2), native_request(video_path, "n"), frames_request("g", k=1)]
    out = asyncio.run(ad.generate_batch(reqs))
    assert len(out) == 3
    for req, resp in zip(reqs, out, strict=True):
        check_response(ad, req, resp)
