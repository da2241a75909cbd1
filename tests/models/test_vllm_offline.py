"""The offline vLLM adapter: what it would hand the engine, checked against the hf adapter's own batch.

vLLM runs only on a GPU, so on CI the engine call is skipped (with its reason); everything before it
is tested with the real processor of a tiny local Qwen2.5-VL: the prompt string, the images in order,
the video frames decoded exactly at the listed indices with the hf adapter's metadata and
``do_sample_frames=False``, and -- the model's processor run on exactly those inputs and keywords, as
vLLM runs it -- the same token ids, pixels and ``second_per_grid_ts`` as the hf adapter's batch.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers", reason="the vllm adapter's inputs are built by transformers: vidaudit[hf]")
torch = pytest.importorskip("torch", reason="the hf batch compared against needs torch: vidaudit[hf]")

sys.path.insert(0, str(Path(__file__).parents[1]))
import tiny_models  # noqa: E402
from vidaudit.core.errors import ConfigError  # noqa: E402
from vidaudit.core.registry import MissingExtraError  # noqa: E402
from vidaudit.core.types import GenerationSettings, ImagePart, ModelSpec, Request, TextPart, VideoPart  # noqa: E402
from vidaudit.models.factory import make_adapter  # noqa: E402
from vidaudit.models.hf_families import FAMILIES  # noqa: E402
from vidaudit.models.hf_inputs import _seconds_per_grid, decode_video, prepare_batch, video_metadata  # noqa: E402
from vidaudit.models.vllm_offline import effective_fps, engine_input, response_from, sampling_kwargs  # noqa: E402
from vidaudit.video.encode import write_video  # noqa: E402

FPS, N_FRAMES, SIZE = 10.0, 20, 64
HAVE_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_models.build_qwen2_5_vl(tmp_path_factory.mktemp("tiny_vllm") / "qwen2_5_vl")


@pytest.fixture(scope="module")
def processor(model_dir: Path):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(str(model_dir))


@pytest.fixture(scope="module")
def video_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vllm_video") / "clip.mp4"
    write_video(path, (np.full((SIZE, SIZE, 3), 10 * i, np.uint8) for i in range(N_FRAMES)), FPS, SIZE, SIZE)
    return path


def frames_request(k: int = 3) -> Request:
    rng = np.random.default_rng(7)
    parts: list = []
    for j in range(k):
        parts.append(TextPart(f"t={j * 0.5:.2f}s"))
        parts.append(ImagePart(rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8), frame_index=5 * j, t=j * 0.5))
    parts.append(TextPart("How many times does the ball bounce?"))
    return Request(
        trial_id="frames",
        parts=tuple(parts),
        system="Count carefully.",
        settings=GenerationSettings(temperature=0.0, max_tokens=6),
    )


def native_request(path: Path, indices=(0, 5, 10, 15)) -> Request:
    part = VideoPart(
        path=str(path),
        sha256=None,
        fps=2.0,
        duration_s=N_FRAMES / FPS,
        n_frames=N_FRAMES,
        source_fps=FPS,
        frame_indices=tuple(indices),
        timestamps=tuple(i / FPS for i in indices),
    )
    return Request(
        trial_id="native",
        parts=(part, TextPart("How many times does the light blink?")),
        settings=GenerationSettings(temperature=0.0, max_tokens=6),
    )


def run_processor(processor, item: dict):
    """The model's processor on exactly the prompt, media and keywords vLLM would hand it."""
    data = item.get("multi_modal_data", {})
    kw = dict(item.get("mm_processor_kwargs", {}))
    if "image" in data:
        images = data["image"]
        kw["images"] = images if isinstance(images, list) else [images]
    if "video" in data:
        kw["videos"] = [v for v, _ in data["video"]]
        kw["video_metadata"] = [m for _, m in data["video"]]
    return processor(text=[item["prompt"]], return_tensors="pt", **kw)


def test_frames_go_as_the_hf_adapters_images_in_order(processor) -> None:
    family = FAMILIES["qwen2_5_vl"]
    req = frames_request()
    item = engine_input(processor, family, req)
    hf = prepare_batch(processor, family, [req])
    assert item["prompt"] == hf.prompts[0]
    sent = item["multi_modal_data"]["image"]
    assert [im.tobytes() for im in sent] == [p.image.tobytes() for p in req.images]
    assert "mm_processor_kwargs" not in item and "video" not in item["multi_modal_data"]
    ours = run_processor(processor, item)
    assert torch.equal(ours["input_ids"], hf.inputs["input_ids"])
    assert torch.equal(ours["pixel_values"], hf.inputs["pixel_values"])


