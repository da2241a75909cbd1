"""The white-box view of an ``hf`` model: one forward pass over exactly a scored trial's inputs.

The model is loaded by the black-box ``HFAdapter`` and the batch is its ``prepare`` (the same
``hf_inputs.prepare_batch``: frames, prompt, chat template, processor call), placed with its
``place_inputs``. Only then does the view add what the black box hides:

- ``encoder``: the vision tower's last hidden states, i.e. the merger's input (a forward pre-hook),
  restored to raster order (``window``) and shaped (T groups, S patches, D);
- ``projector``: the merger's output, restored likewise, (T, S / m^2, D_llm);
- ``vit``: chosen vision blocks' outputs, restored, (T, S, D);
- ``hidden``: chosen LLM layers (layer ``l`` = the output of decoder layer ``l``, i.e.
  ``hidden_states[l + 1]``; ``-1`` = the embeddings);
- ``attention``: per LLM layer and head, the softmax row of each query position, captured by the
  registered ``vidaudit_capture`` attention function (``capture``);
- ``logprobs``: the first generated token's log-distribution (natural log) at the answer position;
- ``norm_ratio``: per layer, mean L2 norm of visual-token hidden states over that of text tokens.
A family whose layout cannot serve a requested part raises a ConfigError naming the family and part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec, Request
from vidaudit.models.hf import HFAdapter
from vidaudit.tools.mech import capture, window
from vidaudit.tools.mech.spans import Spans, token_spans, visual_token_ids

#: families whose vision tower (blocks, merger, grid_thw, cu_seqlens) the view can open
VISION_FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")


@dataclass(frozen=True)
class Want:
    """What one pass should keep (everything else is dropped on the device)."""

    encoder: bool = False
    projector: bool = False
    vit_layers: tuple[int, ...] = ()
    llm_layers: tuple[int, ...] = ()
    attention: bool = False
    vision_attention: bool = False


@dataclass
class ClipView:
    spans: Spans
    logprobs: np.ndarray
    norm_ratio: np.ndarray  # (n_layers + 1,): embeddings, then each layer
    encoder: np.ndarray | None = None
    projector: np.ndarray | None = None
    vit: dict[int, np.ndarray] = field(default_factory=dict)
    hidden: dict[int, np.ndarray] = field(default_factory=dict)
    attention: dict[int, np.ndarray] = field(default_factory=dict)  # layer -> (heads, seq) of the answer row
    vision_cross: dict[int, tuple[float, int]] = field(default_factory=dict)  # layer -> (cross mass sum, tokens)
    cu_seqlens: dict[int, list[int]] = field(default_factory=dict)
    grid_thw: list[list[int]] = field(default_factory=list)


class WhiteBox:
    """An ``hf`` model opened for probing; ``view(request, want)`` runs one request."""

    def __init__(self, path: str, *, device: str = "cpu", dtype: str = "float32") -> None:
        self.adapter = HFAdapter(ModelSpec(provider="hf", name=str(path)), device=device, dtype=dtype)
        self.family = self.adapter.family
        self.model = self.adapter.model
        self.processor = self.adapter.processor
        self.model.set_attn_implementation(capture.register())
        self.config = self.model.config
        text = getattr(self.config, "text_config", self.config)
        self.n_layers = int(text.num_hidden_layers)
        self.visual = getattr(self.model.model, "visual", None) if self.family.model_type in VISION_FAMILIES else None
        self.vit_depth = len(self.visual.blocks) if self.visual is not None else 0
        self._layers = self._decoder_layers()
        for i, layer in enumerate(self._layers):
            setattr(layer.self_attn, capture.TAG, ("llm", i))
        if self.visual is not None:
            for i, blk in enumerate(self.visual.blocks):
                setattr(blk.attn, capture.TAG, ("vision", i))
        self.visual_ids = visual_token_ids(self.config)
        self.model_version = self.adapter.model_version

    def _decoder_layers(self) -> Any:
        for name in ("language_model", "text_model"):
            lm = getattr(self.model.model, name, None)
            if lm is not None and hasattr(lm, "layers"):
                return lm.layers
        raise ConfigError(f"{self.family.label}: cannot find the language model's decoder layers")

    # ------------------------------------------------------------------ checks

    def require_vision(self, probe: str) -> None:
        """A ConfigError naming the family and probe when the vision tower cannot be opened."""
        if self.visual is None:
            raise ConfigError(
                f"{self.family.label} ({self.family.model_type}) cannot serve {probe}: the white-box "
                f"view opens the vision tower of {', '.join(VISION_FAMILIES)} only"
            )

    def check_layers(self, layers: tuple[int, ...], what: str = "LLM") -> tuple[int, ...]:
        n = self.n_layers if what == "LLM" else self.vit_depth
        low = -1 if what == "LLM" else 0
        for layer in layers:
            if not low <= layer < n:
                raise ConfigError(
                    f"{what} layer {layer} is out of range: {self.family.label} has {n} {what} layers "
                    f"(valid: {low}..{n - 1}{'; -1 is the embeddings' if low < 0 else ''})"
                )
        return tuple(layers)

    # ------------------------------------------------------------------ one pass

    def view(self, request: Request, want: Want = Want()) -> ClipView:
        import torch

        if (want.encoder or want.projector or want.vit_layers or want.vision_attention) and self.visual is None:
            self.require_vision("the encoder/projector/vision-layer stages")
        self.check_layers(want.llm_layers)
        self.check_layers(want.vit_layers, "vision")
        batch = self.adapter.prepare([request])
        inputs = self.adapter.place_inputs(batch)
        ids = batch.inputs["input_ids"][0]
        prompt_text = next((p.text for p in reversed(request.parts) if hasattr(p, "text")), "")
        grid = batch.inputs.get("video_grid_thw", batch.inputs.get("image_grid_thw"))
        merge = int(getattr(self.visual, "spatial_merge_size", 1)) if self.visual is not None else 1
        spans = token_spans(
            self.processor.tokenizer,
            ids.tolist(),
            batch.prompts[0],
            prompt_text,
            self.visual_ids,
            grid_thw=grid if self.visual is not None else None,
            merge=merge,
        )
        hooks, grabbed = self._hooks(want, grid)
        rec = capture.Recorder(
            query_positions=[spans.answer] if want.attention else (),
            vision_reduce=grabbed["reduce"] if want.vision_attention else None,
        )
        try:
            with torch.inference_mode(), capture.recording(rec):
                out = self.model(**inputs, output_hidden_states=True, use_cache=False, logits_to_keep=1)
        finally:
            for h in hooks:
                h.remove()
        logprobs = torch.log_softmax(out.logits[0, -1].float(), dim=-1).cpu().numpy()
        hs = out.hidden_states
        vis = torch.as_tensor(spans.video, device=hs[0].device)
        txt = torch.as_tensor(spans.span("text"), device=hs[0].device)
        ratio = np.array(
            [float(h[0, vis].float().norm(dim=-1).mean() / h[0, txt].float().norm(dim=-1).mean()) for h in hs]
        )
        view = ClipView(
            spans=spans, logprobs=logprobs, norm_ratio=ratio, grid_thw=grid.tolist() if grid is not None else []
        )
        view.hidden = {layer: hs[layer + 1][0].float().cpu().numpy() for layer in want.llm_layers}
        view.attention = {layer: a[0, :, 0].numpy() for layer, a in rec.llm.items()}
        view.encoder, view.projector, view.vit = grabbed.get("encoder"), grabbed.get("projector"), grabbed["vit"]
        view.cu_seqlens = grabbed["cu"]
        view.vision_cross = {
            layer: (float(sum(r[0] for r in rs)), int(sum(r[1] for r in rs))) for layer, rs in rec.vision.items()
        }
        return view

    def _hooks(self, want: Want, grid: Any) -> tuple[list[Any], dict[str, Any]]:
        """Forward hooks on the vision tower; what they grab is restored to raster order, (T, S, D)."""
        import torch

        grabbed: dict[str, Any] = {"vit": {}, "cu": {}, "reduce": None}
        if self.visual is None or grid is None:
            return [], grabbed
        vis = self.visual
        unit = int(vis.spatial_merge_size) ** 2
        t_groups = int(grid[:, 0].sum())
        win = window.window_index(vis, grid)
        index = win[0] if win is not None else None

        def raster(x: Any, per_unit: int) -> np.ndarray:
            x = x.detach()
            if index is not None:
                x = window.to_raster_order(x, index.to(x.device), per_unit)
            return x.float().cpu().numpy().reshape(t_groups, -1, x.shape[-1])

        hooks = []
        if want.encoder:
            hooks.append(
                vis.merger.register_forward_pre_hook(
                    lambda _m, args: grabbed.__setitem__("encoder", raster(args[0], unit))
                )
            )
        if want.projector:
            hooks.append(
                vis.merger.register_forward_hook(lambda _m, _a, out: grabbed.__setitem__("projector", raster(out, 1)))
            )
        for layer in want.vit_layers:
            hooks.append(
                vis.blocks[layer].register_forward_hook(
                    lambda _m, _a, out, layer=layer: grabbed["vit"].__setitem__(layer, raster(out, unit))
                )
            )
        for i, blk in enumerate(vis.blocks):
            hooks.append(
                blk.register_forward_pre_hook(
                    lambda _m, _a, kw, i=i: grabbed["cu"].__setitem__(i, [int(v) for v in kw["cu_seqlens"].tolist()]),
                    with_kwargs=True,
                )
            )
        if want.vision_attention:
            n_patch = [int(h) * int(w) for _, h, w in grid.tolist() for _ in range(1)]
            group = torch.cat(
                [
                    torch.arange(int(t)).repeat_interleave(n) + off
                    for (t, _, _), n, off in zip(
                        grid.tolist(), n_patch, np.cumsum([0] + [int(r[0]) for r in grid.tolist()]), strict=False
                    )
                ]
            )
            if index is not None:  # the group of each position in window order
                group = window.to_window_order(group[:, None], index, unit)[:, 0]

            def reduce(_layer: int, offset: int, probs: Any) -> tuple[float, int]:
                g = group[offset : offset + probs.shape[-1]].to(probs.device)
                cross = (probs[0] * (g[None, :] != g[:, None])[None]).sum(-1).mean(0)  # per query, over heads
                return float(cross.sum()), int(cross.numel())

            grabbed["reduce"] = reduce
        return hooks, grabbed
