"""Snapshot of every counting prompt (the exact strings, from the paper's appendix C.2-C.5 and C.7)."""

from __future__ import annotations

import pytest

from vidaudit.core.errors import ConfigError
from vidaudit.core.types import Condition, Presentation, Sample, VideoRef
from vidaudit.suites.counting import prompts as P
from vidaudit.suites.counting.repcount import DEFAULT_QUESTION, REAL_WORLD_TEMPLATES, SOURCE

BOUNCE_Q = "How many times did the ball contact the walls?"
TRACE_TAIL = (
    "Observe the video carefully and provide a step-by-step reasoning trace tracking every event, its "
    "timestamp (in seconds), and the running count. Format your response as follows: 1. Step-by-Step "
    "Event Ledger (timestamp, event type, running count) 2. Final Answer inside \\boxed{} (e.g. \\boxed{4})"
)

#: (system, user text) for the bounce-ball question under native video: the exact strings.
SYNTHETIC_SNAPSHOT: dict[str, tuple[str | None, str]] = {
    "structured_trace": (None, "Question: How many times did the ball contact the walls? " + TRACE_TAIL),
    "direct": (
        None,
        "Question: How many times did the ball contact the walls? Observe the video carefully. "
        "Provide your final answer formatted inside \\boxed{} (e.g. \\boxed{4}).",
    ),
    "multi_turn_verification": (
        None,
        "Question: How many times did the ball contact the walls? First, carefully "
        "list every detected event with its approximate timestamp and current count. "
        "Second, audit your event list to verify whether any events were missed, "
        "merged, or double-counted. Finally, state your verified final answer inside "
        "\\boxed{} (e.g. \\boxed{4}).",
    ),
    "thinking": (
        None,
        "Question: How many times did the ball contact the walls? Use deep step-by-step video "
        "analysis. Thoroughly analyze the temporal video sequence frame-by-frame, count all target "
        "visual events, and output your final count inside \\boxed{} (e.g. \\boxed{4}).",
    ),
    "role_prompting": (
        "You are an expert video analytics systems auditor specializing in fine-grained temporal event verification.",
        "Question: How many times did the ball contact the walls? Apply rigorous visual event "
        "auditing. Log all timestamped visual transitions and state your final answer inside "
        "\\boxed{} (e.g. \\boxed{4}).",
    ),
}

#: C.7, verbatim, on a RepCount sample with the default question.
REAL_SNAPSHOT: dict[str, tuple[str | None, str]] = {
    "zero_shot": (
        None,
        "How many times does the person perform the repetitive exercise in this video? Show your "
        "reasoning and put the final answer in \\boxed{}.",
    ),
    "cot": (
        None,
        "How many times does the person perform the repetitive exercise in this video? First, describe "
        "what exercise is being performed. Then, enumerate each individual repetition you observe, noting "
        "approximately when each one occurs. Finally, provide your total count. Put the final answer in "
        "\\boxed{}.",
    ),
    "direct": (None, "Count the number of exercise repetitions in this video. Reply with only a number."),
}

VIDEO = VideoRef(path="v.mp4", sha256="abc", fps=30.0, width=64, height=64, n_frames=720, duration_s=24.0)
SYNTH = Sample(
    sample_id="counting-bounce_ball-N03-F1.0-s00",
    suite="counting",
    params={"domain": "bounce_ball", "n_events": 3, "frequency_hz": 1.0, "seed": 0},
    question=BOUNCE_Q,
    answer=3,
    video=VIDEO,
)
REAL = Sample(
    sample_id="repcount-test-stu1_55",
    suite="counting",
    params={"domain": "real:squat", "n_events": 5, "frequency_hz": None, "source": SOURCE},
    question=DEFAULT_QUESTION,
    answer=5,
    video=VIDEO,
)


def test_prompt_names() -> None:
    assert P.PROMPT_NAMES == (
        "structured_trace",
        "direct",
        "multi_turn_verification",
        "thinking",
        "role_prompting",
        "zero_shot",
        "cot",
    )
    assert set(P.TEMPLATES) == set(P.PROMPT_NAMES)  # the run stage's name check accepts every name
    assert SOURCE in P.REAL_VIDEO_SOURCES


