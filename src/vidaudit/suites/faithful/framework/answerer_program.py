"""The program answerer G with no VLM: parse the question back to a query, evaluate it on the trajectories sent.

A ``ModelAdapter``: it reads only the text of its request -- the trajectory memory the framework
sends and the suite's prompt with its "Question:" line -- and answers in the suite's format
("Answer: Yes" / "Answer: No") after one evidence line. The frames it is sent are accounted but
not looked at. A question outside the synthetic grammar is read in the open vocabulary
(``query_open``: the memory's words and the dataset's vocabulary, sent in the request's metadata);
one neither reads gets a reply with no answer (unparseable, so wrong).
"""

from __future__ import annotations

import time

from vidaudit.sdk import Capabilities, ModelSpec, Request, Response, TextPart
from vidaudit.suites.faithful.framework.memory import read
from vidaudit.suites.faithful.framework.query import answer, event_times, parse_question, question_of
from vidaudit.suites.faithful.framework.query_open import answer_open, parse_open
from vidaudit.suites.faithful.framework.query_open import event_times as open_times


class ProgramAnswerer:
    capabilities = Capabilities(native_video=False, images=True, concurrency=8, local=True, synthetic=True)
    role = "model"

    def __init__(self, spec: ModelSpec | None = None, **_: object) -> None:
        self.spec = spec or ModelSpec(provider="object-centric", name="program-answerer")

    async def aclose(self) -> None:
        return None

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        text = "\n".join(p.text for p in request.parts if isinstance(p, TextPart))
        trajs = read(text)
        try:
            question = question_of(text)
            q = parse_question(question)
        except ValueError as e:
            reply = self._open(text, trajs, request.metadata.get("vocabulary"), e)
        else:
            a = event_times(q.a, trajs)
            b = event_times(q.b, trajs) if q.b is not None else None
            ev = f"first event at {a}" + (f", second event at {b}" if b is not None else "")
            reply = f"Evidence: {len(trajs)} trajectories; {ev}.\nAnswer: {'Yes' if answer(q, trajs) else 'No'}"
        return Response.computed(reply, t0, "program-answerer-1")

    @staticmethod
    def _open(text: str, trajs: list[dict], vocabulary: dict | None, why: ValueError) -> str:
        """A question outside the synthetic grammar, read in the open vocabulary (``query_open``)."""
        try:
            q = parse_open(question_of(text), trajs, vocabulary)
        except ValueError as e:
            return f"I cannot read this question ({why}; {e})."
        a = open_times(q.a, trajs)
        b = open_times(q.b, trajs) if q.b is not None else None
        ev = f"first event at {a}" + (f", second event at {b}" if b is not None else "")
        return (
            f"Evidence: {len(trajs)} trajectories (open vocabulary); {ev}.\n"
            f"Answer: {'Yes' if answer_open(q, trajs) else 'No'}"
        )
