"""The contract on the ground floor: one home for the suite protocol and its records, one name per thing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vidaudit import sdk
from vidaudit.core import registry
from vidaudit.core.contract.profile import AuditPart
from vidaudit.core.contract.records import ScoreRecord, TrialScore
from vidaudit.core.contract.report import SuiteReport, ViewerTrial
from vidaudit.core.contract.roles import Audit, Baselines, Commands, ModuleAudit, Verification
from vidaudit.core.contract.suite import Prompt, Suite, SuiteCapabilities, check_suite
from vidaudit.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_the_old_re_export_paths_are_gone() -> None:
    """One path per thing: the modules that only re-exported moved names are removed (issue 33)."""
    import importlib

    for old in (
        "vidaudit.suites.base",
        "vidaudit.score.records",
        "vidaudit.report.model",
        "vidaudit.tools.humanstudy.kappa",
        "vidaudit.tools.humanstudy.load",
        "vidaudit.inspect",
    ):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


def test_every_public_name_is_exported() -> None:
    """The front door lists each name once, and each is there."""
    assert sorted(sdk.__all__) == sorted(set(sdk.__all__))
    for name in sdk.__all__:
        assert getattr(sdk, name) is not None


class _Whole(Suite):
    """The four required methods and nothing else."""

    name = "whole"

    def prompt_names(self):  # noqa: ANN201
        return ["p"]

    def render_prompt(self, sample, condition):  # noqa: ANN001, ANN201
        return Prompt(None, "q")

    def score(self, trial):  # noqa: ANN001, ANN201
        return TrialScore(correct=None)

    def aggregate(self, inputs):  # noqa: ANN001, ANN201
        return SuiteReport()


class _Judging(_Whole):
    name = "judging"

    def judge_prompt(self, sample, answer):  # noqa: ANN001, ANN201
        return Prompt(None, "grade it")


def test_a_suite_missing_a_required_method_is_refused_at_lookup_in_one_line() -> None:
    class NoScore(_Whole):
        score = Suite.score
        aggregate = Suite.aggregate

    assert check_suite(_Whole(), "whole").name == "whole"
    with pytest.raises(ConfigError) as e:
        check_suite(NoScore(), "whole")
    assert str(e.value) == (
        "suite 'whole' (NoScore) does not implement score and aggregate; a Suite implements "
        "prompt_names, render_prompt, score and aggregate (docs/design.md, The Suite protocol)"
    )
    with pytest.raises(ConfigError, match="does not implement prompt_names, render_prompt, score and aggregate"):
        check_suite(Suite, "bare")  # a registered class is checked before it is made


def test_declared_roles_are_checked_at_lookup_and_a_missing_one_is_refused_by_name(tmp_path: Path) -> None:
    class HalfBaselines(Baselines):
        def oracle_answer(self, sample):  # noqa: ANN001, ANN201
            return "x"

    class Half(_Whole):
        baselines = HalfBaselines()

    class Wrong(_Whole):
        verification = HalfBaselines()

    with pytest.raises(
        ConfigError,
        match=r"^suite 'whole'\'s baselines \(HalfBaselines\) does not implement "
        r"chance_answer$",
    ):
        check_suite(Half(), "whole")
    with pytest.raises(ConfigError, match="declares verification = HalfBaselines, not a vidaudit.sdk.Verification"):
        check_suite(Wrong(), "whole")
    for role, lacks in (
        (Baselines, "baseline answers"),
        (Verification, "pixel verification"),
        (Audit, "audit datasets"),
        (Commands, "commands"),
    ):
        with pytest.raises(ConfigError, match=f"^the whole suite has no {lacks}"):
            role.of(_Whole())

    class FullBaselines(HalfBaselines):
        def chance_answer(self, sample, rng, option=""):  # noqa: ANN001, ANN201
            return "y"

    class Full(_Whole):
        baselines = FullBaselines()

    # what a declared role leaves out names the suite that declared it (``__set_name__``)
    with pytest.raises(ConfigError, match="^the whole suite has no pixel observer$"):
        Baselines.of(check_suite(Full(), "whole")).observe([], {})

    class Unnamed(_Whole):
        verification = Verification()  # no module to check pixels with, no verify of its own: refused at lookup

    with pytest.raises(
        ConfigError,
        match=r"^suite 'whole'\'s verification \(Verification\) does not implement verify \(or a module naming "
        r"verify_dataset\)$",
    ):
        check_suite(Unnamed(), "whole")
    with pytest.raises(ConfigError, match="^the whole suite's verification names no module to check pixels with$"):
        Verification.of(Unnamed()).verify(Path("no such dir"), [])  # and, unchecked, before any file is read

    class WrongModule(Verification):
        module = "vidaudit.core.errors"  # imports, but holds no verify_dataset

    (tmp_path / "dataset.json").write_text('{"suite": "whole"}')
    with pytest.raises(ConfigError, match="verification points to vidaudit.core.errors:verify_dataset, which does not"):
        WrongModule().verify(tmp_path, [])  # one line, no AttributeError traceback

    class OwnCheck(Verification):
        def verify(self, data_dir, samples, *, workers=None, on_progress=None):  # noqa: ANN001, ANN201
            return {}

    class Checks(_Whole):
        verification = OwnCheck()  # a role that checks its own way needs no module

    assert Verification.of(check_suite(Checks(), "whole")).verify(Path("no such dir"), []) == {}


def test_a_module_audit_imports_its_module_on_first_use() -> None:
    audit = ModuleAudit("vidaudit.suites.stress.audit")
    part = AuditPart(name="wireframe", preset="smoke", conditions=("frames#4",), probe="wireframe")
    assert audit.part_conditions(part, Path(".")) == ("frames#4",)
    assert [p.name for p in audit.audit_parts("smoke")][:2] == ["camera_motion", "cross_frame"]
    counting = ModuleAudit("vidaudit.suites.counting.audit")  # no part_conditions there: the part's own
    assert counting.part_conditions(part, Path(".")) == ("frames#4",)
    with pytest.raises(ConfigError, match="audit module vidaudit.core.errors has no audit_parts"):
        ModuleAudit("vidaudit.core.errors").audit_parts("smoke")


_BROKEN = """
from vidaudit.core.contract.report import SuiteReport
from vidaudit.core.contract.suite import Prompt, Suite


