"""Tiny random-weight video-language models built from configs and saved locally: no download.

Each builder trains a byte-level BPE tokenizer in code (with the special tokens the family's
processor and chat template need), makes a config with tiny sizes, and ``save_pretrained``s the
model, tokenizer, image/video processors and processor (with a chat template) into ``out``. The
result loads back through the ``hf`` adapter's real ``from_pretrained`` path, so every probe and the
adapter can be smoke-tested anywhere (``vidaudit tiny-model FAMILY --out DIR``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vidaudit.core.errors import ConfigError
from vidaudit.core.fileio import stage_dir
from vidaudit.core.registry import missing_extra

_CORPUS = [
    "How many times does the ball bounce off the wall?",
    "Answer with a number in \\boxed{} and list each event timestamp.",
    "t=0.00s t=0.50s t=1.25s t=3.25s frame event count state",
    "The light blinks on and off; count the blinks.",
    "You are provided the following series of frames from a video.",
    "user assistant system Frame from 00:01 seconds",
    "0 1 2 3 4 5 6 7 8 9 one two three four five",
    "Describe what is happening in this video. Do you AGREE or DISAGREE?",
]

#: Qwen-style chat template: the real Qwen2.5-VL template's shape, trimmed to what tests exercise.
QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

#: LLaVA-OneVision's chat template shape (Qwen2 text model; ``<image>``/``<video>`` placeholders).
LLAVA_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<image>\n{% elif c['type'] == 'video' %}<video>\n"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

#: SmolVLM2's chat template (images and videos become ``<image>``/``<video>`` placeholders).
SMOLVLM_CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'] is string %}{{ ': ' + message['content'] }}"
    "{% else %}{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}"
    "{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}"
    "{% elif line['type'] == 'video' %}{{ '<video>' }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

QWEN_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
LLAVA_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"]
SMOLVLM_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<end_of_utterance>",
    "<fake_token_around_image>",
    "<image>",
    "<global-img>",
    "<video>",
]


def train_tokenizer(specials: list[str], extra: Sequence[str] = (), vocab_size: int = 400) -> Any:
    """A byte-level BPE tokenizer trained on a few sentences; ``specials`` come first (ids 0..)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer)
    if extra:
        tok.add_tokens(list(extra))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>" if "<|im_end|>" in specials else "<end_of_utterance>",
        pad_token="<|endoftext|>",
        additional_special_tokens=[s for s in specials if s != "<|endoftext|>"],
    )


def build_qwen2_5_vl(out: Path) -> Path:
    """Qwen2.5-VL: a 2-block vision tower (patch 8, merge 2, window 32 px: block 0 windowed, block 1 full)
    and a 2-layer text model."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLVideoProcessor,
    )

    return _build_qwen(
        out,
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLVideoProcessor,
        generation_ids=False,
        vision=dict(QWEN_TOWER, depth=2, window_size=32, fullatt_block_indexes=[1], tokens_per_second=2),
    )


def build_smolvlm(out: Path) -> Path:
    """SmolVLM2-style model: 1-layer SigLIP tower (64px, patch 16, pixel shuffle 2 -> 4 tokens/frame), 1-layer Llama."""
    from transformers import (
        SmolVLMConfig,
        SmolVLMForConditionalGeneration,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
    )

    tok = train_tokenizer(SMOLVLM_SPECIALS, extra=[f"<row_{r}_col_{c}>" for r in (1, 2) for c in (1, 2)])
    ids = {s: tok.convert_tokens_to_ids(s) for s in SMOLVLM_SPECIALS}
    image_size, patch, scale = 64, 16, 2
    config = SmolVLMConfig(
        text_config=_text(
            tok,
            1,
            model_type="llama",
            bos_token_id=ids["<|im_start|>"],
            eos_token_id=ids["<end_of_utterance>"],
            pad_token_id=ids["<|endoftext|>"],
        ),
        vision_config=_siglip(image_size, patch),
        scale_factor=scale,
        image_token_id=ids["<image>"],
    )
    _seed()
    model = SmolVLMForConditionalGeneration(config).eval()
    sizes: dict[str, Any] = dict(size={"longest_edge": image_size}, max_image_size={"longest_edge": image_size})
    image_processor = SmolVLMImageProcessor(do_image_splitting=False, **sizes)
    video_processor = SmolVLMVideoProcessor(**sizes)
    seq_len = (image_size // patch) ** 2 // scale**2
    processor = SmolVLMProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        video_processor=video_processor,
        image_seq_len=seq_len,
        chat_template=SMOLVLM_CHAT_TEMPLATE,
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def build_qwen3_vl(out: Path) -> Path:
    """Qwen3-VL with a 1-layer vision tower (patch 8, merge 2, one deepstack layer) and a 2-layer text model."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor, Qwen3VLVideoProcessor

    return _build_qwen(
        out,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
        text=dict(head_dim=16, rope={"mrope_interleaved": True}),
        vision=dict(QWEN_TOWER, depth=1, num_position_embeddings=64, deepstack_visual_indexes=[0]),
    )


