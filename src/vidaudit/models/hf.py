"""``hf``: local transformers video-language models (Qwen2.5-VL, Qwen3-VL, SmolVLM2/Idefics3, LLaVA-OneVision).

``spec.name`` is a local directory or a hub id, loaded with the real ``from_pretrained``. The family
comes from the config's ``model_type``. Frames are sent exactly as the request lists them: images
in order with their text parts, or a video decoded at ``VideoPart.frame_indices`` with explicit
metadata and ``do_sample_frames=False`` (``Response.model_version`` ends in ``frames=exact``).
Blocking torch work runs in a worker thread, one batch at a time, so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from vidaudit.core.errors import ConfigError
from vidaudit.core.hashing import seed_from
from vidaudit.core.registry import missing_extra
from vidaudit.core.types import ErrorKind, GenerationSettings, ModelSpec, Request, Response, Usage
from vidaudit.models.base import ModelCallError
from vidaudit.models.hf_inputs import PreparedBatch, prepare_batch
from vidaudit.models.local_engine import LocalEngine, load_config

DTYPES = ("float32", "bfloat16", "float16", "auto")
#: keyword options passed through to ``from_pretrained``
LOAD_OPTIONS = ("attn_implementation", "revision", "local_files_only", "cache_dir")


def _import_torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as e:
        raise missing_extra("the hf provider", "hf", getattr(e, "name", None)) from None
    return torch


def _is_oom(err: BaseException) -> bool:
    import torch

    if isinstance(err, torch.OutOfMemoryError):
        return True
    text = str(err).lower()
    return isinstance(err, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _hub_options(options: dict[str, Any]) -> dict[str, Any]:
    """Where transformers looks for the files (a revision, the cache, offline only)."""
    return {k: options[k] for k in ("revision", "local_files_only", "cache_dir") if k in options}


class HFAdapter(LocalEngine):
    """A local transformers VLM behind the ``ModelAdapter`` protocol, with real batched generation."""

    provider = "hf"
    example = "Qwen/Qwen2.5-VL-3B-Instruct"
    dtypes = DTYPES
    options_known = LOAD_OPTIONS

    def __init__(
        self, spec: ModelSpec, *, device: str = "cpu", dtype: str = "float32", batch_size: int = 1, **options: Any
    ) -> None:
        torch = _import_torch()
        self._check(spec, dtype, batch_size, options)
        try:
            self._device = torch.device(device)
        except RuntimeError as e:
            raise ConfigError(f"hf device {device!r} is not a torch device (e.g. cpu, cuda, cuda:1): {e}") from e
        if self._device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"hf device {device!r} asked for CUDA but torch sees no GPU; use device='cpu'")
        import transformers

        config = load_config(self.provider, spec.name, **_hub_options(options))
        engine = f"transformers {transformers.__version__}"
        self._open(spec, config, dtype=dtype, batch_size=batch_size, options=options, engine=engine)
        self._model: Any = None

    # ------------------------------------------------------------------ loading

    def _load(self) -> None:
        """Load processor and model once (in the worker thread)."""
        if self._model is not None:
            return
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        processor = AutoProcessor.from_pretrained(self.spec.name, **_hub_options(self._options))
        processor.tokenizer.padding_side = "left"
        kwargs = _hub_options(self._options)
        if "attn_implementation" in self._options:
            kwargs["attn_implementation"] = self._options["attn_implementation"]
        dtype = self._dtype if self._dtype == "auto" else getattr(torch, self._dtype)
        model = AutoModelForImageTextToText.from_pretrained(self.spec.name, dtype=dtype, **kwargs)
        self._model = model.to(self._device).eval()
        self._processor = processor

    @property
    def processor(self) -> Any:
        """The loaded processor (loads the model on first use)."""
        with self._lock:
            self._load()
        return self._processor

    @property
    def model(self) -> Any:
        """The loaded torch model (loads it on first use): the white-box probes run it on ``prepare``'s batch."""
        with self._lock:
            self._load()
        return self._model

    # ------------------------------------------------------------------ generation

    def prepare(self, requests: list[Request]) -> PreparedBatch:
        """The processor batch ``generate_batch`` would run: prompts and tensors, for audit and tests."""
        return prepare_batch(self.processor, self.family, list(requests))

    async def generate(self, request: Request) -> Response:
        (response,) = await self.generate_batch([request])
        return response

    async def generate_batch(self, requests: list[Request]) -> list[Response]:
        """Generate for many requests: grouped by settings, run in chunks of ``batch_size``, order kept."""
        requests = list(requests)
        out: list[Response | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.settings.model_dump_json(), *self._batch_key(r)), []).append(i)
        bs = self.capabilities.batch_size
        for idx in groups.values():
            for k in range(0, len(idx), bs):
                chunk = idx[k : k + bs]
                responses = await asyncio.to_thread(self._run_batch, [requests[i] for i in chunk])
                for i, resp in zip(chunk, responses, strict=True):
                    out[i] = resp
        return [r for r in out if r is not None]

    def _batch_key(self, request: Request) -> tuple[Any, ...]:
        """Requests that can share one processor call: processors mis-handle images mixed with videos,
        and SmolVLM's prompt states the padded frame count of a batch, so its videos batch by length."""
        videos = request.videos
        if not videos:
            return ("images",)
        lengths = tuple(len(v.frame_indices) for v in videos) if self.family.nested_images else ()
        return ("video", lengths)

    def _run_batch(self, requests: list[Request]) -> list[Response]:
        import torch

        with self._lock:
            self._load()
            started = time.perf_counter()
            batch = prepare_batch(self._processor, self.family, requests)
            settings = requests[0].settings
            try:
                with torch.inference_mode():
                    inputs = self.place_inputs(batch)
                    torch.manual_seed(self._seed(requests, settings))
                    sequences = self._model.generate(**inputs, **self._generation_kwargs(settings))
            except Exception as e:
                if _is_oom(e):
                    raise self._oom_error(e, len(requests)) from e
                raise
            latency = time.perf_counter() - started
            return self._responses(batch, sequences.cpu(), latency)

    def place_inputs(self, batch: PreparedBatch) -> Any:
        """The batch's tensors on the model's device, pixels at the model's dtype (shared with ``vidaudit.tools.mech``)."""
        inputs = batch.inputs.to(self._device)
        if self._dtype != "float32":
            for key in ("pixel_values", "pixel_values_videos"):
                if key in inputs:
                    inputs[key] = inputs[key].to(self._model.dtype)
        return inputs

    def _seed(self, requests: list[Request], settings: GenerationSettings) -> int:
        """The request's seed, else one derived from the batch's trial ids (never an unseeded draw)."""
        if settings.seed is not None:
            return int(settings.seed) % (2**63)
        return seed_from("hf", [r.trial_id for r in requests]) % (2**63)

    def _generation_kwargs(self, s: GenerationSettings) -> dict[str, Any]:
        tok = self._processor.tokenizer
        kw: dict[str, Any] = {"pad_token_id": tok.pad_token_id}
        if s.max_tokens is not None:  # None (provider defaults): the model's own generation_config decides
            kw["max_new_tokens"] = int(s.max_tokens)
        if s.temperature is None:  # provider defaults: the model's generation_config samples as it says
            return kw
        if not s.temperature:
            kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kw.update(do_sample=True, temperature=float(s.temperature))
            if s.top_p is not None:
                kw["top_p"] = float(s.top_p)
        return kw

    def _eos_ids(self) -> set[int]:
        eos = self._model.generation_config.eos_token_id
        ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self._processor.tokenizer.eos_token_id is not None:
            ids.add(self._processor.tokenizer.eos_token_id)
        return ids

    def _responses(self, batch: PreparedBatch, sequences: Any, latency: float) -> list[Response]:
        prompt_len = batch.inputs["input_ids"].shape[1]
        input_tokens = batch.inputs["attention_mask"].sum(dim=1).tolist()
        eos = self._eos_ids()
        out = []
        for row, n_in in zip(sequences[:, prompt_len:].tolist(), input_tokens, strict=True):
            stop = next((j for j, t in enumerate(row) if t in eos), None)
            kept = row if stop is None else row[: stop + 1]
            text = self._processor.tokenizer.decode(kept, skip_special_tokens=True)
            out.append(
                Response(
                    text=text,
                    usage=Usage(input_tokens=int(n_in), output_tokens=len(kept)),
                    latency_s=latency,
                    finish_reason="length" if stop is None else "stop",
                    model_version=self.model_version,
                    cost_usd=0.0,
                )
            )
        return out

    def _oom_error(self, err: BaseException, n: int) -> ModelCallError:
        import torch

        if self._device.type == "cuda":
            torch.cuda.empty_cache()
        if n > 1:
            return ModelCallError(
                ErrorKind.TRANSIENT,
                f"out of memory on {self._device} for a batch of {n}; "
                f"retrying alone may fit, or lower batch_size: {err}",
            )
        return ModelCallError(
            ErrorKind.BAD_REQUEST,
            f"out of memory on {self._device} for a single request; "
            f"send fewer or smaller frames, or use a larger device: {err}",
        )

    async def aclose(self) -> None:
        """Drop the model and free device memory (waits for a running batch, off the event loop)."""
        await asyncio.to_thread(self._unload)

    def _unload(self) -> None:
        with self._lock:
            self._model = None
            self._processor = None
        if self._device.type == "cuda":
            import torch

            torch.cuda.empty_cache()
