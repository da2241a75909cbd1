"""What a call costs, and roughly what a request will weigh in tokens before it is sent.

Prices come from the shipped ``prices.yaml`` (every entry marked ``estimate: true`` with the date it
was read) and can be overridden by a user YAML of the same shape. ``cost_usd`` is None when the
model has no price: an unknown cost is reported as unknown, never as zero. Adapters that run on this machine report a cost of 0 themselves.

Token conventions (the adapters fill ``Usage`` this way for every provider):
``input_tokens`` counts every prompt token *including* cached ones; ``cached_tokens`` is the cached
subset; ``output_tokens`` counts every generated token *including* reasoning ("thinking") tokens;
``reasoning_tokens`` is that subset. All three providers bill reasoning as output.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec, Usage
from vidaudit.models.keyed_table import match, parse_entries


class Price(BaseModel):
    """USD per million tokens for one model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    estimate: bool = True
    as_of: str | None = None
    source: str | None = None

    def cost(self, usage: Usage) -> float:
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return (
            (usage.input_tokens - cached) * self.input + cached * cached_price + usage.output_tokens * self.output
        ) / 1e6


@dataclass(frozen=True)
class PriceTable:
    """Prices keyed ``provider:name``; a key ending in ``*`` is a prefix pattern (longest wins)."""

    prices: dict[str, Price]

    def lookup(self, spec: ModelSpec) -> Price | None:
        found = match(self.prices, spec)
        return found[1] if found is not None else None

    def merged(self, other: PriceTable) -> PriceTable:
        return PriceTable({**self.prices, **other.prices})


def _parse(raw: Any, where: str) -> PriceTable:
    return PriceTable(
        parse_entries(
            raw,
            where,
            "models",
            Price,
            needs="a price file needs a top-level 'models:' mapping of "
            "'provider:name' -> {input, output, cached_input}; see vidaudit/models/prices.yaml",
            bad_key=lambda key: f"price key {key!r} must be 'provider:name', e.g. 'openai:gpt-4o'",
            bad_entry=lambda key, field, problem: (
                f"price {key!r}: {field or 'entry'}: {problem} (prices are USD per million tokens, >= 0)"
            ),
        )
    )


def _read_yaml(text: str, where: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: not valid YAML ({e}); fix the file") from e


@lru_cache(maxsize=1)
def default_prices() -> PriceTable:
    """The shipped estimates."""
    text = resources.files("vidaudit.models").joinpath("prices.yaml").read_text(encoding="utf-8")
    return _parse(_read_yaml(text, "prices.yaml"), "vidaudit/models/prices.yaml")


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The shipped table, overridden key by key by the user's YAML at ``path`` when given."""
    table = default_prices()
    if path is None:
        return table
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"price file not found: {p}; pass an existing YAML file or omit it to use the defaults")
    return table.merged(_parse(_read_yaml(p.read_text(encoding="utf-8"), str(p)), str(p)))


def is_local_endpoint(base_url: str | None) -> bool:
    """A base_url on this machine or a private network: a self-hosted server, not a bill."""
    if not base_url:
        return False
    host = urlsplit(base_url if "://" in base_url else f"http://{base_url}").hostname or ""
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private


def cost_usd(spec: ModelSpec, usage: Usage, table: PriceTable | None = None) -> float | None:
    """USD for one API call; 0 for self-hosted servers, None when the price is unknown.

    Adapters that run on this machine (baselines, ``hf``) report their own cost of 0 and never ask.
    """
    if is_local_endpoint(spec.base_url):
        return 0.0
    price = (table or default_prices()).lookup(spec)
    return None if price is None else price.cost(usage)


# --------------------------------------------------------------------------- token estimates

