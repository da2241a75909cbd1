"""The contract on the ground floor: one home for the suite protocol and its records, old paths re-exported."""

from __future__ import annotations

import pytest

from vidaudit.core import contract, registry
from vidaudit.core.contract import Capabilities, Prompt, Suite, check_suite
from vidaudit.core.errors import ConfigError


def test_old_paths_re_export_the_contract_objects() -> None:
    import vidaudit.report.model as old_report
    import vidaudit.score.records as old_records
    import vidaudit.suites.base as old_base

    for old in (old_base, old_records, old_report):
        for name in old.__all__:
            assert getattr(old, name) is getattr(contract, name), name


def test_every_public_name_is_exported() -> None:
    assert sorted(contract.__all__) == sorted(set(contract.__all__))
    for name in contract.__all__:
        assert getattr(contract, name) is not None


class _Judging(Suite):
    name = "judging"

    def judge_prompt(self, sample, answer):  # noqa: ANN001, ANN201
        return Prompt(None, "grade it")


def test_a_suite_that_judges_must_declare_it() -> None:
    with pytest.raises(ConfigError, match="capabilities = Capabilities"):
        check_suite(_Judging(), "judging")

    class Declared(_Judging):
        capabilities = Capabilities(judges=True)

    assert check_suite(Declared(), "judging").judges()


def test_builtin_suites_declare_what_they_offer() -> None:
    caps = {n: registry.get_suite(n).capabilities for n in ("counting", "faithful", "stress")}
    assert caps["counting"] == Capabilities()
    assert caps["faithful"].needs_usage and not caps["faithful"].judges
    assert caps["stress"].judges and not caps["stress"].needs_usage
    stress = registry.get_suite("stress")
    from vidaudit.suites.stress.suite import SUITE as STRESS

    assert [n for n in STRESS.parts if STRESS.part(n).capabilities.judges] == ["expectation"]
    assert stress.judges()
