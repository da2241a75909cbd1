"""Price table, cost and token-estimate rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import ModelSpec, Usage
from vidaudit.models.pricing import (
    GEMINI_TOKENS_PER_FRAME,
    cost_usd,
    default_prices,
    estimate_request_tokens,
    is_local_endpoint,
    load_prices,
)


def test_every_shipped_price_is_a_dated_estimate() -> None:
    table = default_prices()
    assert len(table.prices) >= 10
    for key, price in table.prices.items():
        assert price.estimate is True, key
        assert price.as_of and price.as_of[:2] == "20", key
        assert price.input > 0 and price.output >= price.input, key
        assert price.cached_input is None or price.cached_input <= price.input, key


def test_lookup_exact_then_longest_prefix() -> None:
    table = default_prices()
    mini = table.lookup(ModelSpec.parse("openai:gpt-4.1-mini-2025-04-14"))
    full = table.lookup(ModelSpec.parse("openai:gpt-4.1"))
    assert mini is not None and full is not None and mini.input < full.input
    assert table.lookup(ModelSpec.parse("openai:gpt-4o")).input == 2.50
    assert table.lookup(ModelSpec.parse("openai:no-such-model")) is None


def test_cost_formula_unknown_and_local() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cached_tokens=200_000, reasoning_tokens=50_000)
    # gemini-2.5-flash estimate: 0.30 in, 0.075 cached, 2.50 out
    assert cost_usd(ModelSpec.parse("gemini:gemini-2.5-flash"), usage) == pytest.approx(
        0.8 * 0.30 + 0.2 * 0.075 + 0.1 * 2.50
    )
    assert cost_usd(ModelSpec.parse("anthropic:claude-unknown-9"), usage) is None
    assert cost_usd(ModelSpec.parse("hf:Qwen/Qwen2.5-VL-7B-Instruct"), usage) is None  # hf reports its own 0
    assert cost_usd(ModelSpec.parse("openai:qwen@http://127.0.0.1:8000/v1"), usage) == 0.0
    assert cost_usd(ModelSpec.parse("openai:qwen@https://api.example.com/v1"), usage) is None


def test_user_override(tmp_path: Path) -> None:
    p = tmp_path / "prices.yaml"
    p.write_text(
        'models:\n  "openai:gpt-4o": {input: 1.0, output: 2.0, estimate: false, as_of: "2030-01-01"}\n'
        '  "anthropic:claude-new*": {input: 5, output: 25}\n'
    )
    table = load_prices(p)
    assert table.lookup(ModelSpec.parse("openai:gpt-4o")).input == 1.0
    assert table.lookup(ModelSpec.parse("anthropic:claude-new-1")).output == 25
    assert table.lookup(ModelSpec.parse("gemini:gemini-2.5-pro")) is not None  # defaults kept
    usage = Usage(input_tokens=1_000_000, cached_tokens=500_000)
    # no cached price given: cached tokens are charged at the input price
    assert cost_usd(ModelSpec.parse("anthropic:claude-new-1"), usage, table) == pytest.approx(5.0)


@pytest.mark.parametrize(
    "text, match",
    [
        ("models:\n  gpt-4o: {input: 1, output: 2}\n", "provider:name"),
        ('models:\n  "openai:x": {input: -1, output: 2}\n', "input"),
        ('models:\n  "openai:x": {input: 1, output: 2, colour: red}\n', "colour"),
        ("nothing: here\n", "models"),
        ("models: [unclosed\n", "YAML"),
    ],
)
def test_bad_price_files_explain_themselves(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_prices(p)
    with pytest.raises(ConfigError, match="not found"):
        load_prices(tmp_path / "missing.yaml")


@given(st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**7))
def test_cost_is_monotone_and_non_negative(inp: int, out: int, cached: int) -> None:
    spec = ModelSpec.parse("openai:gpt-4o")
    base = cost_usd(spec, Usage(input_tokens=inp, output_tokens=out, cached_tokens=min(cached, inp)))
    more = cost_usd(spec, Usage(input_tokens=inp + 1000, output_tokens=out + 1000, cached_tokens=min(cached, inp)))
    assert 0 <= base < more


def test_token_rules_of_thumb() -> None:
    # OpenAI tile formula: 512x512 -> 1 tile; 1024x1024 -> shortest side to 768 -> 2x2 tiles
    assert estimate_request_tokens(1, 512, 512, 0, provider="openai") == 85 + 170
    assert estimate_request_tokens(1, 1024, 1024, 0, provider="openai") == 85 + 170 * 4
    # Gemini: 258 per small image and per sampled video frame
    assert estimate_request_tokens(2, 320, 240, 0, provider="gemini") == 2 * GEMINI_TOKENS_PER_FRAME
    assert estimate_request_tokens(0, 640, 480, 0, video_seconds=24, video_fps=1, provider="gemini") == 24 * 258
    # Anthropic: (w*h)/750
    assert estimate_request_tokens(1, 750, 100, 0, provider="anthropic") == 100
    # open models: 28x28 patches, video frames merged in pairs
    assert estimate_request_tokens(0, 280, 280, 0, video_seconds=2, video_fps=2, provider="open") == 2 * 100
    # text at ~4 characters per token
    assert estimate_request_tokens(0, 0, 0, 400, provider="anthropic") == 100
    with pytest.raises(ConfigError, match="no token rule"):
        estimate_request_tokens(1, 32, 32, 0, provider="mystery")


@given(
    st.sampled_from(["openai", "gemini", "anthropic", "open"]),
    st.integers(0, 200),
    st.integers(1, 4096),
    st.integers(1, 4096),
    st.integers(0, 5000),
)
def test_estimates_grow_with_images(provider: str, n: int, w: int, h: int, chars: int) -> None:
    a = estimate_request_tokens(n, w, h, chars, provider=provider)
    b = estimate_request_tokens(n + 1, w, h, chars, provider=provider)
    assert 0 <= a < b


@pytest.mark.parametrize(
    "url, local",
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://localhost:1/v1", True),
        ("http://10.0.0.5/v1", True),
        ("https://api.together.xyz/v1", False),
        (None, False),
    ],
)
def test_local_endpoints(url: str | None, local: bool) -> None:
    assert is_local_endpoint(url) is local