#: Gemini: each sampled video frame and each small image is 258 tokens at the default media resolution
#: (the docs' "263 tokens per second" of video at 1 fps is 258 for the frame plus timestamp overhead);
#: images larger than 384 px on a side are cut into 768x768 tiles of 258 tokens each.
GEMINI_TOKENS_PER_FRAME = 258
#: OpenAI (GPT-4o family, detail=high): fit in 2048x2048, shortest side to 768, 170 per 512 px tile + 85.
OPENAI_BASE, OPENAI_PER_TILE = 85, 170
#: Anthropic: about (width * height) / 750 tokens after fitting the long edge to 1568 px.
ANTHROPIC_PIXELS_PER_TOKEN, ANTHROPIC_MAX_EDGE = 750, 1568
#: Open models served by vLLM/SGLang (Qwen2.5/3-VL style): one token per 28x28 patch; video frames are
#: merged in pairs along time.
OPEN_PATCH, OPEN_TEMPORAL_MERGE = 28, 2
CHARS_PER_TOKEN = 4


def _openai_image(w: int, h: int) -> int:
    if w <= 0 or h <= 0:
        return 0
    scale = min(1.0, 2048 / max(w, h))
    fw, fh = w * scale, h * scale
    if min(fw, fh) > 768:
        s = 768 / min(fw, fh)
        fw, fh = fw * s, fh * s
    return OPENAI_BASE + OPENAI_PER_TILE * math.ceil(fw / 512) * math.ceil(fh / 512)


def _gemini_image(w: int, h: int) -> int:
    if w <= 384 and h <= 384:
        return GEMINI_TOKENS_PER_FRAME
    return GEMINI_TOKENS_PER_FRAME * math.ceil(w / 768) * math.ceil(h / 768)


def _anthropic_image(w: int, h: int) -> int:
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(w, h, 1))
    return math.ceil((w * scale) * (h * scale) / ANTHROPIC_PIXELS_PER_TOKEN)


def _open_image(w: int, h: int) -> int:
    return max(4, math.ceil(w / OPEN_PATCH) * math.ceil(h / OPEN_PATCH))


_PROVIDER_ALIASES = {
    "openai": "openai",
    "gemini": "gemini",
    "anthropic": "anthropic",
    "open": "open",
    "openai-compat": "open",
    "vllm": "open",
    "sglang": "open",
    "hf": "open",
}


def estimate_request_tokens(
    n_images: int,
    width: int,
    height: int,
    text_chars: int,
    video_seconds: float = 0.0,
    video_fps: float = 0.0,
    provider: str = "openai",
) -> int:
    """Rough input tokens of a request, for budgets and for refusing a condition before it runs.

    Rules of thumb (provider docs): Gemini ~258 per frame or small image; OpenAI 85 + 170 per 512 px
    tile; Anthropic (w*h)/750; open models one per 28x28 patch (video frames merged in pairs);
    text ~4 characters per token. Native video is counted as ``video_seconds * video_fps`` frames of
    ``width`` x ``height``; providers without native video see those frames as images.
    """
    kind = _PROVIDER_ALIASES.get(provider)
    if kind is None:
        raise ConfigError(f"no token rule for provider {provider!r}; use one of {sorted(_PROVIDER_ALIASES)}")
    if min(n_images, width, height, text_chars) < 0 or video_seconds < 0 or video_fps < 0:
        raise ConfigError("token estimate inputs must be >= 0")
    per_image = (
        {"openai": _openai_image, "gemini": _gemini_image, "anthropic": _anthropic_image, "open": _open_image}[kind](
            width, height
        )
        if width and height
        else 0
    )
    n_frames = math.ceil(video_seconds * video_fps - 1e-9) if video_seconds and video_fps else 0
    if kind == "gemini":
        video = n_frames * GEMINI_TOKENS_PER_FRAME
    elif kind == "open":
        video = math.ceil(n_frames / OPEN_TEMPORAL_MERGE) * per_image
    else:
        video = n_frames * per_image
    return n_images * per_image + video + math.ceil(text_chars / CHARS_PER_TOKEN)
