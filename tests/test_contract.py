"""The contract on the ground floor: one home for the suite protocol and its records, one name per thing."""

from __future__ import annotations

import pytest

from vidaudit.core import contract, registry
from vidaudit.core.contract import Prompt, Suite, SuiteCapabilities, check_suite
from vidaudit.core.errors import ConfigError


def test_the_old_re_export_paths_are_gone() -> None:
    """One path per thing: the modules that only re-exported moved names are removed (issue 33)."""
    import importlib

    for old in ("vidaudit.suites.base", "vidaudit.score.records", "vidaudit.report.model", "vidaudit.humanstudy.kappa",
                "vidaudit.humanstudy.load", "vidaudit.inspect"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


def test_every_public_name_is_exported() -> None:
    assert sorted(contract.__all__) == sorted(set(contract.__all__))
    for name in contract.__all__:
        assert getattr(contract, name) is not None


class _Judging(Suite):
    name = "judging"

    def judge_prompt(self, sample, answer):  # noqa: ANN001, ANN201
        return Prompt(None, "grade it")


def test_a_suite_that_judges_must_declare_it() -> None:
    with pytest.raises(ConfigError, match="capabilities = SuiteCapabilities"):
        check_suite(_Judging(), "judging")

    class Declared(_Judging):
        capabilities = SuiteCapabilities(judges=True)

    assert check_suite(Declared(), "judging").judges()


def test_builtin_suites_declare_what_they_offer() -> None:
    caps = {n: registry.get_suite(n).capabilities for n in ("counting", "faithful", "stress")}
    assert caps["counting"] == SuiteCapabilities()
    assert caps["faithful"].needs_usage and not caps["faithful"].judges
    assert caps["stress"].judges and not caps["stress"].needs_usage
    stress = registry.get_suite("stress")
    from vidaudit.suites.stress.suite import SUITE as STRESS

    assert [n for n in STRESS.parts if STRESS.part(n).capabilities.judges] == ["expectation"]
    assert stress.judges()