class Broken(Suite):
    name = "broken"
    description = "a plugin suite without score"

    def prompt_names(self):
        return ["plain"]

    def render_prompt(self, sample, condition):
        return Prompt(None, "?")

    def aggregate(self, inputs):
        return SuiteReport()


SUITE = Broken()
"""


def test_a_plugin_suite_missing_score_is_refused_by_the_cli_in_one_line(tmp_path: Path) -> None:
    """A third-party suite registered by an entry point, missing ``score``: the lookup refuses it with one line
    and exit 2 (``vidaudit suites``, ``run``), no traceback, before any data is read or written."""
    site = tmp_path / "site"
    (site / "broken_suite").mkdir(parents=True)
    (site / "broken_suite" / "__init__.py").write_text(_BROKEN, encoding="utf-8")
    meta = site / "broken_suite-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-suite\nVersion: 0.1\n", encoding="utf-8")
    (meta / "entry_points.txt").write_text("[vidaudit.suites]\nbroken = broken_suite:SUITE\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(site)])}
    want = (
        "error: suite 'broken' (Broken) does not implement score; a Suite implements prompt_names, "
        "render_prompt, score and aggregate (docs/design.md, The Suite protocol)"
    )
    for args in (
        ["suites"],
        ["run", "broken", "--data", str(tmp_path / "data"), "--model", "oracle", "--out", str(tmp_path / "run")],
    ):
        r = subprocess.run(
            [sys.executable, "-m", "vidaudit.cli", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        # (the command line's start may also warn that the suite could not add its generate command)
        errors = [x for x in (r.stdout + r.stderr).splitlines() if x.startswith("error")]
        assert r.returncode == 2 and errors == [want], r.stdout + r.stderr
        assert (r.stdout + r.stderr).rstrip().endswith(want) and "Traceback" not in r.stderr
    assert not (tmp_path / "run").exists()


def test_a_suite_that_judges_must_declare_it() -> None:
    with pytest.raises(ConfigError, match="capabilities = SuiteCapabilities"):
        check_suite(_Judging(), "judging")

    class Declared(_Judging):
        capabilities = SuiteCapabilities(judges=True)

    assert check_suite(Declared(), "judging").capabilities.judges


def test_builtin_suites_declare_what_they_offer() -> None:
    caps = {n: registry.get_suite(n).capabilities for n in ("counting", "faithful", "stress")}
    assert caps["counting"] == SuiteCapabilities()
    assert caps["faithful"].needs_usage and not caps["faithful"].judges
    assert caps["stress"].judges and not caps["stress"].needs_usage
    stress = registry.get_suite("stress")
    from vidaudit.suites.stress import SUITE as STRESS

    assert [n for n in STRESS.parts if STRESS.part(n).capabilities.judges] == ["expectation"]
    assert stress.capabilities.judges


def test_a_viewer_row_carries_its_records_fields_and_the_suites_own() -> None:
    """``ViewerTrial.of`` (and so the default ``Suite.viewer_trial``) takes the trial's ids, model, condition, status
    and correctness from its record, each different here so that a field taken from the wrong one shows."""
    record = ScoreRecord(
        trial_id="t1",
        sample_id="s1",
        suite="whole",
        model="m1",
        condition="frames@4",
        group_id="g1",
        status="ok",
        correct=False,
    )
    row = ViewerTrial.of(record, None, group="dom", columns={"n": 3})
    want = {"trial_id": "t1", "sample_id": "s1", "model": "m1", "condition": "frames@4", "status": "ok"}
    assert row.model_dump(include=set(want)) == want and row.correct is False
    assert (row.raw_text, row.group, row.columns) == ("", "dom", {"n": 3})
    assert _Whole().viewer_trial(record, None, "the answer") == ViewerTrial.of(record, "the answer")
