"""docs/design.md "Adding a suite", run as written: the page's ``shade`` suite is written into a temporary
package, registered through an entry point (a ``dist-info/entry_points.txt`` beside it, as ``pip install``
would leave it), and goes through generate, run (oracle, chance), score and report with vidaudit unchanged.

The code is read from the page, so the walkthrough and what this test proves cannot drift apart; nothing
under ``src/vidaudit`` names the suite (no stage needed an edit)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _walkthrough() -> tuple[str, str]:
    """The page's suite module and its entry-point line, as the page shows them."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = text[text.index("## Adding a suite") : text.index("## Built-in suites")]
    code = re.search(r"```python\n# shade/suite.py\n(.*?)```", section, re.S)
    entry = re.search(r'```toml\n\[project.entry-points."vidaudit.suites"\]\n(shade = .*?)\n```', section, re.S)
    assert code is not None and entry is not None, "the walkthrough's code blocks are missing from docs/design.md"
    return code.group(1), entry.group(1)


def _plugin(site: Path) -> None:
    code, entry = _walkthrough()
    (site / "shade").mkdir(parents=True)
    (site / "shade" / "__init__.py").write_text("", encoding="utf-8")
    (site / "shade" / "suite.py").write_text(code, encoding="utf-8")
    meta = site / "shade_plugin-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: shade-plugin\nVersion: 0.1\n", encoding="utf-8")
    name, _, target = entry.partition(" = ")
    (meta / "entry_points.txt").write_text(f"[vidaudit.suites]\n{name} = {json.loads(target)}\n", encoding="utf-8")


def _cli(cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(site)])}
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_walkthrough_suite_runs_every_stage_unchanged(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _plugin(site)
    r = _cli(tmp_path, site, "suites")
    assert r.returncode == 0 and "shade" in r.stdout, r.stdout + r.stderr
    steps = [
        ("generate", "shade", "--out", "data"),
        (
            "run",
            "shade",
            "--data",
            "data",
            "--model",
            "oracle",
            "--model",
            "chance",
            "--condition",
            "frames@4",
            "--out",
            "run",
        ),
        ("score", "run"),
        ("report", "run"),
    ]
    for step in steps:
        r = _cli(tmp_path, site, *step)
        assert r.returncode == 0, f"{step[0]}: {r.stdout}{r.stderr}"
    scores = [json.loads(x) for x in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    assert len(scores) == 2 * 4 and {s["suite"] for s in scores} == {"shade"}
    assert all(s["correct"] is True for s in scores if s["model"] == "oracle")
    assert {s["parse"]["method"] for s in scores} == {"boxed"}
    report = json.loads((tmp_path / "run" / "report" / "report.json").read_text())
    assert report["results"]["accuracy"]["oracle|frames@4/plain"] == 1.0
    assert "Shade: accuracy" in (tmp_path / "run" / "report" / "report.md").read_text()
    # no stage, registry table or shared layer knows the suite: it lives only in the temporary package
    named = subprocess.run(["grep", "-rlw", "shade", str(ROOT / "src" / "vidaudit")], capture_output=True, text=True)
    assert named.stdout == ""


def test_the_walkthrough_imports_only_the_front_door_and_passes_strict_mypy(tmp_path: Path) -> None:
    """The page's suite reaches vidaudit through ``vidaudit.sdk`` alone, and is fully typed: ``mypy --strict`` on
    it (vidaudit's own modules followed silently, for their types) finds nothing."""
    code, _ = _walkthrough()
    imported = [
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(ast.parse(code))
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in getattr(n, "names", [])
    ]
    assert {m for m in imported if m and m.split(".")[0] == "vidaudit"} == {"vidaudit.sdk"}
    site = tmp_path / "site"
    _plugin(site)
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--no-incremental",
            "--config-file",
            os.devnull,
            "shade/suite.py",
        ],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0 and "Success: no issues found in 1 source file" in r.stdout, r.stdout + r.stderr
