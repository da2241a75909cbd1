"""The white-box view on tiny random-weight models (built from configs, nothing downloaded).

Proved: the registered capture function's attention equals eager attention (and leaves the model's
output unchanged); the video span is exactly the processor's video tokens; Qwen2.5-VL's window order
round-trips and the restored projector output equals the tower's own (un-permuted) output; a family or
layer that cannot be served is a ConfigError naming it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="hf extra (torch) not installed")
pytest.importorskip("transformers", reason="hf extra (transformers) not installed")

from vidaudit.core.errors import ConfigError  # noqa: E402
from vidaudit.core.types import GenerationSettings, Request, TextPart, VideoPart  # noqa: E402
from vidaudit.tools.mech import window  # noqa: E402
from vidaudit.tools.mech.tiny import build_tiny  # noqa: E402
from vidaudit.tools.mech.whitebox import Want, WhiteBox  # noqa: E402
from vidaudit.video.encode import write_video  # noqa: E402

PROMPT = "Describe what is happening in this video."


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("mech_tiny")
    return {f: build_tiny(f, root / f) for f in ("qwen2_5_vl", "smolvlm")}


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("mech_clip") / "clip.mp4"
    rng = np.random.default_rng(0)
    write_video(path, (rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for _ in range(8)), 4.0, 64, 64)
    return path


def request(path, indices=(0, 2, 4, 6)) -> Request:
    part = VideoPart(
        path=str(path),
        sha256=None,
        fps=2.0,
        duration_s=2.0,
        n_frames=8,
        source_fps=4.0,
        frame_indices=tuple(indices),
        timestamps=tuple(i / 4 for i in indices),
    )
    return Request(trial_id="t", parts=(part, TextPart(PROMPT)), settings=GenerationSettings(temperature=0))


@pytest.fixture(scope="module")
def wb(tiny):
    return WhiteBox(str(tiny["qwen2_5_vl"]))


def test_capture_equals_eager_attention(wb, tiny, clip):
    from transformers import AutoModelForImageTextToText

    req = request(clip)
    view = wb.view(req, Want(attention=True))
    eager = AutoModelForImageTextToText.from_pretrained(tiny["qwen2_5_vl"], attn_implementation="eager").eval()
    inputs = wb.adapter.prepare([req]).inputs
    with torch.inference_mode():
        ref = eager(**inputs, output_attentions=True, use_cache=False)
        ours = wb.model(**inputs, use_cache=False)
    assert sorted(view.attention) == list(range(wb.n_layers))
    for layer, rows in view.attention.items():
        np.testing.assert_allclose(rows, ref.attentions[layer][0, :, -1].numpy(), atol=1e-5)
        assert rows.shape == (wb.model.config.text_config.num_attention_heads, view.spans.length)
    torch.testing.assert_close(ours.logits, ref.logits, atol=1e-4, rtol=1e-4)  # capture does not change the output


def test_video_span_is_exactly_the_processors_video_tokens(wb, clip):
    req = request(clip)
    batch = wb.adapter.prepare([req])
    ids = batch.inputs["input_ids"][0].numpy()
    view = wb.view(req)
    s = view.spans
    assert np.array_equal(s.video, np.flatnonzero(ids == wb.model.config.video_token_id))
    t, h, w = batch.inputs["video_grid_thw"][0].tolist()
    assert len(s.video) == t * h * w // 4 and len(s.groups) == t
    allpos = np.sort(np.concatenate([s.system, s.video, s.prompt, s.other]))
    assert np.array_equal(allpos, np.arange(len(ids)))  # disjoint and covering
    assert wb.processor.tokenizer.decode(ids[s.prompt]).strip() == PROMPT
    assert s.answer == len(ids) - 1 and s.system[-1] == s.video[0] - 1


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 5))
def test_window_reordering_round_trips(wb, t, hh, ww):
    grid = torch.tensor([[t, 2 * hh, 2 * ww]])
    index, cu = window.window_index(wb.visual, grid)
    n = t * 4 * hh * ww
    x = torch.randn(n, 3)
    assert int(cu[-1]) == n
    assert sorted(index.tolist()) == list(range(n // 4))  # a permutation of merge units
    torch.testing.assert_close(window.to_raster_order(window.to_window_order(x, index, 4), index, 4), x)


def test_restored_projector_equals_the_towers_own_output(wb, clip):
    req = request(clip)
    view = wb.view(req, Want(encoder=True, projector=True, vit_layers=(1,)))
    inputs = wb.adapter.prepare([req]).inputs
    with torch.inference_mode():
        own = wb.visual(inputs["pixel_values_videos"], grid_thw=inputs["video_grid_thw"]).pooler_output
    np.testing.assert_allclose(view.projector.reshape(-1, own.shape[-1]), own.numpy(), atol=1e-5)
    # the last block's output is the merger's input: the same array, restored the same way
    np.testing.assert_allclose(view.vit[1], view.encoder, atol=1e-6)
    assert view.encoder.shape[:2] == (2, view.projector.shape[1] * 4)


def test_a_family_or_layer_that_cannot_be_served_is_named(wb, tiny, clip):
    with pytest.raises(ConfigError, match="LLM layer 7 is out of range"):
        wb.view(request(clip), Want(llm_layers=(7,)))
    smol = WhiteBox(str(tiny["smolvlm"]))
    with pytest.raises(ConfigError, match="SmolVLM2 .*cannot serve the cka probe"):
        smol.require_vision("the cka probe")
