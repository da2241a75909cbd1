"""Qwen2.5-VL's window reordering, read from transformers' own ``get_vision_window_index``.

Qwen2.5-VL's vision tower permutes merge units (``m x m`` patches) into window order before its blocks
and un-permutes only the merger's output. Hidden states captured inside the tower (a block's output, the
merger's input) are therefore in window order and must be restored to temporal-spatial (raster) order
before any pooling over space or grouping by time. Qwen2-VL and Qwen3-VL do not reorder: identity.
"""

from __future__ import annotations

from typing import Any


def window_index(visual: Any, grid_thw: Any) -> tuple[Any, Any] | None:
    """(window_index over merge units, cu_window_seqlens over patches) for a windowed tower, else None."""
    if not hasattr(visual, "window_size") or not hasattr(visual, "fullatt_block_indexes"):
        return None
    from transformers.vision_utils import get_vision_window_index

    return get_vision_window_index(
        grid_thw,
        spatial_merge_size=visual.spatial_merge_size,
        window_size=visual.window_size,
        patch_size=visual.patch_size,
    )


def to_window_order(x: Any, index: Any, unit: int) -> Any:
    """Raster -> window order, as the tower does (``x``: (seq, D), ``unit`` rows per merge unit)."""
    n = x.shape[0]
    return x.reshape(n // unit, unit, -1)[index].reshape(n, -1)


def to_raster_order(x: Any, index: Any, unit: int) -> Any:
    """Window -> raster order: the inverse permutation (``argsort(index)``), as the tower applies to its merger output."""
    import torch

    n = x.shape[0]
    return x.reshape(n // unit, unit, -1)[torch.argsort(index)].reshape(n, -1)
