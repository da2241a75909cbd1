"""The dense-captions ablation (``states=captions``) and the prose extractor (``states=prose``, the paper's
variants B and C): E asks for free text per chunk instead of structured states -- a caption of the chunk, or
the structured states' content written as prose; there is no aggregator; the answerer reads the retrieved
chunk texts instead of trajectories.

The caption request holds the chunk's frames, their timestamps and ``CAPTION_PROMPT`` (versioned),
nothing of the question, so it is built once per video like E. An empty reply is an *invalid* chunk
(an outcome the answerer is told about). Lexical retrieval over captions: a caption is retrieved when
it names at least one of the entity words of the question (a colour, a shape, a number, or "ball"; a
question with none of them, about a real video, by a shared content stem);
``all`` keeps every caption, ``random`` draws as many as lexical would (seeded by the question), and
``model`` asks the backbone for a JSON list of caption ids (``C1``..), like trajectory retrieval.
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np

from vidaudit.suites.faithful.framework.vocabulary import stems
from vidaudit.suites.faithful.scene import COLOURS, SHAPES

CAPTIONS_VERSION = 1
CAPTION_PROMPT = (
    f"[caption v{CAPTIONS_VERSION}] You see {{n}} frames of one video chunk from {{t0:.2f}} s to {{t1:.2f}} s, each "
    "preceded by its timestamp. Describe in plain text every object you see (colour, shape, any number on it) and "
    "everything that happens, in order, with absolute video seconds."
)
#: the paper's "prose extractor" (variants B and C, Cluster G: the same content as the structured states, in prose
#: instead of JSON), as against the dense captions above (Cluster H: a caption of the chunk)
PROSE_VERSION = 1
PROSE_PROMPT = (
    f"[prose v{PROSE_VERSION}] You see {{n}} frames of one video chunk from {{t0:.2f}} s to {{t1:.2f}} s, each "
    "preceded by its timestamp. In plain prose (no JSON, no lists), describe every object that moves, changes or "
    "interacts: what it is and the persistent attributes that tell it apart (colours, clothing, a number it "
    "carries), when it is first and last seen, and every state it takes, action it does and interaction with "
    "another object, each with its absolute video time in seconds. Refer to an object the same way throughout."
)


def prompt_for(states: str) -> tuple[str, str, int]:
    """(prompt template, metadata key, version) of a text extractor: dense captions or the prose extractor."""
    return (
        (PROSE_PROMPT, "prose_version", PROSE_VERSION)
        if states == "prose"
        else (CAPTION_PROMPT, "captions_version", CAPTIONS_VERSION)
    )


HEADER = "Captions of the video's chunks, in time order (one per line):"
WORD = re.compile(r"[a-z0-9]+")
ENTITY_WORDS = {*COLOURS, *SHAPES, "ball"}


def entity_words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w in ENTITY_WORDS or w.isdigit()}


def lexical(question: str, captions: list[dict]) -> list[str]:
    """Captions naming an entity word of the question; a question with none of the synthetic entity words (real
    videos: "Does #1 block the keeper?") retrieves the captions sharing a content stem with it."""
    want = entity_words(question)
    if not want:
        asked = stems(question)
        return [c["id"] for c in captions if asked & stems(c["text"])]
    return [c["id"] for c in captions if want & set(WORD.findall(c["text"].lower()))]


def random_k(question: str, captions: list[dict], k: int) -> list[str]:
    rng = np.random.default_rng(int(hashlib.sha256(question.encode()).hexdigest()[:16], 16))
    pick = sorted(int(i) for i in rng.permutation(len(captions))[:k])
    return [captions[i]["id"] for i in pick]


def model_prompt(question: str, captions: list[dict]) -> str:
    return (
        "These are captions of consecutive chunks of a video (one per line):\n"
        + "\n".join(json.dumps(c, separators=(",", ":")) for c in captions)
        + f"\n\nQuestion: {question}\nReply with only a JSON list of the ids of the captions needed to answer "
        'the question, e.g. ["C1", "C3"].'
    )


def render(captions: list[dict], invalid: list[tuple[int, float, float, str]]) -> str:
    lines = [HEADER]
    lines += [f"# chunk {m} [{t0:.2f}, {t1:.2f}) s: caption invalid ({why})" for m, t0, t1, why in invalid]
    lines += [f"{c['id']} [{c['t'][0]:.2f}, {c['t'][1]:.2f}) s: {c['text']}" for c in captions]
    return "\n".join(lines)