@pytest.mark.parametrize("name", list(SYNTHETIC_SNAPSHOT))
def test_synthetic_prompts_snapshot(name: str) -> None:
    """Appendix C.2 / C.5 texts, e.g. C.5 "Experiment 4.1: Direct Answer Condition (direct) Question:
    question Observe the video carefully. Provide your final answer formatted inside \\boxed{}"."""
    assert P.render_prompt(SYNTH, Condition(prompt=name)) == SYNTHETIC_SNAPSHOT[name]


@pytest.mark.parametrize("name", list(REAL_SNAPSHOT))
def test_real_prompts_snapshot(name: str) -> None:
    """Appendix C.7: "we test zero-shot, chain-of-thought (cot), and direct prompt conditions using the
    following exact templates". ``--prompt cot`` on a RepCount sample renders the C.7 text."""
    assert P.render_prompt(REAL, Condition(prompt=name)) == REAL_SNAPSHOT[name]


def test_the_two_directs_are_chosen_by_the_sample() -> None:
    """C.5 "Direct Answer Condition (direct)" for rendered videos, C.7 "Real-World Direct Answer Prompt
    (direct)" for real ones (params["source"] == "repcount")."""
    assert P.render_prompt(SYNTH, Condition(prompt="direct")) == SYNTHETIC_SNAPSHOT["direct"]
    assert P.render_prompt(REAL, Condition(prompt="direct")) == REAL_SNAPSHOT["direct"]
    assert P.is_real_video(REAL) and not P.is_real_video(SYNTH)
    for name in ("zero_shot", "cot"):
        with pytest.raises(ConfigError, match="real-video prompt"):
            P.render_prompt(SYNTH, Condition(prompt=name))
    # synthetic prompts are built on the question and work on a real video too
    assert P.render_prompt(REAL, Condition(prompt="structured_trace")) == (
        None,
        f"Question: {DEFAULT_QUESTION} " + TRACE_TAIL,
    )
    with pytest.raises(ConfigError, match="unknown prompt"):
        P.render_prompt(SYNTH, Condition(prompt="socratic"))


def test_preambles_snapshot() -> None:
    """C.3: "[INPUT MODE: Supplied Frame Grid at FPS FPS] Question: question ..."; C.4: "[ORACLE EVIDENCE
    AVAILABLE: Key event windows extracted at ti ± 0.1s] Question: question ..."."""
    frames = Condition(presentation=Presentation.FRAMES, fps=4, prompt="structured_trace")
    assert P.render_prompt(SYNTH, frames) == (
        None,
        "[INPUT MODE: Supplied Frame Grid at 4 FPS] Question: How many times did the ball contact the walls? "
        + TRACE_TAIL,
    )
    keys = Condition(presentation=Presentation.KEYFRAMES, prompt="structured_trace")
    assert P.render_prompt(SYNTH, keys) == (
        None,
        "[ORACLE EVIDENCE AVAILABLE: Key event windows extracted at t_i \u00b1 0.1s] Question: How many "
        "times did the ball contact the walls? " + TRACE_TAIL,
    )
    role = Condition(presentation=Presentation.FRAMES, fps=2.5, prompt="role_prompting")
    system, text = P.render_prompt(SYNTH, role)
    assert system == SYNTHETIC_SNAPSHOT["role_prompting"][0]
    assert text == "[INPUT MODE: Supplied Frame Grid at 2.5 FPS] " + SYNTHETIC_SNAPSHOT["role_prompting"][1]
    assert P.render_prompt(REAL, Condition(presentation=Presentation.FRAMES, fps=1, prompt="cot")) == (
        None,
        "[INPUT MODE: Supplied Frame Grid at 1 FPS] " + REAL_SNAPSHOT["cot"][1],
    )


def test_old_real_names_hold_the_same_texts() -> None:
    """repcount's real_* mapping holds the same C.7 texts."""
    for name, (system, template) in REAL_WORLD_TEMPLATES.items():
        assert (system, template.format(question=DEFAULT_QUESTION)) == REAL_SNAPSHOT[name.removeprefix("real_")]


def test_frame_count_grid_states_its_effective_rate() -> None:
    """frames#K has no rate of its own: the preamble states K / duration (3 significant digits)."""
    cond = Condition(presentation=Presentation.FRAMES, n_frames=16, prompt="structured_trace")
    system, text = P.render_prompt(SYNTH, cond)
    rate = 16 / SYNTH.video.duration_s
    assert text.startswith(f"[INPUT MODE: Supplied Frame Grid at {float(f'{rate:.3g}'):g} FPS] ")
