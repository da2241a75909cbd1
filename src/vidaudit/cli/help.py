"""How ``vidaudit --help`` reads: commands grouped by the flow, options without Python type names.

Commands come from several modules (suites, interop, human studies, mechanism probes); the panel each
belongs to is decided here, in one table, so a new command lands in "Tools" until it is placed.
"""

from __future__ import annotations

from typing import Any

import typer.core
from typer.core import TyperGroup

#: (panel, commands) in the order a researcher meets them; anything else goes to the last panel
FLOW_PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Start here", ("audit", "demo", "compare", "suites")),
    ("1. Generate data", ("generate", "verify", "import", "validate")),
    ("2. Run models", ("run",)),
    ("3. Score", ("score", "score-responses")),
    ("4. Report", ("report", "human-study")),
    ("Tools", ("perturb", "judge-agreement", "schema", "export", "probe", "tiny-model")),
)
TOOLS_PANEL = FLOW_PANELS[-1][0]
_PANEL_OF = {cmd: panel for panel, cmds in FLOW_PANELS for cmd in cmds}
_ORDER = {cmd: i for i, cmd in enumerate(c for _, cmds in FLOW_PANELS for c in cmds)}


def panel_of(command: str) -> str:
    """The help panel of a top-level command (``Tools`` for one the table does not name)."""
    return _PANEL_OF.get(command, TOOLS_PANEL)


class FlowGroup(TyperGroup):
    """The top-level group: lists commands in flow order, each under its flow panel."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: (_ORDER.get(n, len(_ORDER)), names.index(n)))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and not getattr(command, "rich_help_panel", None):
            command.rich_help_panel = panel_of(cmd_name)  # type: ignore[attr-defined]
        return command


def _display_type(original: Any) -> Any:
    """Help shows ``<int>`` / ``<path>`` but no ``<bool>`` for a flag and ``<str>`` for a repeatable option."""

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) and getattr(self, "metavar", None) is None:
            return None
        text = original(self, ctx)
        if isinstance(text, str) and text.startswith("<list[") and text.endswith("]>"):
            return f"<{text[6:-2]}>"
        return text

    display_type_rich.__wrapped__ = original  # type: ignore[attr-defined]
    return display_type_rich


def tidy_option_types() -> None:
    """Patch typer's option type column once (idempotent); a typer without it is left as it is."""
    option = getattr(typer.core, "TyperOption", None)
    current = getattr(option, "display_type_rich", None)
    if option is None or current is None or hasattr(current, "__wrapped__"):
        return
    option.display_type_rich = _display_type(current)