def build_llava_onevision(out: Path) -> Path:
    """LLaVA-OneVision: 1-layer SigLIP tower (64px, patch 16 -> 16 tokens/frame), 1-layer Qwen2, no anyres tiling."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
    )

    tok = train_tokenizer(LLAVA_SPECIALS)
    ids = {s: tok.convert_tokens_to_ids(s) for s in LLAVA_SPECIALS}
    image_size, patch = 64, 16
    config = LlavaOnevisionConfig(
        text_config=_text(
            tok, 1, model_type="qwen2", eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"]
        ),
        vision_config=_siglip(image_size, patch, model_type="siglip_vision_model"),
        image_token_index=ids["<image>"],
        video_token_index=ids["<video>"],
        image_grid_pinpoints=[[image_size, image_size]],
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
    )
    _seed()
    model = LlavaOnevisionForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    size = {"height": image_size, "width": image_size}
    image_processor = LlavaOnevisionImageProcessor(
        size=size, crop_size=size, image_grid_pinpoints=[[image_size, image_size]]
    )
    video_processor = LlavaOnevisionVideoProcessor(size=size)
    processor = LlavaOnevisionProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        video_processor=video_processor,
        num_image_tokens=(image_size // patch) ** 2,
        vision_feature_select_strategy="full",
        chat_template=LLAVA_CHAT_TEMPLATE,
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def build_qwen2_vl(out: Path) -> Path:
    """Qwen2-VL with a 2-block vision tower (patch 8, merge 2; attention per temporal group) and a 2-layer
    text model."""
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor, Qwen2VLVideoProcessor

    return _build_qwen(
        out,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
        vision=dict(depth=2, embed_dim=32, hidden_size=32, mlp_ratio=2, num_heads=2),
    )


#: a tiny Qwen-VL's (patch, spatial merge, temporal patch)
QWEN_PATCH = (8, 2, 2)
#: the vision tower's widths that Qwen2.5-VL and Qwen3-VL name alike (Qwen2-VL spells them embed_dim, mlp_ratio)
QWEN_TOWER: dict[str, Any] = dict(hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=32)


def _qwen_tokens() -> tuple[Any, dict[str, int]]:
    """A Qwen-VL tokenizer trained on the tiny corpus, and the ids of its special tokens."""
    tok = train_tokenizer(QWEN_SPECIALS)
    return tok, {s: tok.convert_tokens_to_ids(s) for s in QWEN_SPECIALS}


def _qwen_text(tok: Any, ids: dict[str, int], rope: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A 2-layer Qwen text model's config (M-RoPE sections 2/3/3, plus ``rope``), with ``extra`` keys."""
    return _text(
        tok,
        2,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3], **(rope or {})},
        pad_token_id=ids["<|endoftext|>"],
        **extra,
    )


def _text(tok: Any, layers: int, model_type: str | None = None, **keys: Any) -> dict[str, Any]:
    """The tiny text model every family shares (width 32, 2 heads sharing 1 KV head) with ``layers`` layers, for
    ``tok``'s vocabulary: ``model_type`` (first, where the family's config takes one) and the family's ``keys``."""
    kind = {} if model_type is None else {"model_type": model_type}
    return dict(
        **kind,
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        **keys,
    )


