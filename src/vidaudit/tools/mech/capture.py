"""Attention capture through transformers' attention-function registry, not ``output_attentions``.

``output_attentions=True`` forces eager attention on every layer and materialises every head's full
``seq x seq`` matrix. Instead ``vidaudit_capture`` is registered with ``AttentionInterface`` (and its mask
with ``AttentionMaskInterface``, as eager's additive mask): it computes the attention output with SDPA,
exactly as the model would, and, only for modules tagged by the white-box view and only while a
``Recorder`` is active, the softmax rows of the chosen query positions (LLM layers) or a reduction of
each packed-sequence chunk (vision blocks). Nothing else is kept.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

CAPTURE = "vidaudit_capture"
_ACTIVE: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("vidaudit_recorder", default=None)
TAG = "_vidaudit_tag"


def _repeat_kv(x: Any, groups: int) -> Any:
    if groups == 1:
        return x
    b, h, n, d = x.shape
    return x[:, :, None].expand(b, h, groups, n, d).reshape(b, h * groups, n, d)


def attention_rows(
    module: Any, query: Any, key: Any, attention_mask: Any, scaling: float | None, rows: Sequence[int] | None
) -> Any:
    """Softmax attention weights (float32) of query ``rows`` (all when None): eager's arithmetic."""
    import torch

    q = query if rows is None else query[:, :, list(rows)]
    k = _repeat_kv(key, query.shape[1] // key.shape[1])
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    scores = torch.matmul(q.float(), k.float().transpose(2, 3)) * scale
    if attention_mask is not None:
        mask = attention_mask if rows is None else attention_mask[:, :, list(rows)]
        if mask.dtype == torch.bool:
            mask = torch.zeros_like(mask, dtype=torch.float32).masked_fill(~mask, torch.finfo(torch.float32).min)
        scores = scores + mask[..., : k.shape[2]].float()
    elif getattr(module, "is_causal", False) and query.shape[2] > 1:
        n_q, n_k = query.shape[2], k.shape[2]
        pos = torch.arange(n_k - n_q, n_k, device=q.device)
        pos = pos if rows is None else pos[list(rows)]
        causal = torch.arange(n_k, device=q.device)[None, :] > pos[:, None]
        scores = scores.masked_fill(causal[None, None], torch.finfo(torch.float32).min)
    return torch.softmax(scores, dim=-1)


@dataclass
class Recorder:
    """What one forward pass keeps: LLM rows per layer, and per-chunk reductions of vision attention."""

    #: query positions (in the padded batch row) whose LLM attention rows are kept
    query_positions: Sequence[int] = ()
    #: called as ``vision_reduce(layer, chunk_offset, probs)`` for each vision chunk; its result is kept
    vision_reduce: Callable[[int, int, Any], Any] | None = None
    llm: dict[int, Any] = field(default_factory=dict)  # layer -> (b, heads, n_query, kv) float32
    vision: dict[int, list[Any]] = field(default_factory=dict)  # layer -> reductions, one per chunk
    _offsets: dict[int, int] = field(default_factory=dict)

    def record(self, tag: tuple[str, int], module: Any, query: Any, key: Any, mask: Any, scaling: float | None) -> None:
        kind, layer = tag
        if kind == "llm" and self.query_positions:
            self.llm[layer] = attention_rows(module, query, key, mask, scaling, self.query_positions).cpu()
        elif kind == "vision" and self.vision_reduce is not None:
            probs = attention_rows(module, query, key, mask, scaling, None)
            off = self._offsets.get(layer, 0)
            self.vision.setdefault(layer, []).append(self.vision_reduce(layer, off, probs))
            self._offsets[layer] = off + query.shape[2]


def capture_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """The registered attention function: SDPA's output, plus a record for tagged modules."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    rec = _ACTIVE.get()
    tag = getattr(module, TAG, None)
    if rec is not None and tag is not None:
        rec.record(tag, module, query, key, attention_mask, scaling)
    return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)


_registered = False


def register() -> str:
    """Register ``vidaudit_capture`` with transformers once; returns its name for ``set_attn_implementation``."""
    global _registered
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, eager_mask

        AttentionInterface.register(CAPTURE, capture_attention)
        AttentionMaskInterface.register(CAPTURE, eager_mask)
        _registered = True
    return CAPTURE


@contextmanager
def recording(rec: Recorder) -> Iterator[Recorder]:
    """Make ``rec`` the active recorder for the forward passes inside the block."""
    token = _ACTIVE.set(rec)
    try:
        yield rec
    finally:
        _ACTIVE.reset(token)
