"""The floors of the house (docs/design.md, "Layers"): every import in src/vidaudit points down.

Reads every module's imports with ``ast`` -- module-level, function-level and ``TYPE_CHECKING`` ones
alike -- and checks the package-level graph: no cycle, and each top-level package imports only packages
on a floor below its own. A stage that needs something a suite or a tool knows goes through the contract
(``vidaudit.core.contract``) or a registry entry (``vidaudit.core.registry``: lazy ``"module:attr"``
strings, entry points), never an import.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path
from types import ModuleType

SRC = Path(__file__).resolve().parents[2] / "src" / "vidaudit"

#: top-level package (or module) of vidaudit -> its floor; a package imports only from lower floors
FLOORS: dict[str, int] = {
    "vidaudit": 0,  # the root package: __version__ only
    "core": 1,  # types, hashing, files, registry, the job runner, the console, and the contract
    "video": 2,
    "models": 3,
    "run": 4,
    "score": 5,
    "report": 6,
    "sdk": 7,  # the front door for suite authors: re-exports what a suite needs from the stages
    "suites": 8,
    "tools": 9,  # mech, humanstudy, interop, audit: built on the stages and the contract
    "cli": 10,  # the command line: the app, its help, the demo
}
STAGES = ("core", "video", "models", "run", "score", "report")
ABOVE_THE_STAGES = ("sdk", "suites", "tools", "cli")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path, module: str | None = None) -> list[tuple[str, int]]:
    """Every vidaudit module this file imports (absolute name, line), wherever the import statement sits."""
    module = module or _module_name(path)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((_from_module(node, package), node.lineno))
    return [(n, line) for n, line in out if n == "vidaudit" or n.startswith("vidaudit.")]


def _from_module(node: ast.ImportFrom, package: list[str]) -> str:
    """The absolute name of the module a ``from ... import`` reads, relative imports resolved in ``package``."""
    if not node.level:
        return node.module or ""
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "vidaudit"


@functools.cache
def _edges() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> where (``module:line imports target``)."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        src = _module_name(path)
        for target, line in _imported(path):
            a, b = _top(src), _top(target)
            if a != b:
                edges[(a, b)].append(f"{src}:{line} imports {target}")
    return edges


def test_the_import_reader_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    fake = tmp_path / "probe.py"
    fake.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import vidaudit.tools.mech\n"
        "def f():\n    from vidaudit.suites import counting\n    from ..score import stats\n",
        encoding="utf-8",
    )
    found = sorted(_imported(fake, "vidaudit.run.probe"), key=lambda x: x[1])
    assert found == [("vidaudit.tools.mech", 3), ("vidaudit.suites", 5), ("vidaudit.score", 6)]


def test_every_top_level_package_has_a_floor() -> None:
    tops = {_top(_module_name(p)) for p in SRC.rglob("*.py")}
    assert tops - set(FLOORS) == set(), "give each new top-level package a floor in FLOORS and docs/design.md"


def test_the_root_package_imports_nothing_of_vidaudit() -> None:
    assert _imported(SRC / "__init__.py") == []


def test_no_package_cycle() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in _edges():
        graph[a].add(b)
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], node, nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*stack, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "package import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_every_import_points_to_a_lower_floor() -> None:
    bad = [
        f"{a} (floor {FLOORS[a]}) -> {b} (floor {FLOORS[b]}): {where[0]}"
        + (f" (+{len(where) - 1} more)" if len(where) > 1 else "")
        for (a, b), where in sorted(_edges().items())
        if a in FLOORS and b in FLOORS and not FLOORS[b] < FLOORS[a]
    ]
    assert not bad, "imports that reach up or sideways:\n" + "\n".join(bad)


def test_the_stages_import_no_suite_tool_or_cli() -> None:
    bad = [w for (a, b), where in sorted(_edges().items()) if a in STAGES and b in ABOVE_THE_STAGES for w in where]
    assert not bad, "a stage looks suites and tools up through the contract or the registry:\n" + "\n".join(bad)


def test_the_report_reads_the_scored_file_not_the_run() -> None:
    """``report/`` imports nothing of ``run/``: what it needs of a run (the frames sent, the perturbed videos, the
    settings) travels in the scored file ``score`` writes (``score/scored_run.py``)."""
    bad = [w for (a, b), where in sorted(_edges().items()) if a == "report" and b == "run" for w in where]
    assert not bad, "report/ reads the run through the scored file:\n" + "\n".join(bad)


def test_score_and_the_suites_only_read_the_run_store() -> None:
    """Scoring reads a run; only ``run/`` writes one: above ``run/``, the store is imported through its reader
    (``run/store/reader.py``) alone, never its writer, its log sync or its schema."""
    above = ("score", "report", *ABOVE_THE_STAGES[:-1])  # the command line opens the writer to run
    bad = [
        f"{_module_name(path)}:{line} imports {target}"
        for path in sorted(SRC.rglob("*.py"))
        if _top(_module_name(path)) in above
        for target, line in _imported(path)
        if target.startswith("vidaudit.run.store") and target != "vidaudit.run.store.reader"
    ]
    assert not bad, "read a run store through vidaudit.run.store.reader:\n" + "\n".join(bad)


def test_the_floors_of_the_stages_are_in_order() -> None:
    assert [FLOORS[s] for s in STAGES] == sorted(FLOORS[s] for s in STAGES)
    assert max(FLOORS[s] for s in STAGES) < min(FLOORS[t] for t in ABOVE_THE_STAGES)


def test_a_suite_imports_vidaudit_only_through_the_front_door() -> None:
    """A module of ``suites/NAME/`` imports ``vidaudit.sdk`` and its own package, nothing else of vidaudit."""
    bad = []
    for path in sorted((SRC / "suites").rglob("*.py")):
        module = _module_name(path)
        own = ".".join(module.split(".")[:3])  # vidaudit.suites.NAME
        bad += [
            f"{module}:{line} imports {target}"
            for target, line in _imported(path)
            if target != "vidaudit.sdk"
            and target != own
            and not target.startswith(own + ".")
            and module != "vidaudit.suites"
        ]
    assert not bad, "a suite imports vidaudit through vidaudit.sdk (or add the name it needs there):\n" + "\n".join(bad)


def _public_definitions(module: ModuleType) -> set[str]:
    """The names a module defines at its top level (classes, functions, assigned names) that do not start with _."""
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def test_the_front_door_only_re_exports() -> None:
    """``vidaudit.sdk`` defines nothing of its own: ``__all__`` is exactly the names its ``TYPE_CHECKING`` block
    imports (each once; the whole contract among them), and each resolves, lazily, to the very object of the
    module it names."""
    import importlib

    import vidaudit.sdk as sdk
    from vidaudit.core.contract import profile, records, report, roles, suite

    tree = ast.parse((SRC / "sdk.py").read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    sources = [
        (a.asname or a.name, n.module, a.name) for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names
    ]
    assert all(isinstance(n, ast.ImportFrom) for n in block.body)
    assert len(sdk.__all__) == len(set(sdk.__all__)) and sorted(sdk.__all__) == sorted(name for name, _, _ in sources)
    contract = {name for module in (profile, records, report, roles, suite) for name in _public_definitions(module)}
    assert contract - set(sdk.__all__) == set()  # the whole contract: one list of it, the front door's
    for name, module, defined in sources:  # `import x as name`: the front door's name for the module's `x`
        assert module is not None
        home = importlib.import_module(module)
        expected = getattr(home, defined, None) or importlib.import_module(f"{module}.{defined}")
        assert getattr(sdk, name) is expected, name


def test_tests_mirror_the_package_and_share_only_through_helpers() -> None:
    """tests/ mirrors src/vidaudit/: every test module sits in a folder named after a package (or codebase/), its
    basename is unique (the default import mode needs it), and it imports another test module only from its own
    folder; what two folders share is a helper module at tests/ (browser.py, laneclips.py, ...)."""
    tests = SRC.parents[1] / "tests"
    helpers = {p.stem for p in tests.glob("*.py")}
    modules = sorted(tests.rglob("test_*.py"))
    by_stem: dict[str, list[Path]] = defaultdict(list)
    for path in modules:
        by_stem[path.stem].append(path)
    assert not [paths for paths in by_stem.values() if len(paths) > 1]
    problems = []
    for path in modules:
        folder = path.parent.relative_to(tests)
        if folder.parts[0] != "codebase" and not (SRC / folder).is_dir():
            problems.append(f"{path.relative_to(tests)}: no package src/vidaudit/{folder}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            for name in names:
                top = name.split(".")[0]
                if top in by_stem and by_stem[top][0].parent != path.parent:
                    problems.append(f"{path.relative_to(tests)} imports {top} from another folder")
                if top not in by_stem and top not in helpers and top.startswith("test_"):
                    problems.append(f"{path.relative_to(tests)} imports a missing test module {top}")
    assert problems == []


def _module_graph() -> tuple[dict[str, set[str]], dict[str, int]]:
    """Every module -> the vidaudit modules it imports (``from pkg import sub`` is an import of ``pkg.sub`` when
    that is a module; function-level and ``TYPE_CHECKING`` imports included), and per module the imports of
    vidaudit that sit inside a function."""
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    inside: dict[str, int] = defaultdict(int)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        nested = {
            id(n)
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            for n in ast.walk(f)
            if isinstance(n, ast.Import | ast.ImportFrom)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = _from_module(node, package)
                targets = [module, *(f"{module}.{a.name}" for a in node.names)]
            else:
                continue
            own = {resolve(t) for t in targets if t == "vidaudit" or t.startswith("vidaudit.")} - {None, name}
            if own and id(node) in nested:
                inside[name] += 1
            graph[name] |= {t for t in own if t is not None}
    return graph, inside


def test_no_module_import_cycle() -> None:
    """No circle of modules, lazy and type-only imports included (issue 33: a circle hidden in a function is
    still a circle)."""
    import graphlib

    graph, _ = _module_graph()
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        raise AssertionError(f"modules import each other in a circle: {' -> '.join(e.args[1])}") from None


def test_imports_inside_functions_stay_few() -> None:
    """Imports of vidaudit inside functions, outside the command line, are for start-up only (each suite's
    entry, the registry, the HTTP providers' base): at most 80, the bound issue 33 set (14 when it was set)."""
    _, inside = _module_graph()
    counted = {m: n for m, n in inside.items() if not (m.startswith("vidaudit.cli") or m.endswith(".cli"))}
    assert sum(counted.values()) <= 80, sorted(counted.items(), key=lambda kv: -kv[1])


def test_no_module_over_600_lines() -> None:
    """Small modules: none over 600 lines as ruff's formatter writes it."""
    long = {
        _module_name(p): n for p in SRC.rglob("*.py") if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}
