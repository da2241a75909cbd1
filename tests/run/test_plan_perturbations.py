"""A condition's ``perturbations``: parsed, declared by the suite, hashed into the trial id, checked for
strip coverage on the frames each model is sent, and rendered once into the run's cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidaudit.core.errors import ConfigError
from vidaudit.core.manifest import load_samples
from vidaudit.core.registry import get_suite
from vidaudit.core.types import ModelSpec, PerturbationSpec, names_perturbations
from vidaudit.models.base import Capabilities
from vidaudit.run.conditions import parse_condition
from vidaudit.run.plan import PlanStream
from vidaudit.run.request_builder import RequestBuilder
from vidaudit.suites.stress.cross_frame.generate import generate
from vidaudit.suites.stress.probe import GenerateOptions

CAPS = Capabilities(native_video=True, images=True, default_native_fps=None, local=True, synthetic=True)
MASK = "strip_mask(S=128,k=4,orientation=vertical,v=24)"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cf_plan")
    generate(out, GenerateOptions(preset="smoke", seeds=2))
    return out


def _plan(data: Path, *conds: str, caps: Capabilities = CAPS, suite: str = "stress"):
    s = get_suite(suite)
    samples = load_samples(data)
    return PlanStream(
        samples,
        [parse_condition(c, "mcq") for c in conds],
        [ModelSpec(provider="oracle")],
        suite=s,
        caps_by_model={"oracle": caps},
    ).planned()


@settings(max_examples=40, deadline=None)
@given(
    S=st.integers(2, 512),
    v=st.integers(1, 64),
    k=st.integers(1, 16),
    o=st.sampled_from(["vertical", "horizontal"]),
    d=st.one_of(st.none(), st.integers(1, 6)),
    base=st.sampled_from(["frames@24", "frames#12", "native@all", "native@2.5"]),
)
def test_condition_ids_parse_back(S: int, v: int, k: int, o: str, d: int | None, base: str) -> None:
    params = {"S": S, "v": v, "k": k, "orientation": o, "delta": d}
    try:
        spec = PerturbationSpec(name="strip_mask", params=params)
        cond = parse_condition(f"{base}+{spec.id}", "mcq")
    except ConfigError:
        assert v >= S  # the op's own range check, reached through the parser
        return
    assert cond.perturbations == (spec,)
    assert parse_condition(cond.video_id, "mcq") == cond


_PRESENTATIONS = st.one_of(
    st.just({"presentation": "native"}),
    st.just({"presentation": "native", "all_frames": True}),
    st.floats(1e-3, 1e7, allow_nan=False).map(lambda f: {"presentation": "native", "fps": f}),
    st.floats(1e-3, 1e7, allow_nan=False).map(lambda f: {"presentation": "frames", "fps": f}),
    st.integers(1, 10_000).map(lambda n: {"presentation": "frames", "n_frames": n}),
    st.floats(1e-3, 1e6, allow_nan=False).map(lambda f: {"presentation": "keyframes", "keyframe_offset_s": f}),
)
_SPECS = st.builds(
    PerturbationSpec,
    name=st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True),
    params=st.dictionaries(
        st.sampled_from(["S", "k", "v", "duration_s", "orientation"]),
        st.one_of(
            st.integers(-5, 500), st.floats(0.01, 1e6, allow_nan=False), st.sampled_from(["vertical", "x+y", "a/b"])
        ),
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    presentation=_PRESENTATIONS,
    specs=st.lists(_SPECS, max_size=3),
    prompt=st.sampled_from(["mcq", "default"]),
    timestamps=st.booleans(),
)
def test_a_condition_id_names_perturbations_exactly_when_it_has_them(
    presentation: dict, specs: list, prompt: str, timestamps: bool
) -> None:
    """What the report checks a scored trial against (``names_perturbations``) on ids ``Condition.id`` writes:
    presentations with a ``+`` in them (``keyframes+-2s``, ``frames@1e+06``) name none."""
    from vidaudit.core.types import Condition

    try:
        cond = Condition(**presentation, perturbations=tuple(specs), prompt=prompt, timestamps=timestamps)
    except ValueError:
        return  # a presentation the condition itself refuses
    assert names_perturbations(cond.id) is bool(cond.perturbations), cond.id
    assert names_perturbations(cond.video_id) is bool(cond.perturbations), cond.video_id


def test_unknown_op_or_parameter_is_refused_at_parse() -> None:
    with pytest.raises(ConfigError, match="no_such_op|unknown"):
        parse_condition("frames@4+no_such_op", "mcq")
    with pytest.raises(ConfigError, match="bogus"):
        parse_condition("frames@4+strip_mask(bogus=1)", "mcq")
    assert parse_condition("keyframes+-0.5s", "mcq").perturbations == ()
    assert [p.name for p in parse_condition("frames@4+reverse+strip_mask", "mcq").perturbations] == [
        "reverse",
        "strip_mask",
    ]


def test_trial_id_covers_the_perturbation(data: Path) -> None:
    raw = _plan(data, "frames@6")
    masked = _plan(data, f"frames@24+{MASK}")
    k2 = _plan(data, "frames@24+strip_mask(S=128,k=2,orientation=vertical,v=24)")
    defaults = _plan(data, "frames@24+strip_mask")  # the same op with every default written out
    ids = [{p.id for p in x} for x in (raw, masked, k2)]
    assert not (ids[0] & ids[1]) and not (ids[1] & ids[2]) and not (ids[0] & ids[2])
    assert [p.trial.input_sha256 for p in masked] == [p.trial.input_sha256 for p in defaults]
    assert len(masked[0].selection) == 4 * len(raw[0].selection)  # every frame of the k=4 masked video
    assert all(p.perturbed is not None and p.perturbed.strip_info for p in masked)
    assert _plan(data, f"frames@24+{MASK}")[0].id == masked[0].id  # deterministic: resume finds it


def test_a_suite_must_declare_its_ground_truth_survives(data: Path) -> None:
    from vidaudit.core.contract.suite import Suite

    class Plain(Suite):
        name = "plain"

    assert "the plain suite does not define its ground truth under reverse" in Plain().perturbation_problem(
        load_samples(data)[0], PerturbationSpec(name="reverse")
    )
    with pytest.raises(ConfigError, match="strip_mask only"):
        _plan(data, "frames@6+reverse")


def test_a_sampler_that_hides_strips_is_refused_with_the_fix(data: Path) -> None:
    with pytest.raises(ConfigError) as e:
        _plan(data, f"frames@12+{MASK}")  # stride 2 on 6 coverage sets: only half the strips
    msg = str(e.value)
    assert "stress-cross_frame-synth000-0-forced" in msg and f"frames@12+{MASK}/mcq" in msg
    assert "shares the factor 2" in msg and "coprime" in msg
    assert not _plan(data, f"frames@4.8+{MASK}") == []  # stride 5 is coprime with 6: accepted
    with pytest.raises(ConfigError, match="keyframes"):
        _plan(data, f"keyframes+{MASK}")


def test_native_rate_is_resolved_per_model_before_the_check(data: Path) -> None:
    fixed = Capabilities(native_video=True, images=True, default_native_fps=8.0, local=True, synthetic=True)
    with pytest.raises(ConfigError, match="native@8"):
        _plan(data, f"native+{MASK}", caps=fixed)  # 24 fps masked, sent at 8: stride 3 shares 3 with 6
    assert _plan(data, f"native+{MASK}")  # every frame: accepted


def test_the_request_sends_frames_of_the_perturbed_video(data: Path, tmp_path: Path) -> None:
    planned = _plan(data, f"frames@24+{MASK}")
    builder = RequestBuilder(data, perturb_cache=tmp_path / "perturbed")
    req = builder(planned[0])
    imgs = [p.image for p in req.parts if hasattr(p, "image")]
    assert len(imgs) == len(planned[0].selection) == planned[0].perturbed.video.n_frames
    dark = np.mean([(im.max(axis=2) < 30).mean() for im in imgs])
    assert dark > 0.6  # about 81% of every masked frame is the black fill
    cached = list((tmp_path / "perturbed").rglob("*.mp4"))
    assert len(cached) == 1
    builder(planned[1])  # the same video (forced / abstention): no second render
    assert list((tmp_path / "perturbed").rglob("*.mp4")) == cached
    with pytest.raises(ConfigError, match="cache dir"):
        RequestBuilder(data)(planned[0])
