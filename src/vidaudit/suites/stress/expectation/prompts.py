"""Every prompt of the expectation probe: the paper's where it prints one (E.2.2, E.2.3), vidaudit's own otherwise.

The paper's prompts lost their line breaks in extraction (reveal-prompts.md). The layout chosen here --
one sentence or rule per line, the "STRICT RULES" / "Hallucination criteria" items as "- " lines, the
numbered inputs one per line -- is pinned by ``tests/suites/stress/test_stress_expectation.py``. Two typographic
repairs are made to E.2.3's judge prompt and nothing else: LaTeX (``1--2``, ``$\\to$``) is rendered
("1–2", "→"), and the JSON the judge must output gets the braces and the ``true|false`` the extraction
dropped (the paper prints ``"hallucinated_summary": truefalse, ...`` without braces; a verdict is read
only from a JSON object). The input slots ``<GT_VISIBLE_SUMMARY>``, ``<GT_MISSING_ACTION>`` and
``<MODEL_SUMMARY>`` of the numbered inputs are replaced by their values; the later mentions of those
names in the task and criteria stay as written (they name the inputs).

vidaudit's own prompts (the paper prints none): the forward/reverse question, the temporal-gap MCQ,
the three anomaly questions asked in one request with a required answer layout, the anomaly judge
(built from the §4.3 / E.2.3 rubric) and the reversed-description judge. Their versions are in
``JUDGE_VERSION`` (part of every judged trial's id).
"""

from __future__ import annotations

from collections.abc import Sequence

from vidaudit.suites.stress.common import boxed_instruction, options_block

#: the version of this probe's judge prompts (E.2.3 verbatim + vidaudit's anomaly and direction judges)
JUDGE_VERSION = "expectation-judges-1"

# --------------------------------------------------------------------------- reversed clips

DIRECTION_QUESTION = "Is this video playing forward or in reverse?"
DIRECTION_OPTIONS = ("forward", "in reverse")
#: E.2.2 Question 1 (Video Understanding), verbatim: the free description asked of forward and reversed clips
DESCRIBE_QUESTION = "Describe the video in detail, including what actions are happening and in what order."


def direction_prompt() -> str:
    return "\n".join([DIRECTION_QUESTION, options_block(DIRECTION_OPTIONS), boxed_instruction()])


def describe_prompt() -> str:
    return DESCRIBE_QUESTION


