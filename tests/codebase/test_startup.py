"""Start-up in a blink (issue 34): ``vidaudit --help`` imports the command line and no suite, no numpy, scipy or
pydantic; a command that needs one suite imports that suite alone; a plugin suite that cannot load is reported
only when its commands are needed. Each command runs in a child process, which then lists ``sys.modules``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(__file__).parents[1] / "plugin_site"
BUILTIN_SUITES = frozenset(
    p.name for p in (ROOT / "src" / "vidaudit" / "suites").iterdir() if (p / "__init__.py").is_file()
)

#: runs the CLI as the ``vidaudit`` script does, then writes the modules it imported and its exit code to argv[1]
WRAPPER = """
import json, sys
from vidaudit.cli import app
code = 0
try:
    app(sys.argv[2:], prog_name="vidaudit")
except SystemExit as e:
    code = e.code or 0
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""

#: every vidaudit module `vidaudit --help` imports: the CLI and the registry, never a suite, stage or the contract.
#: A new entry here means a heavier start-up for every command: keep the import inside the function that needs it.
HELP_MODULES = frozenset(
    {
        "vidaudit",
        "vidaudit.cli",
        "vidaudit.cli.help",
        "vidaudit.core",
        "vidaudit.core.console",
        "vidaudit.core.errors",
        "vidaudit.core.registry",
        "vidaudit.core.targets",
        "vidaudit.tools",
        "vidaudit.tools.humanstudy",
        "vidaudit.tools.humanstudy.cli",
        "vidaudit.tools.interop",
        "vidaudit.tools.interop.cli",
        "vidaudit.tools.mech",
        "vidaudit.tools.mech.cli",
        "vidaudit.suites",  # the package the built-in suites are listed from (an empty __init__)
    }
)
#: the heavy dependencies (and extras) no command's start-up needs
HEAVY = (
    "numpy",
    "scipy",
    "cv2",
    "av",
    "pydantic",
    "matplotlib",
    "jinja2",
    "yaml",
    "PIL",
    "torch",
    "transformers",
    "openai",
    "anthropic",
    "google",
    "ray",
    "datasets",
    "inspect_ai",
    "pandas",
)


def _cli(tmp_path: Path, *args: str | Path, sites: tuple[Path, ...] = ()) -> tuple[int, set[str], str, str]:
    """Exit code, imported modules, stdout and stderr of ``vidaudit ARGS`` in a fresh interpreter."""
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *map(str, sites)]), "COLUMNS": "200"}
    r = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(out), *map(str, args)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.is_file(), r.stdout + r.stderr
    res = json.loads(out.read_text(encoding="utf-8"))
    return res["code"], set(res["modules"]), r.stdout, r.stderr


def _suites(modules: set[str]) -> set[str]:
    """The built-in suite packages among ``modules``."""
    return {m.split(".")[2] for m in modules if m.startswith("vidaudit.suites.")} & BUILTIN_SUITES


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


def test_help_imports_the_command_line_alone(tmp_path: Path) -> None:
    code, modules, out, err = _cli(tmp_path, "--help")
    assert code == 0 and "generate" in out and "audit" in out, out + err
    assert {m for m in modules if m.split(".")[0] == "vidaudit"} == HELP_MODULES
    assert not _heavy(modules)


def test_a_broken_plugin_suite_is_reported_only_when_its_commands_are_needed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    meta = site / "broken_plugin-0.1.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n", encoding="utf-8")
    (meta / "entry_points.txt").write_text(
        "[vidaudit.suites]\nbroken = no_such_module_for_vidaudit_tests:SUITE\n", encoding="utf-8"
    )
    code, modules, out, err = _cli(tmp_path, "--help", sites=(SITE, site))
    assert code == 0 and "warning" not in err, err
    assert {m for m in modules if m.split(".")[0] == "vidaudit"} == HELP_MODULES and "toysuite" not in modules
    # the plugin's own command loads the plugin alone: no built-in suite, no word about the broken one
    code, modules, out, err = _cli(tmp_path, "generate", "toy", "--help", sites=(SITE, site))
    assert code == 0 and "Render the toy colour videos" in out and "warning" not in err, out + err
    assert "toysuite" in modules and not _suites(modules)
    # listing the group loads every suite: the broken one is named, the others still listed
    code, modules, out, err = _cli(tmp_path, "generate", "--help", sites=(SITE, site))
    assert code == 0 and "suite 'broken' could not add its commands" in err, err
    assert all(f"│ {cmd} " in out for cmd in ("counting", "repcount", "faithful", "stress", "toy")), out
    assert _suites(modules) == BUILTIN_SUITES


@pytest.fixture(scope="module")
def counting_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """A one-video counting dataset written by `vidaudit generate counting`, and what that command imported."""
    root = tmp_path_factory.mktemp("startup")
    code, modules, out, err = _cli(
        root,
        "generate",
        "counting",
        "--out",
        root / "data",
        "--domains",
        "blinking",
        "--counts",
        "2",
        "--frequencies",
        "1",
        "--seeds",
        "1",
        "--duration",
        "4",
        "--fps",
        "10",
        "--width",
        "320",
        "--height",
        "240",
        "--workers",
        "1",
    )
    assert code == 0, out + err
    return root / "data", modules


