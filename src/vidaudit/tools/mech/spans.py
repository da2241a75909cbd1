"""Token spans of one processed request, located from the processor's own outputs.

Visual positions are where ``input_ids`` holds the model's image/video token ids; their temporal groups
come from ``video_grid_thw`` / ``image_grid_thw`` (t-major, ``h/m * w/m`` tokens per group). The text
spans are found by aligning the rendered chat prompt (tokenized with offsets, each placeholder one token)
with ``input_ids``: the tokens before the first placeholder must equal the head of ``input_ids`` and the
tokens after the last one its tail, else it is a ConfigError (nothing is counted by guess). Spans are
disjoint and cover the row: ``system`` (the template preamble up to the first visual token: the system
turn, the user header, a vision-start marker), ``video``, ``prompt`` (tokens overlapping the request's
last text part: the question / claim), ``other`` (timestamps, end-of-turn and assistant header). The
answer position is the row's last token: its logits are the first generated token's distribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vidaudit.core.errors import ConfigError

SPANS = ("system", "video", "prompt", "other")


@dataclass(frozen=True)
class Spans:
    """Positions (into the unpadded row) of each span, the visual groups, and the answer position."""

    system: np.ndarray
    video: np.ndarray
    prompt: np.ndarray
    other: np.ndarray
    groups: tuple[np.ndarray, ...]  # video positions per temporal group (empty when the family gives no grid)
    answer: int
    length: int

    def span(self, name: str) -> np.ndarray:
        if name == "text":
            return np.sort(np.concatenate([self.prompt, self.other]))
        return getattr(self, name)


def visual_token_ids(config: Any) -> set[int]:
    """The ids the processor expands images and videos into, from the model config."""
    ids = set()
    for name in ("image_token_id", "video_token_id", "image_token_index", "video_token_index"):
        v = getattr(config, name, None)
        if isinstance(v, int):
            ids.add(v)
    if not ids:
        raise ConfigError(f"the config of model_type {config.model_type!r} names no image/video token id")
    return ids


def _grid_groups(video_pos: np.ndarray, grid_thw: Any, merge: int) -> tuple[np.ndarray, ...]:
    sizes = []
    for t, h, w in np.asarray(grid_thw).tolist():
        sizes += [int(h) * int(w) // merge**2] * int(t)
    if sum(sizes) != len(video_pos):
        raise ConfigError(
            f"the processor's grid_thw implies {sum(sizes)} visual tokens but input_ids holds "
            f"{len(video_pos)}; the processor and model disagree"
        )
    return tuple(np.split(video_pos, np.cumsum(sizes)[:-1]))


def token_spans(
    tokenizer: Any,
    input_ids: Any,
    rendered: str,
    prompt_text: str,
    visual_ids: set[int],
    *,
    grid_thw: Any = None,
    merge: int = 1,
) -> Spans:
    """The spans of one unpadded row ``input_ids`` (1-D) rendered from the chat string ``rendered``."""
    ids = np.asarray(input_ids).astype(np.int64)
    is_vis = np.isin(ids, list(visual_ids))
    video = np.flatnonzero(is_vis)
    if not len(video):
        raise ConfigError("the processed request holds no visual tokens; a probe needs a video or images")
    enc = tokenizer(rendered, add_special_tokens=False, return_offsets_mapping=True)
    raw = np.asarray(enc["input_ids"], dtype=np.int64)
    offsets = enc["offset_mapping"]
    raw_vis = np.flatnonzero(np.isin(raw, list(visual_ids)))
    if not len(raw_vis):
        raise ConfigError(
            "the rendered prompt holds no visual placeholder token; the chat template does not mark where the frames go"
        )
    head, tail = raw[: raw_vis[0]], raw[raw_vis[-1] + 1 :]
    if not (np.array_equal(ids[: len(head)], head) and (not len(tail) or np.array_equal(ids[-len(tail) :], tail))):
        raise ConfigError(
            "cannot align the rendered prompt with the processor's input_ids (the text around "
            "the visual tokens tokenizes differently); the token spans cannot be located"
        )
    first = int(video[0])
    c0 = rendered.rfind(prompt_text) if prompt_text else -1
    tail_start = len(ids) - len(tail)
    prompt = []
    if c0 >= 0:
        c1 = c0 + len(prompt_text)
        for k in range(len(tail)):
            s, e = offsets[raw_vis[-1] + 1 + k]
            if s < c1 and e > c0:
                prompt.append(tail_start + k)
    prompt_arr = np.asarray(prompt, dtype=np.int64)
    if prompt_text and not len(prompt_arr):
        raise ConfigError(
            "the prompt text is not after the last visual token in the rendered prompt; the "
            "prompt span cannot be located"
        )
    system = np.arange(first, dtype=np.int64)
    taken = np.zeros(len(ids), bool)
    taken[system] = True
    taken[video] = True
    taken[prompt_arr] = True
    other = np.flatnonzero(~taken)
    groups = _grid_groups(video, grid_thw, merge) if grid_thw is not None else ()
    return Spans(
        system=system, video=video, prompt=prompt_arr, other=other, groups=groups, answer=len(ids) - 1, length=len(ids)
    )