def test_native_video_goes_as_exactly_the_listed_frames_with_the_hf_metadata(processor, video_path) -> None:
    family = FAMILIES["qwen2_5_vl"]
    req = native_request(video_path)
    item = engine_input(processor, family, req)
    hf = prepare_batch(processor, family, [req])
    assert item["prompt"] == hf.prompts[0]
    ((frames, meta),) = item["multi_modal_data"]["video"]
    part = req.videos[0]
    assert np.array_equal(frames, decode_video(part))
    assert [int(f[0, 0, 0]) for f in frames] == pytest.approx([10 * i for i in part.frame_indices], abs=3)
    assert meta == video_metadata(part, frames)
    assert item["mm_processor_kwargs"]["do_sample_frames"] is False
    ours = run_processor(processor, item)
    for key in ("input_ids", "pixel_values_videos", "video_grid_thw"):
        assert torch.equal(ours[key], hf.inputs[key]), key
    # Qwen2.5-VL's temporal positions: one patch spans two frames 0.5 s apart, as the hf adapter says
    assert ours["second_per_grid_ts"].tolist() == pytest.approx(hf.inputs["second_per_grid_ts"].tolist())
    assert hf.inputs["second_per_grid_ts"].tolist() == pytest.approx([2 * 5 / FPS])


def test_families_without_fps_timing_get_no_fps(processor, video_path) -> None:
    item = engine_input(processor, FAMILIES["qwen3_vl"], native_request(video_path))
    assert item["mm_processor_kwargs"] == {"do_sample_frames": False}


@settings(max_examples=60, deadline=None)
@given(
    start=st.integers(0, 500),
    step=st.integers(1, 40),
    n=st.integers(1, 32),
    fps=st.floats(1.0, 120.0, allow_nan=False),
    tp=st.sampled_from([1, 2, 4]),
)
def test_effective_fps_is_the_rate_of_the_frames_sent(start: int, step: int, n: int, fps: float, tp: int) -> None:
    meta = {"frames_indices": [start + step * i for i in range(n)], "fps": fps}
    rate = effective_fps(meta)
    assert rate == pytest.approx(fps / step if n > 1 else fps)
    assert tp / rate == pytest.approx(_seconds_per_grid([meta], tp)[0])


@given(
    seed=st.one_of(st.none(), st.integers(0, 2**40)),
    temperature=st.one_of(st.none(), st.floats(0, 2)),
    max_tokens=st.one_of(st.none(), st.integers(1, 4096)),
    trial=st.text(min_size=1, max_size=20),
)
def test_sampling_is_always_seeded_and_greedy_at_zero(seed, temperature, max_tokens, trial) -> None:
    s = GenerationSettings(seed=seed, temperature=temperature, max_tokens=max_tokens, top_p=0.9)
    kw = sampling_kwargs(s, trial)
    assert kw == sampling_kwargs(s, trial)  # a pure function of the request
    assert 0 <= kw["seed"] < 2**63 and (seed is None or kw["seed"] == seed)
    assert kw.get("max_tokens") == max_tokens
    assert kw.get("temperature") == (None if temperature is None else float(temperature))
    assert ("top_p" in kw) == bool(temperature)


def test_seeds_differ_between_trials() -> None:
    s = GenerationSettings(temperature=0.7)
    assert len({sampling_kwargs(s, f"t{i}")["seed"] for i in range(50)}) == 50


def test_response_keeps_usage_and_finish_reason() -> None:
    r = response_from("\\boxed{3}", 120, 7, "stop", 0.5, "qwen2_5_vl:x@local; vllm 0.11; auto; frames=exact")
    assert (r.text, r.usage.input_tokens, r.usage.output_tokens, r.finish_reason, r.cost_usd) == (
        "\\boxed{3}",
        120,
        7,
        "stop",
        0.0,
    )


@pytest.mark.skipif(HAVE_VLLM, reason="vllm is installed here: the missing-extra message cannot be shown")
def test_without_vllm_the_provider_names_its_extra(model_dir: Path) -> None:
    with pytest.raises(MissingExtraError, match=r'pip install "vidaudit\[vllm\]"'):
        make_adapter(ModelSpec.parse(f"vllm:{model_dir}"))


@pytest.mark.skipif(not HAVE_VLLM, reason="vllm is not installed")
def test_bad_options_are_config_errors(model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="unknown vllm options"):
        make_adapter(ModelSpec.parse(f"vllm:{model_dir}"), options={"warp": 9})


GPU_REASON = (
    "vllm is not installed"
    if not HAVE_VLLM
    else "no GPU: vLLM's engine needs one"
    if not torch.cuda.is_available()
    else ""
)


@pytest.mark.skipif(bool(GPU_REASON), reason=GPU_REASON or "runs")
def test_the_engine_answers_and_counts_the_hf_adapters_prompt_tokens(model_dir: Path, processor, video_path) -> None:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    ad = make_adapter(
        ModelSpec.parse(f"vllm:{model_dir}"),
        options={"gpu_memory_utilization": 0.2, "max_model_len": 4096, "enforce_eager": True},
    )
    reqs = [frames_request(), native_request(video_path)]
    try:
        responses = asyncio.run(ad.generate_batch(reqs))
    finally:
        asyncio.run(ad.aclose())
    family = FAMILIES["qwen2_5_vl"]
    for req, resp in zip(reqs, responses, strict=True):
        hf = prepare_batch(processor, family, [req])
        assert resp.usage.input_tokens == hf.inputs["input_ids"].shape[1]  # the same inputs, token for token
        assert 0 < resp.usage.output_tokens <= 6 and resp.finish_reason in ("stop", "length")
    again = asyncio.run(ad.generate_batch(reqs[::-1]))
    assert [r.text for r in again[::-1]] == [r.text for r in responses]  # greedy, independent of batch order
