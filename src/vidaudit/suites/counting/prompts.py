"""Prompt templates of the counting suite, verbatim from the paper, and how one is chosen for a sample.

Rendered videos (appendix C.2-C.5): ``structured_trace`` (the baseline), ``direct``,
``multi_turn_verification``, ``thinking``, ``role_prompting`` (with its system instruction).
Real videos (RepCount / TransRAC, appendix C.7): ``zero_shot``, ``cot``, ``direct``.

One name, two texts: ``direct`` exists in both sets (C.5 "Direct Answer Condition (direct)" and C.7
"Real-World Direct Answer Prompt (direct)"). The sample decides which: a real video (its
``params["source"]`` is one of :data:`REAL_VIDEO_SOURCES`, i.e. ``"repcount"``) gets the C.7
text, a rendered one the C.5 text. ``zero_shot`` and ``cot`` ask about "the person perform[ing]
the repetitive exercise" and exist for real videos only: asking them of a rendered video is a
:class:`ConfigError`. The synthetic prompts are built around the sample's question and may be
used on real videos too.

Frame inputs are preceded by the paper's preamble (C.3 ``[INPUT MODE: Supplied Frame Grid at FPS
FPS]``, C.4 ``[ORACLE EVIDENCE AVAILABLE: ...]``), whatever the prompt.
"""

from __future__ import annotations

from vidaudit.sdk import Condition, ConfigError, Presentation, Sample

_TRACE = (
    "Observe the video carefully and provide a step-by-step reasoning trace tracking every event, its "
    "timestamp (in seconds), and the running count. Format your response as follows: 1. Step-by-Step "
    "Event Ledger (timestamp, event type, running count) 2. Final Answer inside \\boxed{} (e.g. \\boxed{4})"
)

#: Rendered videos, appendix C.2-C.5: name -> (system instruction or None, user template with {question})
SYNTHETIC_TEMPLATES: dict[str, tuple[str | None, str]] = {
    "structured_trace": (None, "Question: {question} " + _TRACE.replace("{}", "{{}}").replace("{4}", "{{4}}")),
    "direct": (
        None,
        "Question: {question} Observe the video carefully. Provide your final answer formatted inside "
        "\\boxed{{}} (e.g. \\boxed{{4}}).",
    ),
    "multi_turn_verification": (
        None,
        "Question: {question} First, carefully list every detected event with its "
        "approximate timestamp and current count. Second, audit your event list to "
        "verify whether any events were missed, merged, or double-counted. Finally, "
        "state your verified final answer inside \\boxed{{}} (e.g. \\boxed{{4}}).",
    ),
    "thinking": (
        None,
        "Question: {question} Use deep step-by-step video analysis. Thoroughly analyze the temporal "
        "video sequence frame-by-frame, count all target visual events, and output your final count "
        "inside \\boxed{{}} (e.g. \\boxed{{4}}).",
    ),
    "role_prompting": (
        "You are an expert video analytics systems auditor specializing in fine-grained temporal event verification.",
        "Question: {question} Apply rigorous visual event auditing. Log all timestamped visual "
        "transitions and state your final answer inside \\boxed{{}} (e.g. \\boxed{{4}}).",
    ),
}

#: Real videos, appendix C.7 (the question stem is the sample's question, by default the paper's
#: "How many times does the person perform the repetitive exercise in this video?"); ``direct``
#: has its own wording and no question stem.
REAL_TEMPLATES: dict[str, tuple[str | None, str]] = {
    "zero_shot": (None, "{question} Show your reasoning and put the final answer in \\boxed{{}}."),
    "cot": (
        None,
        (
            "{question} First, describe what exercise is being performed. Then, enumerate each "
            "individual repetition you observe, noting approximately when each one occurs. Finally, "
            "provide your total count. Put the final answer in \\boxed{{}}."
        ),
    ),
    "direct": (None, "Count the number of exercise repetitions in this video. Reply with only a number."),
}

#: Every prompt name the suite accepts (``direct`` once: the sample picks its text).
PROMPT_NAMES: tuple[str, ...] = tuple(dict.fromkeys([*SYNTHETIC_TEMPLATES, *REAL_TEMPLATES]))
REAL_ONLY: frozenset[str] = frozenset(REAL_TEMPLATES) - frozenset(SYNTHETIC_TEMPLATES)

#: ``params["source"]`` values that mark a real (not rendered) video.
REAL_VIDEO_SOURCES: frozenset[str] = frozenset({"repcount"})

#: Name -> template for a caller that cannot see the sample (the legacy two-argument call and the
#: run stage's name check): the synthetic text where a name has two, the C.7 text for real-only names.
TEMPLATES: dict[str, tuple[str | None, str]] = {
    k: SYNTHETIC_TEMPLATES.get(k) or REAL_TEMPLATES[k] for k in PROMPT_NAMES
}

FRAME_PREAMBLE = "[INPUT MODE: Supplied Frame Grid at {fps:g} FPS]"
KEYFRAME_PREAMBLE = "[ORACLE EVIDENCE AVAILABLE: Key event windows extracted at t_i \u00b1 {offset:g}s]"


def is_real_video(sample: Sample) -> bool:
    """Whether the sample is a real video (its prompts are the C.7 set), from ``params["source"]``."""
    return sample.params.get("source") in REAL_VIDEO_SOURCES


def template_for(sample: Sample, prompt: str) -> tuple[str | None, str]:
    """The (system, template) the sample gets under prompt name ``prompt`` (see the module docstring)."""
    if prompt not in PROMPT_NAMES:
        raise ConfigError(f"unknown prompt {prompt!r}; choose from {', '.join(PROMPT_NAMES)}")
    if is_real_video(sample):
        return REAL_TEMPLATES.get(prompt) or SYNTHETIC_TEMPLATES[prompt]
    if prompt in REAL_ONLY:
        raise ConfigError(
            f"prompt {prompt!r} is the paper's real-video prompt (appendix C.7: it asks about a "
            f"person's exercise repetitions); sample {sample.sample_id} is a rendered video. Use it "
            f"on a RepCount dataset, or choose one of {', '.join(SYNTHETIC_TEMPLATES)}"
        )
    return SYNTHETIC_TEMPLATES[prompt]


def frame_grid_fps(condition: Condition, duration_s: float) -> float:
    """The rate the frame preamble states: K for ``frames@K``; for ``frames#K`` the rate K frames over the
    clip amount to, K / duration, to 3 significant digits (the paper only has rate-based grids)."""
    if condition.fps is not None:
        return float(condition.fps)
    return float(f"{(condition.n_frames or 0) / duration_s:.3g}") if duration_s > 0 else 0.0


def _with_preamble(condition: Condition, text: str, duration_s: float) -> str:
    if condition.presentation is Presentation.FRAMES:
        return FRAME_PREAMBLE.format(fps=frame_grid_fps(condition, duration_s)) + " " + text
    if condition.presentation is Presentation.KEYFRAMES:
        return KEYFRAME_PREAMBLE.format(offset=condition.keyframe_offset_s) + " " + text
    return text


def render_prompt(sample: Sample, condition: Condition, duration_s: float | None = None) -> tuple[str | None, str]:
    """(system, user text) the model receives for ``sample`` under ``condition``.

    The template comes from :func:`template_for`; frame and keyframe inputs get the paper's preamble.
    """
    if not isinstance(sample, Sample) or not isinstance(condition, Condition):
        raise ConfigError("render_prompt takes (sample, condition)")
    system, template = template_for(sample, condition.prompt)
    return system, _with_preamble(condition, template.format(question=sample.question), sample.video.duration_s)