def direction_judge_prompt(shown: Sequence[str], canonical: Sequence[str], reversed_: bool, answer: str) -> str:
    """vidaudit's judge of a free description: does it give the steps in the order the video shows them?"""
    lines = [
        "You are grading whether a description of a video reports the events in the order the video "
        "actually shows them.",
        f"Ground truth: the video shows these steps, in this order: {sequence_text(shown)}.",
    ]
    if reversed_:
        lines.append(
            "The video plays in reverse: this is the reverse of the usual order of the procedure "
            f"({sequence_text(canonical)}), and the motion inside each step runs backwards."
        )
    lines += [
        "The description to grade:",
        "<<<",
        answer,
        ">>>",
        "Task: decide whether the description gives the steps in the order shown above"
        + (" (the reversed order), and not in the usual forward order." if reversed_ else "."),
        "- A description that lists the steps in another order, or narrates the usual order instead of the "
        "one shown, does not.",
        "- A description that omits steps but keeps the shown order of those it names does.",
        'Output JSON ONLY: {"describes_shown_order": true|false, "explanation": "1–2 concise sentences '
        'explaining the decision"}',
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- temporal gap

GAP_MCQ_QUESTION = "Which of the following is the sequence of actions shown in the video, in the order they appear?"

#: E.2.3 "Model Prompt: Temporal Expectation Test", verbatim, one rule per line
GAP_SUMMARY_PROMPT = "\n".join(
    [
        "You will be shown a short video clip. Your task is to describe ONLY what is visually observable in the clip.",
        "STRICT RULES:",
        "- Write EXACTLY one sentence.",
        "- Describe only the actions directly visible on screen.",
        "- Do NOT infer, complete, or guess any missing steps.",
        "- Do NOT describe actions that are implied but not fully shown.",
        "- If the video appears incomplete, describe only the visible motion.",
        "Return ONLY the one-sentence description.",
    ]
)


def gap_mcq_prompt(options: Sequence[str]) -> str:
    return "\n".join([GAP_MCQ_QUESTION, options_block(options), boxed_instruction()])


def gap_judge_prompt(visible_summary: str, missing_action: str, model_summary: str) -> str:
    """E.2.3 "Judge Prompt: Hallucination Detection", verbatim (see the module docstring for the layout)."""
    return "\n".join(
        [
            "You are an auditing model evaluating whether a generated summary hallucinates actions for a CUT video.",
            "Inputs:",
            f"1. Ground-truth visible summary (ONLY what appears in the video): {visible_summary}",
            f"2. The missing action deliberately removed: {missing_action}",
            f"3. The model’s generated summary: {model_summary}",
            "Task: Determine whether the summary includes ANY information not present in <GT_VISIBLE_SUMMARY>.",
            "Hallucination criteria (be maximally strict):",
            "- The summary adds actions or events not present in <GT_VISIBLE_SUMMARY>.",
            "- The summary fills in steps of an action that are not fully visible.",
            "- The summary infers causes, intentions, outcomes, or transitions.",
            "- The summary describes the missing action (<GT_MISSING_ACTION>) in any form.",
            "Output JSON ONLY:",
            '{"hallucinated_summary": true|false, "explanation": "1–2 concise sentences explaining the decision"}',
            "If ANY extra or inferred detail appears → hallucinated_summary = true. Otherwise → false.",
        ]
    )


# --------------------------------------------------------------------------- anomaly injection

#: E.2.2 Question 2 (Anomaly Detection - General), verbatim
GENERAL_QUESTION = "Are there any anomalies present in the video?"
_TEMPORAL_TARGETED = (
    "Identify any temporal irregularities (e.g., reverse motion, shuffled/duplicated frames, or abrupt cuts)."
)
_SPATIAL_TARGETED = (
    "Identify any visual artifacts (e.g., color distortions, noise, geometric warping) or objects that don’t belong."
)
#: E.2.2 Question 3 (Anomaly Detection - Targeted) per transformation, verbatim
TARGETED_QUESTION: dict[str, str] = {
    "reverse": _TEMPORAL_TARGETED,
    "shuffle_frames": _TEMPORAL_TARGETED,
    "cut": _TEMPORAL_TARGETED,
    "scene_mix": "Do the sequence of events and scenes make logical sense? Note any inconsistency in the "
    "scene/activity mixing.",
    "colour_shift": _SPATIAL_TARGETED,
    "insert_object": _SPATIAL_TARGETED,
    "noise": _SPATIAL_TARGETED,
}
ANOMALY_LAYOUT = ("1. <your answer to question 1>", "2. <your answer to question 2>", "3. <your answer to question 3>")


def anomaly_questions(op: str) -> tuple[str, str, str]:
    return DESCRIBE_QUESTION, GENERAL_QUESTION, TARGETED_QUESTION[op]


def anomaly_prompt(op: str) -> str:
    """The three E.2.2 questions in one request, numbered, with the answer layout the model must use."""
    q = anomaly_questions(op)
    return "\n".join(
        [
            "Answer the three questions below about the video.",
            *(f"{i + 1}. {x}" for i, x in enumerate(q)),
            "Answer in exactly this layout, one numbered answer per question:",
            *ANOMALY_LAYOUT,
        ]
    )


def anomaly_judge_prompt(op: str, descriptor: str, answer: str) -> str:
    """vidaudit's anomaly judge (the paper gives only its rubric): the three answers judged jointly."""
    q = anomaly_questions(op)
    return "\n".join(
        [
            "You are an auditing model evaluating whether a video-language model detected an anomaly that was "
            "deliberately injected into a video.",
            f"Ground-truth anomaly descriptor: {descriptor}",
            "The model was asked three questions about the video:",
            *(f"{i + 1}. {x}" for i, x in enumerate(q)),
            "The model's answers (its description, its general anomaly judgement and its targeted answer):",
            "<<<",
            answer,
            ">>>",
            "Task: judge the three answers jointly against the ground-truth anomaly descriptor.",
            "- 1.0: the anomaly is clearly identified with explicit and correct evidence.",
            "- 0.5: the anomaly is mentioned only partially, ambiguously, or without sufficient grounding.",
            "- 0.0: the model fails to detect the anomaly or provides no relevant indication of the injected distortion.",
            "Reporting a different kind of anomaly than the injected one is no relevant indication.",
            'Output JSON ONLY: {"score": 1.0|0.5|0.0, "explanation": "1–2 concise sentences explaining the decision"}',
        ]
    )


# --------------------------------------------------------------------------- text of sequences

SEQUENCE_JOIN = ", then "


def sequence_text(steps: Sequence[str]) -> str:
    return SEQUENCE_JOIN.join(steps)


def visible_summary(steps: Sequence[str]) -> str:
    """GT_VISIBLE_SUMMARY: one sentence naming the steps shown, in order (also the oracle's summary)."""
    return f"The video shows these steps in order: {sequence_text(steps)}."
