"""Dependencies point down: no stage imports a suite, and report/ knows no suite at all."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "vidaudit"
SUITES = sorted(p.name for p in (SRC / "suites").iterdir() if p.is_dir() and (p / "__init__.py").exists())


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_there_is_a_suite_to_check() -> None:
    assert "counting" in SUITES


def test_no_module_outside_a_suite_imports_it() -> None:
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        for name in SUITES:
            if rel.parts[:2] == ("suites", name):
                continue
            hits = {
                m for m in _imports(path) if m == f"vidaudit.suites.{name}" or m.startswith(f"vidaudit.suites.{name}.")
            }
            bad += [f"{rel}: {m}" for m in sorted(hits)]
    assert not bad, "stages must look suites up by name:\n" + "\n".join(bad)


def test_no_source_file_names_a_suite_package() -> None:
    """The issue's check: `grep -rn "suites.counting" src/vidaudit | grep -v "^src/vidaudit/suites/"` is empty."""
    bad = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*")
        if p.is_file()
        and p.suffix in (".py", ".j2", ".js", ".yaml")
        and p.relative_to(SRC).parts[0] != "suites"
        and any(f"suites.{name}" in p.read_text(encoding="utf-8") for name in SUITES)
    ]
    assert not bad, bad


def test_report_package_knows_no_suite() -> None:
    bad = [
        f"{p.relative_to(SRC)}: {m}"
        for p in (SRC / "report").rglob("*.py")
        for m in _imports(p)
        if m.startswith("vidaudit.suites")
    ]
    assert not bad, bad


def test_schema_command_prints_the_report_and_record_schemas() -> None:
    import json

    from typer.testing import CliRunner

    from vidaudit.cli import app
    from vidaudit.core.contract.records import ScoreRecord
    from vidaudit.core.contract.report import Report

    runner = CliRunner()
    for what, model in (("report", Report), ("score", ScoreRecord)):
        r = runner.invoke(app, ["schema", what])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout) == json.loads(json.dumps(model.model_json_schema()))
    r = runner.invoke(app, ["schema", "nope"])
    assert r.exit_code == 2 and "choose report or score" in r.output


def test_suites_add_their_import_and_validate_commands() -> None:
    """`vidaudit import strand` / `vidaudit validate strand` come from the faithful suite, not cli.py."""
    from typer.testing import CliRunner

    from vidaudit.cli import app

    runner = CliRunner()
    for group in ("import", "validate"):
        r = runner.invoke(app, [group, "--help"])
        assert r.exit_code == 0 and "strand" in r.output, r.output
    r = runner.invoke(app, ["validate", "strand", "/nonexistent/release"])
    assert r.exit_code == 2 and "Traceback" not in r.output