def _siglip(image_size: int, patch: int, **first: Any) -> dict[str, Any]:
    """A 1-layer SigLIP tower (width 32, 2 heads) on ``image_size`` px frames in ``patch`` px patches, after the
    ``first`` keys the family's config takes."""
    return dict(
        **first,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch,
    )


def _qwen_vision_tokens(ids: dict[str, int]) -> dict[str, Any]:
    """The image, video and vision-span token ids every Qwen-VL config takes."""
    return {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
    }


def _build_qwen(
    out: Path,
    config_cls: Any,
    model_cls: Any,
    processor_cls: Any,
    video_processor_cls: Any,
    *,
    vision: dict[str, Any],
    text: dict[str, Any] | None = None,
    generation_ids: bool = True,
) -> Path:
    """A tiny Qwen-VL of the family whose classes are given: the shared tokenizer, a 2-layer text model (``text``:
    the family's own keys; by default its bos and eos ids), the family's ``vision`` tower at ``QWEN_PATCH``, random
    weights from seed 0 (the generation config's eos and pad ids set where ``generation_ids``), saved with its
    processor."""
    tok, ids = _qwen_tokens()
    patch, merge, tpatch = QWEN_PATCH
    if text is None:
        text = dict(bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"])
    config = config_cls(
        text_config=_qwen_text(tok, ids, **text),
        vision_config=dict(vision, patch_size=patch, spatial_merge_size=merge, temporal_patch_size=tpatch),
        **_qwen_vision_tokens(ids),
    )
    _seed()
    model = model_cls(config).eval()
    if generation_ids:
        model.generation_config.eos_token_id = ids["<|im_end|>"]
        model.generation_config.pad_token_id = ids["<|endoftext|>"]
    return _save_qwen(out, model, tok, processor_cls, video_processor_cls)


def _save_qwen(out: Path, model: Any, tok: Any, processor_cls: Any, video_processor_cls: Any) -> Path:
    """Save a tiny Qwen-VL with its processor (32x32 to 64x64 px inputs, ``QWEN_PATCH``) into ``out``."""
    from transformers import Qwen2VLImageProcessor

    patch, merge, tpatch = QWEN_PATCH
    sizes: dict[str, Any] = dict(
        size={"shortest_edge": 32 * 32, "longest_edge": 64 * 64},
        patch_size=patch,
        merge_size=merge,
        temporal_patch_size=tpatch,
    )
    processor = processor_cls(
        image_processor=Qwen2VLImageProcessor(**sizes),
        tokenizer=tok,
        video_processor=video_processor_cls(**sizes),
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def _seed() -> None:
    import torch

    torch.manual_seed(0)


#: ``vidaudit tiny-model FAMILY``: the family's ``model_type`` (as ``hf_families``) -> its builder
BUILDERS: dict[str, Callable[[Path], Path]] = {
    "qwen2_vl": build_qwen2_vl,
    "qwen2_5_vl": build_qwen2_5_vl,
    "qwen3_vl": build_qwen3_vl,
    "smolvlm": build_smolvlm,
    "llava_onevision": build_llava_onevision,
}
#: spellings people type for a family
ALIASES = {
    "qwen2-vl": "qwen2_vl",
    "qwen2.5-vl": "qwen2_5_vl",
    "qwen3-vl": "qwen3_vl",
    "smolvlm2": "smolvlm",
    "llava-onevision": "llava_onevision",
}


def family_key(name: str) -> str:
    """The builder key for ``name`` (model_type or a common spelling), or a ConfigError listing them."""
    key = ALIASES.get(name.lower(), name.lower())
    if key not in BUILDERS:
        raise ConfigError(f"no tiny-model builder for family {name!r}; known: {', '.join(BUILDERS)}")
    return key


def build_tiny(family: str, out: str | Path) -> Path:
    """Build the tiny model of ``family`` into ``out`` (a new or empty directory), written whole or not at all."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        raise missing_extra("tiny-model", "hf", getattr(e, "name", None)) from None
    builder = BUILDERS[family_key(family)]
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} exists and is not an empty directory; choose a new --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = stage_dir(out)  # named after this process: a killed build's folder is swept by the next one
    try:
        builder(tmp)
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
