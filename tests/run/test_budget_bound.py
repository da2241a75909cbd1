"""``--max-cost-usd`` holds against a server that reports inflated but in-range token counts (``run.budget``).

Each call's worst case -- ``input_bound`` of its estimated input plus ``output_bound(max_tokens)``, at the
model's price -- is reserved before it is sent, counting the calls in flight, and a call is believed to bill
no more than that. A real ``vidaudit run`` against a local server speaking the Gemini API (priced: the
adapter's base_url is an option, not the spec's) with replies delayed so that several calls are in flight:
the stored spend never passes the cap, the run says the cap stopped it, how much was spent and how to resume.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from httpfake import FakeServer, Recorded, Reply
from vidaudit.core.types import Response
from vidaudit.models.errors_http import MAX_CALL_TOKENS, output_bound, split_finish
from vidaudit.run.budget import BudgetTracker, Reservation, bounded, charge
from vidaudit.run.store.reader import StoreReader

MODEL = "gemini:gemini-2.5-pro"  # $1.25 / M input, $10 / M output in the shipped prices


class Inflating:
    """Answers every call after ``delay_s`` with the given (in-range) usage, counting the calls in flight."""

    def __init__(self, prompt_tokens: int, output_tokens: int, delay_s: float = 1.0) -> None:
        self.usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens}
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0

    def __call__(self, rec: Recorded) -> Reply:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(self.delay_s)
        with self.lock:
            self.in_flight -= 1
        return Reply(
            json={
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": "\\boxed{3}"}]}, "finishReason": "STOP"}
                ],
                "usageMetadata": self.usage,
            }
        )


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-budget-0123456789")
    for name in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _run(smoke_dir: Path, out: Path, url: str, cap: float):  # type: ignore[no-untyped-def]
    from vidaudit.cli import app

    return CliRunner().invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            MODEL,
            "--condition",
            "frames#4",
            "--adapter-option",
            f"gemini.base_url={url}",
            "--adapter-option",
            "gemini.use_disk_cache=false",
            "--adapter-option",
            "gemini.concurrency=6",
            "--max-cost-usd",
            str(cap),
            "--out",
            str(out),
        ],
    )


def _stored(out: Path) -> tuple[float, int, list[Response]]:
    """(cost stored, attempts stored, their responses) as the run store holds them."""
    with StoreReader(out) as store:
        attempts = [a for row in store.trial_rows() for a in store.attempts(row.trial_id)]
    responses = [a.response for a in attempts if a.response is not None]
    return sum(r.cost_usd or 0.0 for r in responses), len(attempts), responses


@pytest.mark.parametrize(
    "prompt_tokens,output_tokens",
    [
        (5_000_000, output_bound(2048)),  # both inflated: input in range (< 10M), output at the adapter's clamp
        (MAX_CALL_TOKENS, 0),  # the largest input an adapter believes
        (100, output_bound(2048)),  # honest input, the most output the adapter believes
    ],
)
def test_the_cost_cap_holds_with_calls_in_flight(
    smoke_dir: Path, tmp_path: Path, prompt_tokens: int, output_tokens: int
) -> None:
    from vidaudit.cli import app

    cap = 0.3  # each call's worst case is $0.0475 (4 frames, 4,160 output tokens): 6 fit in flight
    server = Inflating(prompt_tokens, output_tokens)
    srv = FakeServer().start()
    try:
        srv.script("POST", "/v1beta/models/", default=server)
        r = _run(smoke_dir, tmp_path / "run", srv.url, cap)
        sent = len(srv.requests_to("/v1beta/models/"))
        spent, n_attempts, responses = _stored(tmp_path / "run")
        # the resume the run suggests, under a higher cap: what was spent counts, the total stays under it
        r2 = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "run"), "--max-cost-usd", str(2 * cap)])
    finally:
        srv.stop()
    flat = " ".join(r.output.split())
    assert r.exit_code == 1, r.output  # stopped early: exit 1 with the summary, no traceback
    assert server.most_in_flight >= 3, server.most_in_flight  # the reservations held with calls in flight
    assert spent <= cap + 1e-9, (spent, r.output)
    assert n_attempts == sent and 0 < sent < 18  # every call sent is stored; the cap stopped the rest
    assert "Stopped (budget): the budget stopped the run before a call that could cross it" in flat, r.output
    assert f"at the end: ${spent:.4f} of ${cap:.4f} spent" in flat, r.output
    assert f"vidaudit run --resume {tmp_path / 'run'} --max-cost-usd" in flat, r.output
    # what the server claimed past the worst case is clamped and flagged in the stored response
    inflated = prompt_tokens > 100
    assert all(bool(split_finish(x.finish_reason)[1]) == inflated for x in responses)
    total, _, _ = _stored(tmp_path / "run")
    assert r2.exit_code in (0, 1) and spent < total <= 2 * cap + 1e-9, (total, r2.output)


def test_a_cost_cap_refuses_a_model_that_asks_for_no_output_limit(smoke_dir: Path, tmp_path: Path) -> None:
    from vidaudit.cli import app

    r = CliRunner().invoke(
        app,
        [
            "run",
            "counting",
            "--data",
            str(smoke_dir),
            "--model",
            MODEL,
            "--condition",
            "frames#4",
            "--provider-defaults",
            "--max-cost-usd",
            "1",
            "--adapter-option",
            "gemini.base_url=http://127.0.0.1:9",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert r.exit_code == 2, r.output
    assert "asks for no max_tokens" in " ".join(r.output.split()), r.output


_counts = st.one_of(st.integers(0, MAX_CALL_TOKENS), st.just(MAX_CALL_TOKENS))


@settings(max_examples=300, deadline=None)
@given(
    inp=_counts,
    out=_counts,
    cost=st.one_of(st.none(), st.floats(0, 1e6), st.just(math.inf)),
    top_in=st.integers(0, 10**6),
    top_out=st.integers(0, 10**6),
    price=st.floats(0, 100),
)
def test_no_call_is_charged_more_than_its_worst_case(
    inp: int, out: int, cost: float | None, top_in: int, top_out: int, price: float
) -> None:
    bound = Reservation(top_in + top_out, price, top_in, top_out)
    resp = Response(
        text="x",
        usage={"input_tokens": inp, "output_tokens": out},
        finish_reason="stop",
        cost_usd=cost if cost is None or math.isfinite(cost) else None,
    )
    believed = bounded(resp, bound)
    c = charge(believed, bound)
    assert c.tokens <= bound.tokens and c.cost_usd <= bound.cost_usd
    assert believed.usage.input_tokens <= top_in and believed.usage.output_tokens <= top_out
    assert (believed == resp) == (inp <= top_in and out <= top_out and (resp.cost_usd or 0) <= price + 1e-9)
    tracker = BudgetTracker(None)
    tracker.settle(believed, bound)
    assert tracker.spent_cost_usd <= price and tracker.spent_tokens <= bound.tokens
    json.dumps(believed.model_dump(mode="json"))  # still a storable response
