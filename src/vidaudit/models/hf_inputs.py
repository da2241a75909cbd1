"""Turn vidaudit ``Request``s into one padded processor batch for a transformers VLM.

Parts keep their order: text parts become text items, image parts become image items (the frames
the harness chose), a video part becomes one video item whose frames are decoded exactly at
``VideoPart.frame_indices`` and passed with explicit metadata and ``do_sample_frames=False``, so
the processor never resamples and the model's frame timestamps are ``index / source_fps``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vidaudit.core.errors import VidauditError
from vidaudit.core.types import ErrorKind, ImagePart, Request, TextPart, VideoPart
from vidaudit.models.base import ModelCallError
from vidaudit.models.hf_families import Family
from vidaudit.video.decode import read_frames


@dataclass
class PreparedBatch:
    """The processor's tensors for a batch, and the prompt strings they came from (for audit)."""

    inputs: Any  # transformers.BatchFeature
    prompts: list[str]
    n_frames: list[int]  # visual frames per request (images + decoded video frames)


def _bad(request: Request, message: str) -> ModelCallError:
    return ModelCallError(ErrorKind.BAD_REQUEST, f"trial {request.trial_id}: {message}")


def decode_video(part: VideoPart) -> np.ndarray:
    """Exactly the frames ``part.frame_indices`` of ``part.path`` as (k, H, W, 3) uint8 RGB."""
    return read_frames(part.path, list(part.frame_indices), stream=part.stream)


def video_metadata(part: VideoPart, frames: np.ndarray) -> dict[str, Any]:
    """What the processor needs to place the frames in time without resampling them."""
    return {
        "total_num_frames": int(part.n_frames),
        "fps": float(part.source_fps),
        "duration": float(part.duration_s),
        "frames_indices": [int(i) for i in part.frame_indices],
        "height": int(frames.shape[1]),
        "width": int(frames.shape[2]),
        "video_backend": "pyav",
    }


def _check_text(request: Request, text: str, placeholders: list[str]) -> None:
    for token in placeholders:
        if token and token in text:
            raise _bad(
                request,
                f"text part contains the processor's placeholder {token!r}, which would be "
                "expanded as a visual token; remove it from the prompt",
            )


def build_messages(
    request: Request,
    family: Family,
    placeholders: list[str],
) -> tuple[list[dict[str, Any]], list[np.ndarray], list[np.ndarray], list[dict[str, Any]]]:
    """Chat messages plus the request's images, videos and video metadata, all in part order."""
    content: list[dict[str, Any]] = []
    images: list[np.ndarray] = []
    videos: list[np.ndarray] = []
    metas: list[dict[str, Any]] = []
    for part in request.parts:
        if isinstance(part, TextPart):
            _check_text(request, part.text, placeholders)
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            img = np.asarray(part.image)
            if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
                raise _bad(
                    request,
                    f"image part for frame {part.frame_index} has shape {img.shape} and dtype "
                    f"{img.dtype}; expected (H, W, 3) uint8 RGB",
                )
            content.append({"type": "image"})
            images.append(img)
        elif isinstance(part, VideoPart):
            if not family.video:
                raise ModelCallError(
                    ErrorKind.UNSUPPORTED, f"{family.label} takes no native video; use a frames@K condition"
                )
            if not part.frame_indices:
                raise _bad(
                    request,
                    f"video part {part.path} lists no frame_indices; the hf adapter never "
                    "resamples, so resolve the frame sampling before the request",
                )
            try:
                frames = decode_video(part)
            except (VidauditError, ValueError) as e:
                raise _bad(request, f"cannot decode frames of {part.path}: {e}") from e
            content.append({"type": "video"})
            videos.append(frames)
            metas.append(video_metadata(part, frames))
        else:  # pragma: no cover - Part is a closed union
            raise _bad(request, f"unknown part type {type(part).__name__}")
    if not content:
        raise _bad(request, "request has no parts")
    messages: list[dict[str, Any]] = []
    if request.system:
        _check_text(request, request.system, placeholders)
        messages.append({"role": "system", "content": [{"type": "text", "text": request.system}]})
    messages.append({"role": "user", "content": content})
    return messages, images, videos, metas


def _seconds_per_grid(metas: list[dict[str, Any]], temporal_patch: int) -> list[float]:
    """Seconds spanned by one temporal patch, from the true spacing of the frames sent."""
    out = []
    for m in metas:
        idx, fps = m["frames_indices"], m["fps"]
        step = (idx[-1] - idx[0]) / (len(idx) - 1) / fps if len(idx) > 1 else 1.0 / fps
        out.append(temporal_patch * step)
    return out


def prepare_batch(processor: Any, family: Family, requests: list[Request]) -> PreparedBatch:
    """Apply the chat template to each request and run the processor once on the padded batch."""
    import torch

    placeholders = [getattr(processor, a, None) or "" for a in ("image_token", "video_token")]
    prompts: list[str] = []
    images: list[list[np.ndarray]] = []
    videos: list[np.ndarray] = []
    metas: list[dict[str, Any]] = []
    n_frames: list[int] = []
    for r in requests:
        messages, imgs, vids, mds = build_messages(r, family, placeholders)
        prompts.append(processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
        images.append(imgs)
        videos.extend(vids)
        metas.extend(mds)
        n_frames.append(len(imgs) + sum(len(v) for v in vids))
    kwargs: dict[str, Any] = {"text": prompts, "padding": True, "return_tensors": "pt"}
    if any(images):
        kwargs["images"] = images if family.nested_images else [im for group in images for im in group]
    if videos:
        kwargs.update(videos=videos, video_metadata=metas, do_sample_frames=False)
    try:
        inputs = processor(**kwargs)
    except (ValueError, TypeError) as e:
        ids = ", ".join(r.trial_id for r in requests)
        raise ModelCallError(ErrorKind.BAD_REQUEST, f"the processor rejected trials {ids}: {e}") from e
    if family.seconds_per_grid and videos and "second_per_grid_ts" in inputs:
        tp = int(getattr(processor.video_processor, "temporal_patch_size", 2))
        inputs["second_per_grid_ts"] = torch.tensor(_seconds_per_grid(metas, tp), dtype=torch.float32)
    return PreparedBatch(inputs=inputs, prompts=prompts, n_frames=n_frames)
