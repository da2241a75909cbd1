"""One registry, one name per thing: names map to lazy ``"module:attr"`` targets.

Third-party packages add entries through the ``vidaudit.<kind>`` entry-point group (``vidaudit.suites``,
``vidaudit.providers``). A built-in target whose optional dependency is missing fails with a one-line
``MissingExtraError`` naming the ``pip install "vidaudit[...]"`` that fixes it, never a traceback.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vidaudit.core.errors import ConfigError
from vidaudit.core.targets import load

if TYPE_CHECKING:
    from vidaudit.core.contract.suite import Suite

_BUILTIN: dict[str, dict[str, str]] = {
    "providers": {
        "oracle": "vidaudit.models.baselines:OracleAdapter",
        "chance": "vidaudit.models.baselines:ChanceAdapter",
        "constant": "vidaudit.models.baselines:ConstantAdapter",
        "ideal-observer": "vidaudit.models.ideal_observer:IdealObserverAdapter",
        "question-only": "vidaudit.models.blind:QuestionOnlyAdapter",
        "caption-only": "vidaudit.models.blind:CaptionOnlyAdapter",
        "openai": "vidaudit.models.openai_compat:OpenAIAdapter",
        "gemini": "vidaudit.models.gemini:GeminiAdapter",
        "anthropic": "vidaudit.models.anthropic:AnthropicAdapter",
        "hf": "vidaudit.models.hf:HFAdapter",
        "vllm": "vidaudit.models.vllm_offline:VLLMOfflineAdapter",
    },
    # Sections the report stage appends after the suite's own, in this order, from the tools built on the
    # stages: each target is ``f(scored) -> list[Section]`` (``vidaudit.score.scored_run.Scored``), [] when the
    # run has nothing for it. The report stage imports no tool; it looks these up here.
    "report_sections": {
        "mechanism": "vidaudit.tools.mech.report_section:report_sections",
        "human-study": "vidaudit.tools.humanstudy.section:report_sections",
    },
}

#: Built-in suites are the sub-packages of ``vidaudit.suites`` that define ``SUITE`` (found, not listed). A
#: suite package may also define ``PROVIDERS`` (name -> ``"module:attr"``): the models that belong to that
#: suite alone (counting's ``simulated``, stress's ``camera-flow``), found the same way.
_SUITES_PACKAGE = "vidaudit.suites"

#: The extra that brings each built-in provider's SDK, and the top-level modules that extra installs.
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "openai": ("openai", ("openai",)),
    "gemini": ("gemini", ("google", "httpx2")),
    "anthropic": ("anthropic", ("anthropic",)),
    "hf": ("hf", ("torch", "torchvision", "transformers", "num2words")),
    "vllm": ("vllm", ("vllm", "transformers")),
}


class MissingExtraError(ConfigError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def missing_extra(what: str, extra: str, module: str | None = None) -> MissingExtraError:
    lib = f" ({module} is not installed)" if module else ""
    return MissingExtraError(
        f'{what} needs an optional dependency{lib}; install it with: pip install "vidaudit[{extra}]"'
    )


def _entry_point_targets(kind: str) -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=f"vidaudit.{kind}")}


def _suite_packages() -> list[str]:
    import pkgutil

    pkg = importlib.import_module(_SUITES_PACKAGE)
    return [m.name for m in pkgutil.iter_modules(pkg.__path__) if m.ispkg]


def _literal_providers(package: str) -> dict[str, str] | None:
    """A suite package's ``PROVIDERS`` read from its ``__init__.py`` without running it, when the file names it
    once, in one top-level assignment of a literal dict of strings (so listing the models, ``run --help``,
    imports no suite); None when only running the module can say (then the package is imported)."""
    spec = importlib.util.find_spec(package)
    origin = spec.origin if spec is not None else None
    if not origin or not origin.endswith(".py"):
        return None
    try:
        tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    assigned = [
        n
        for n in tree.body
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and n.targets[0].id == "PROVIDERS"
    ]
    for node in ast.walk(tree):  # any other mention (a read, an import, ``global``, a star import) needs the import
        if (
            isinstance(node, ast.Name)
            and node.id == "PROVIDERS"
            and not any(node is n.targets[0] for n in assigned)
            or isinstance(node, ast.alias)
            and (node.asname or node.name) in ("PROVIDERS", "*")
            or isinstance(node, (ast.Global, ast.Nonlocal))
            and "PROVIDERS" in node.names
        ):
            return None
    if len(assigned) != 1:
        return {} if not assigned else None
    try:
        value = ast.literal_eval(assigned[0].value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return None
    return value


def _suite_providers() -> tuple[dict[str, str], list[str]]:
    """The providers the built-in suite packages declare (``PROVIDERS``), in package order, and the packages
    that could not be imported here (their models are not listed; ``get_suite`` reports why when used). A
    literal declaration is read from the package's source, so that naming the models imports no suite; any
    other by importing the package."""
    out: dict[str, str] = {}
    broken: list[str] = []
    for name in _suite_packages():
        package = f"{_SUITES_PACKAGE}.{name}"
        declared = _literal_providers(package)
        if declared is None:
            try:
                declared = dict(getattr(importlib.import_module(package), "PROVIDERS", {}))
            except Exception as e:  # noqa: BLE001 - e.g. a missing optional dependency: list the others
                broken.append(f"{name} ({type(e).__name__}: {e})")
                continue
        for provider, value in declared.items():
            out.setdefault(provider, value)
    return out, broken


def _builtin(kind: str, name: str | None = None) -> dict[str, str]:
    """Built-in targets of ``kind``; with ``name`` for providers, the suite packages' ``PROVIDERS`` are read only
    when the shared table lacks it (and imported only where not a literal: resolving ``openai`` or listing the
    models imports no suite)."""
    if kind == "suites":
        return {m: f"{_SUITES_PACKAGE}.{m}:SUITE" for m in _suite_packages()}
    table = _BUILTIN.get(kind, {})
    if kind != "providers" or (name is not None and name in table):
        return table
    return {**table, **{k: v for k, v in _suite_providers()[0].items() if k not in table}}


def names(kind: str) -> list[str]:
    found = dict(_builtin(kind))
    for name, value in _entry_point_targets(kind).items():
        found.setdefault(name, value)
    return sorted(found)


def in_order(kind: str) -> list[str]:
    """Every name of ``kind`` in the order it applies: built-ins as declared, then entry points by name."""
    builtin = _builtin(kind)
    return [*builtin, *sorted(n for n in _entry_point_targets(kind) if n not in builtin)]


def target(kind: str, name: str) -> str:
    """The ``module:attr`` a name points to (built-ins win over entry points of the same name)."""
    found = _builtin(kind, name).get(name) or _entry_point_targets(kind).get(name)
    if found is None:
        broken = _suite_providers()[1] if kind == "providers" else []
        why = f" (suite packages that could not be imported here: {'; '.join(broken)})" if broken else ""
        hint = _model_hint(name) if kind == "providers" else ""
        raise ConfigError(f"unknown {kind[:-1]} {name!r}{hint}; choose one of: {', '.join(names(kind))}{why}")
    return found


def _model_hint(provider: str) -> str:
    """``--model gpt-4o`` names no provider: say the ``provider:name`` it probably meant."""
    from vidaudit.core.types import likely_spec

    likely = likely_spec(provider)
    return f" (a model is provider:name; did you mean {likely}?)" if likely else " (a model is provider:name)"


def resolve(kind: str, name: str) -> Any:
    try:
        return load(target(kind, name), f"{kind[:-1]} {name!r}")
    except ModuleNotFoundError as e:
        extra = EXTRAS.get(name) if kind == "providers" else None
        if extra is not None and e.name is not None and e.name.split(".")[0] in extra[1]:
            raise missing_extra(f"the {name} provider", extra[0], e.name) from None
        raise


def get_suite(name: str) -> Suite:
    """The registered suite instance called ``name`` (a ConfigError naming the known ones otherwise)."""
    from vidaudit.core.contract.suite import check_suite

    return check_suite(resolve("suites", name), name)
