"""The package's shape: one-way layers, no import cycles, mechanisms dispatched by interface.

Read from the source (``ast``), not by importing, so that an import made inside a function
counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deniable.shared.mechanisms import BUILT_IN, FrequencyOracle, Mechanism, NumericMechanism

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {
    "shared": "deniable.shared",
    "client": "deniable.client",
    "aggregator": "deniable.aggregator",
}

# Who may import whom inside the aggregator: each subpackage only from those at its right.
AGGREGATOR_LAYERS = ("cli", "analysis", "server", "storage")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (or module.name)
    line: int
    top_level: bool  # at module level, outside ``if TYPE_CHECKING``


def _module_name(path: Path) -> str:
    folder = path.relative_to(ROOT).parts[0]
    parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([FOLDERS[folder], *parts])


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "wire" in path.relative_to(ROOT).parts:
                continue  # generated
            yield _module_name(path), ast.parse(path.read_text(), filename=str(path))


def _imports(module: str, tree: ast.Module) -> Iterator[Import]:
    top = {id(node) for node in tree.body}
    checking: set[int] = set()
    for statement in tree.body:
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            checking.update(id(child) for child in ast.walk(statement))
    for node in ast.walk(tree):
        top_level = id(node) in top and id(node) not in checking
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, node.lineno, top_level)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{module}:{node.lineno}: relative import"
            for alias in node.names:
                yield Import(module, f"{node.module}.{alias.name}", node.lineno, top_level)


SOURCES = dict(_sources())
IMPORTS = [item for module, tree in SOURCES.items() for item in _imports(module, tree)]


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_sources_are_found() -> None:
    assert "deniable.shared.mechanisms._base" in SOURCES
    assert "deniable.aggregator.storage.sqlite._storage" in SOURCES
    assert len(IMPORTS) > 500


def test_shared_imports_neither_side() -> None:
    wrong = [
        i for i in IMPORTS
        if _under(i.module, "deniable.shared")
        and (_under(i.target, "deniable.client") or _under(i.target, "deniable.aggregator"))
    ]  # fmt: skip
    assert wrong == []


def test_the_client_never_imports_the_aggregator() -> None:
    wrong = [
        i for i in IMPORTS
        if _under(i.module, "deniable.client") and _under(i.target, "deniable.aggregator")
    ]  # fmt: skip
    assert wrong == []


def test_the_aggregator_uses_only_the_clients_public_api() -> None:
    wrong = [
        i for i in IMPORTS
        if _under(i.module, "deniable.aggregator")
        and _under(i.target, "deniable.client")
        and i.target.split(".")[2].startswith("_")
    ]  # fmt: skip
    assert wrong == []


@pytest.mark.parametrize("layer", AGGREGATOR_LAYERS)
def test_aggregator_layers_import_only_downwards(layer: str) -> None:
    allowed = AGGREGATOR_LAYERS[AGGREGATOR_LAYERS.index(layer) :]
    package = f"deniable.aggregator.{layer}"
    wrong = []
    for item in IMPORTS:
        if not _under(item.module, package) or not _under(item.target, "deniable.aggregator"):
            continue
        parts = item.target.split(".")
        if len(parts) > 2 and parts[2] not in allowed:
            wrong.append(item)
    assert wrong == []


def _cycles(imports: list[Import]) -> list[list[str]]:
    """Cycles among module-level imports (a function-level import breaks a cycle)."""
    graph: dict[str, set[str]] = {module: set() for module in SOURCES}
    for item in imports:
        if not item.top_level:
            continue
        target = item.target
        while target and target not in SOURCES:  # "pkg.module.name" -> "pkg.module"
            target = target.rpartition(".")[0]
        if target and target != item.module and not item.module.startswith(target + "."):
            graph[item.module].add(target)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def test_no_import_cycles_at_module_level() -> None:
    assert _cycles(IMPORTS) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    a, b = "deniable.shared._exact", "deniable.shared._validate"
    loop = [Import(a, f"{b}.as_real", 1, True), Import(b, f"{a}.exp_at_least", 1, True)]
    assert _cycles([*IMPORTS, *loop]) == [[a, b, a]]
    assert _cycles([*IMPORTS, loop[0], Import(b, a, 5, False)]) == []  # inside a function


_BASES: tuple[type[Mechanism], ...] = (Mechanism, FrequencyOracle, NumericMechanism)
MECHANISM_CLASSES = {cls.__name__ for cls in (*BUILT_IN, *_BASES)}
MECHANISM_NAMES = {cls.name for cls in BUILT_IN}


def _dispatches() -> Iterator[str]:
    """``isinstance`` on mechanism classes, and comparisons with a mechanism's name."""
    for module, tree in SOURCES.items():
        if _under(module, "deniable.shared.mechanisms"):
            continue
        for node in ast.walk(tree):
            where = f"{module}:{getattr(node, 'lineno', '?')}"
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass")
                and len(node.args) == 2
            ):
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                if names & MECHANISM_CLASSES:
                    yield f"{where}: {ast.unparse(node)}"
            if isinstance(node, ast.Compare):
                values = [node.left, *node.comparators]
                constants = {
                    c.value for v in values for c in ast.walk(v)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }  # fmt: skip
                if constants & MECHANISM_NAMES:
                    yield f"{where}: {ast.unparse(node)}"


def test_mechanisms_are_dispatched_through_the_interface_and_registry() -> None:
    assert list(_dispatches()) == []


def test_the_dispatch_check_sees_a_violation() -> None:
    tree = ast.parse('if spec.kind == "grr":\n    pass\nisinstance(spec, OptimizedUnaryEncoding)')
    SOURCES["deniable.client._probe"] = tree
    try:
        found = [line for line in _dispatches() if line.startswith("deniable.client._probe:")]
    finally:
        del SOURCES["deniable.client._probe"]
    assert len(found) == 2
