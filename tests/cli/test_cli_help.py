"""`vidaudit --help` reads in the order of the flow; options show no Python type names; README numbers hold."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.cli.help import FLOW_PANELS
from vidaudit.core.registry import names

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def _help(*args: str) -> str:
    r = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert r.exit_code == 0, r.output
    return r.output


def test_top_level_help_groups_commands_by_the_flow() -> None:
    out = _help()
    panels = [title for title, _ in FLOW_PANELS]
    positions = [out.find(f"─ {title} ") for title in panels]
    assert all(p >= 0 for p in positions), out
    assert positions == sorted(positions), "panels out of flow order"
    assert "─ Commands " not in out  # every command is placed in a panel
    # each command sits under its own panel: between its panel title and the next one
    for i, (_, commands) in enumerate(FLOW_PANELS):
        end = positions[i + 1] if i + 1 < len(positions) else len(out)
        for cmd in commands:
            assert re.search(rf"│ {re.escape(cmd)} ", out[positions[i] : end]), (cmd, out)
    assert (
        out.find("│ audit ")
        < out.find("│ demo ")
        < out.find("│ generate ")
        < out.find("│ run ")
        < out.find("│ score ")
        < out.find("│ report ")
        < out.find("│ perturb ")
    )


def test_options_show_no_python_types_and_model_help_lists_providers() -> None:
    for args in ((), ("run",), ("score",), ("report",), ("generate", "counting"), ("perturb",)):
        out = _help(*args)
        assert "<bool>" not in out and "<list[" not in out, (args, out)
    out = " ".join(_help("run").replace("│", " ").split())
    assert "<path>" in out and "<int>" in out  # real value types stay
    assert "provider:name[@base_url]" in out  # not eaten as markup
    from vidaudit.cli import MODEL_HELP
    from vidaudit.core.registry import _builtin

    # every provider registered when the CLI was imported (a plugin put on sys.path later by another test in this
    # process is not: entry points are read once), and every built-in one
    listed = MODEL_HELP.split("Providers: ", 1)[1].split(" (docs/", 1)[0].split(", ")
    assert set(_builtin("providers")) <= set(listed) <= set(names("providers"))
    for provider in listed:
        assert provider in out, provider
    assert "--retry-errors" in out


def test_readme_states_the_demo_grid_the_code_renders() -> None:
    from vidaudit.suites.counting.grid import DOMAINS, preset

    points = preset("smoke")
    per_domain = {d: sum(1 for p in points if p.domain == d) for d in DOMAINS}
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    m = re.search(r"\((\d+) videos: (\d+) cells in each of the three domains", readme)
    assert m is not None, "the README's demo description moved; keep its counts checked here"
    assert int(m.group(1)) == len(points)
    assert set(per_domain.values()) == {int(m.group(2))}
