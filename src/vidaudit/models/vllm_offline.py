"""``vllm``: a local video-language model in vLLM's offline engine (``vllm.LLM``), for GPU nodes.

Beside the OpenAI-compatible server path (``openai:MODEL@http://host:8000/v1``), this runs the engine
in the adapter's own process (a Ray replica with ``--executor ray``). It sends exactly what the
``hf`` adapter sends, built by the same code (``models/hf_inputs.build_messages``): images in part
order with their text parts, or a video decoded at ``VideoPart.frame_indices`` and passed with the same
metadata and ``do_sample_frames=False``; the prompt is the model's chat template applied by its own
processor to the same messages. For Qwen2.5-VL, whose temporal positions come from ``fps``, the
processor is given the true rate of the frames sent, as the ``hf`` adapter's ``second_per_grid_ts``.

Construction reads only the model config (the run plans on the driver, which may have no GPU); the
engine is created on the first call, in a worker thread. Each request carries its own sampling seed
(its settings' seed, else one derived from its trial id), so an answer does not depend on its batch.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from importlib.metadata import version
from typing import Any

from vidaudit.core.hashing import seed_from
from vidaudit.core.registry import missing_extra
from vidaudit.core.types import ErrorKind, GenerationSettings, ModelSpec, Request, Response, Usage
from vidaudit.models.base import ModelCallError
from vidaudit.models.hf_families import Family
from vidaudit.models.hf_inputs import build_messages
from vidaudit.models.local_engine import LocalEngine, load_config

DTYPES = ("auto", "bfloat16", "float16", "float32")
#: keyword options passed through to ``vllm.LLM`` (engine arguments that do not change the answer's inputs)
ENGINE_OPTIONS = (
    "tensor_parallel_size",
    "gpu_memory_utilization",
    "max_model_len",
    "max_num_seqs",
    "revision",
    "download_dir",
    "enforce_eager",
)


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise missing_extra("the vllm provider", "vllm", module)


def effective_fps(meta: dict[str, Any]) -> float:
    """The rate of the frames actually sent (1 / their spacing): what Qwen2.5-VL's temporal positions need."""
    idx, fps = meta["frames_indices"], float(meta["fps"])
    if len(idx) < 2:
        return fps
    return float(fps * (len(idx) - 1) / (idx[-1] - idx[0]))


def engine_input(processor: Any, family: Family, request: Request) -> dict[str, Any]:
    """The one prompt ``vllm.LLM.generate`` gets for ``request``: text, exact frames, metadata, no resampling.

    ``multi_modal_data["video"]`` holds ``(frames, metadata)`` pairs, vLLM's form for videos whose
    frames were chosen by the caller.
    """
    placeholders = [getattr(processor, a, None) or "" for a in ("image_token", "video_token")]
    messages, images, videos, metas = build_messages(request, family, placeholders)
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    data: dict[str, Any] = {}
    kwargs: dict[str, Any] = {}
    if images:
        data["image"] = images if len(images) > 1 else images[0]
    if videos:
        data["video"] = [(v, m) for v, m in zip(videos, metas, strict=True)]
        kwargs["do_sample_frames"] = False
        if family.seconds_per_grid:
            rates = [effective_fps(m) for m in metas]
            kwargs["fps"] = rates if len(rates) > 1 else rates[0]
    out: dict[str, Any] = {"prompt": prompt}
    if data:
        out["multi_modal_data"] = data
    if kwargs:
        out["mm_processor_kwargs"] = kwargs
    return out


def sampling_kwargs(settings: GenerationSettings, trial_id: str) -> dict[str, Any]:
    """``vllm.SamplingParams`` keywords for one request: greedy at temperature 0, always seeded."""
    kw: dict[str, Any] = {
        "seed": int(settings.seed if settings.seed is not None else seed_from("vllm", [trial_id])) % (2**63)
    }
    if settings.max_tokens is not None:
        kw["max_tokens"] = int(settings.max_tokens)
    if settings.temperature is not None:
        kw["temperature"] = float(settings.temperature)
        if settings.temperature and settings.top_p is not None:
            kw["top_p"] = float(settings.top_p)
    return kw


def response_from(
    text: str, prompt_tokens: int, output_tokens: int, finish_reason: str | None, latency: float, model_version: str
) -> Response:
    """A vidaudit ``Response`` from one vLLM completion (``stop`` / ``length`` kept as vLLM says)."""
    return Response(
        text=text,
        usage=Usage(input_tokens=int(prompt_tokens), output_tokens=int(output_tokens)),
        latency_s=latency,
        finish_reason=finish_reason,
        model_version=model_version,
        cost_usd=0.0,
    )


class VLLMOfflineAdapter(LocalEngine):
    """A local VLM in vLLM's offline engine behind the ``ModelAdapter`` protocol, batched."""

    provider = "vllm"
    example = "Qwen/Qwen2.5-VL-7B-Instruct"
    dtypes = DTYPES
    options_known = ENGINE_OPTIONS

    def __init__(
        self, spec: ModelSpec, *, dtype: str = "auto", batch_size: int = 8, max_images: int = 64, **options: Any
    ) -> None:
        _need("transformers")
        _need("vllm")
        self._check(spec, dtype, batch_size, options)
        config = load_config(self.provider, spec.name, revision=options.get("revision"))
        engine = f"vllm {version('vllm')}"
        self._open(
            spec, config, dtype=dtype, batch_size=batch_size, options=options, engine=engine, max_images=max_images
        )
        self._max_images = max_images
        self._llm: Any = None

    def _load(self) -> None:
        if self._llm is not None:
            return
        from transformers import AutoProcessor
        from vllm import LLM

        self._processor = AutoProcessor.from_pretrained(self.spec.name, revision=self._options.get("revision"))
        self._llm = LLM(
            model=self.spec.name,
            dtype=self._dtype,
            limit_mm_per_prompt={"image": self._max_images, "video": 1},
            **self._options,
        )

    async def generate(self, request: Request) -> Response:
        (response,) = await self.generate_batch([request])
        return response

    async def generate_batch(self, requests: list[Request]) -> list[Response]:
        return await asyncio.to_thread(self._run, list(requests))

    def _run(self, requests: list[Request]) -> list[Response]:
        from vllm import SamplingParams

        with self._lock:
            self._load()
            started = time.perf_counter()
            prompts = [engine_input(self._processor, self.family, r) for r in requests]
            params = [SamplingParams(**sampling_kwargs(r.settings, r.trial_id)) for r in requests]
            try:
                outputs = self._llm.generate(prompts, params, use_tqdm=False)
            except ValueError as e:  # vLLM's refusal of an input (too long, too many items)
                ids = ", ".join(r.trial_id for r in requests)
                raise ModelCallError(ErrorKind.BAD_REQUEST, f"vLLM rejected trials {ids}: {e}") from e
            latency = time.perf_counter() - started
        out = []
        for o in outputs:
            c = o.outputs[0]
            out.append(
                response_from(
                    c.text,
                    len(o.prompt_token_ids or ()),
                    len(c.token_ids),
                    c.finish_reason,
                    latency,
                    self.model_version,
                )
            )
        return out

    async def aclose(self) -> None:
        """Drop the engine (frees its GPU memory when the process keeps running)."""
        with self._lock:
            self._llm = None