@pytest.mark.parametrize(
    "args, suites",
    [
        (("generate", "counting", "--help"), {"counting"}),
        (("generate", "repcount", "--help"), {"counting"}),  # counting's second
        (("generate", "stress", "--help"), {"stress"}),
        (("run", "--help"), set()),
    ],
)
def test_a_suites_help_imports_that_suite_alone(tmp_path: Path, args: tuple[str, ...], suites: set[str]) -> None:
    code, modules, out, err = _cli(tmp_path, *args)
    assert code == 0 and "--out" in out, out + err
    assert _suites(modules) == suites
    assert "scipy" not in modules and "matplotlib" not in modules  # imported by the functions that compute with them


def test_commands_on_a_counting_dataset_import_no_other_suite(
    tmp_path: Path, counting_data: tuple[Path, set[str]]
) -> None:
    data, generated = counting_data
    assert _suites(generated) == {"counting"}
    code, modules, out, err = _cli(tmp_path, "verify", data, "--workers", "1")
    assert code == 0 and "all 1 samples verified" in err, out + err
    assert _suites(modules) == {"counting"}
    for suite in (("counting",), ()):  # named, or the one the dataset names
        code, modules, out, err = _cli(
            tmp_path,
            "run",
            *suite,
            "--data",
            data,
            "--model",
            "oracle",
            "--model",
            "chance",
            "--condition",
            "frames@2",
            "--dry-run",
            "--out",
            tmp_path / "run",
        )
        assert code == 0 and "2 trials in all" in out + err, out + err
        assert _suites(modules) == {"counting"} and "scipy" not in modules
    assert not (tmp_path / "run").exists()  # a dry run writes nothing
    code, modules, out, err = _cli(
        tmp_path,
        "run",
        "counting",
        "--data",
        data,
        "--model",
        "oracle",
        "--condition",
        "frames@2",
        "--out",
        tmp_path / "run",
    )
    assert code == 0, out + err
    assert _suites(modules) == {"counting"}
    code, modules, out, err = _cli(tmp_path, "score", tmp_path / "run")
    assert code == 0 and "oracle" in out, out + err
    assert _suites(modules) == {"counting"}
    records = [json.loads(line) for line in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    assert [(r["suite"], r["model"], r["correct"]) for r in records] == [("counting", "oracle", True)]
    # Wilson's z from scipy.special: scipy.stats costs a report ~0.5 s of CPU to import (benchmarks/README.md)
    code, modules, out, err = _cli(tmp_path, "report", tmp_path / "run")
    assert code == 0 and "oracle" in out and (tmp_path / "run" / "report" / "report.html").is_file(), out + err
    assert _suites(modules) == {"counting"}
    assert "scipy.stats" not in modules


def test_naming_the_models_imports_no_suite(tmp_path: Path) -> None:
    """The providers a suite package declares are read from its source; resolving one imports that suite alone."""
    probe = (
        "import json, sys\nfrom vidaudit.core.registry import names, resolve\n"
        "listed = names('providers')\nbefore = sorted(m for m in sys.modules if m.startswith('vidaudit.suites.'))\n"
        "resolve('providers', 'simulated')\n"
        "after = sorted(m for m in sys.modules if m.startswith('vidaudit.suites.'))\n"
        "print(json.dumps([listed, before, after]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    listed, before, after = json.loads(r.stdout)
    import importlib

    declared = {p for s in sorted(BUILTIN_SUITES) for p in importlib.import_module(f"vidaudit.suites.{s}").PROVIDERS}
    assert declared and declared <= set(listed)
    assert before == []
    assert _suites(set(after)) == {"counting"}


@pytest.mark.parametrize(
    "source, expected",
    [
        ('PROVIDERS = {"a": "pkg.a:A", "b": "pkg.b:B"}\n', {"a": "pkg.a:A", "b": "pkg.b:B"}),
        ('"""no models"""\nSUITE = None\n', {}),
        ('PROVIDERS = dict(a="pkg.a:A")\n', None),  # not a literal
        ('PROVIDERS = {"a": "pkg.a:A"}\nPROVIDERS["b"] = "pkg.b:B"\n', None),  # changed after
        ('PROVIDERS = {"a": "pkg.a:A"}\nPROVIDERS = {}\n', None),  # bound twice
        ("from pkg.models import PROVIDERS\n", None),  # imported
        ("from pkg.models import *\n", None),  # maybe imported
        ('if True:\n    PROVIDERS = {"a": "pkg.a:A"}\n', None),  # not at the top level
        ('PROVIDERS = {"a": 1}\n', None),  # not strings
        ('PROVIDERS = {"a": "pkg.a:A"}\nPROVIDERS |= {"b": "pkg.b:B"}\n', None),  # augmented
    ],
)
def test_declared_providers_are_read_from_source_only_when_the_source_says_it_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, expected: dict[str, str] | None
) -> None:
    from vidaudit.core.registry import _literal_providers

    name = f"startup_pkg_{hashlib.sha256(source.encode()).hexdigest()[:12]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _literal_providers(name) == expected
    assert name not in sys.modules  # read, never run


def test_the_built_in_suites_declare_their_providers_as_literals() -> None:
    """Each built-in suite package's PROVIDERS is read from its source and equals what importing it gives, so that
    `vidaudit --help` and `run` list every model without importing a suite."""
    import importlib

    from vidaudit.core.registry import _literal_providers

    for suite in sorted(BUILTIN_SUITES):
        package = f"vidaudit.suites.{suite}"
        assert _literal_providers(package) == dict(getattr(importlib.import_module(package), "PROVIDERS", {})), suite
