"""The package's shape: one-way layers, no import cycles, mechanisms dispatched by interface.

Read from the source (``ast``), not by importing, so that an import made inside a function
counts as much as one at the top of a module: a cycle held apart only by importing inside a
function is still a cycle. Imports under ``if TYPE_CHECKING:`` never run and do not count.
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

# Who may import whom inside the aggregator: each layer only from those at its right.
AGGREGATOR_LAYERS = ("cli", "questions", "analysis", "server", "storage")
# Beside the layers: ``central`` (the trusted curator and the closeness audit, for a custodian
# of raw data) imports no other subpackage of the aggregator, only ``deniable.shared`` and
# itself; the layers named here may use it, through its subpackages' public faces only
# (``analysis`` for the local-versus-central comparison of ``simulate --compare-central``).
CENTRAL = "central"
CENTRAL_USERS = ("cli", "analysis", "server")
# ``central`` may use ``storage``'s public face: the curator's ledger lives in the custodian's
# database, named and located as the aggregator's is (its URLs, its data directory).
CENTRAL_USES = ("storage",)
AGGREGATOR_ALLOWED: dict[str, set[str]] = {
    layer: {*AGGREGATOR_LAYERS[i:], *([CENTRAL] if layer in CENTRAL_USERS else [])}
    for i, layer in enumerate(AGGREGATOR_LAYERS)
} | {CENTRAL: {CENTRAL, *CENTRAL_USES}}

# The layers of deniable.shared.mechanisms, lowest first: a module imports only from its own
# layer or those below (the cycle check orders a layer inside). A module not listed is a
# concrete mechanism: a new mechanism is one module (plus register()), nothing here.
MECHANISM_LAYERS: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (name, frozenset(modules.split()))
    for name, modules in (
        ("helpers", "_parameters _mean_intervals _numeric_sampling _universal_hash _oue_wire"),
        ("protocols and tallies", "_rates _tally"),
        (
            "estimators",
            "_proportion _rr_coverage _frequency_estimate _item_estimate _mean _anytime",
        ),
        ("mechanism bases", "_base _options _frequency_oracle _numeric"),
        ("concrete mechanisms", ""),
        ("registry", "_registry _wire __init__"),
    )
)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (or module.name)
    line: int
    top_level: bool  # at module level (not inside a function, class or other block)
    type_only: bool = False  # under ``if TYPE_CHECKING:``: never runs


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
    checking: set[int] = set()  # the bodies of ``if TYPE_CHECKING:``, wherever they are
    for statement in ast.walk(tree):
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            for child in statement.body:
                checking.update(id(node) for node in ast.walk(child))
    for node in ast.walk(tree):
        top_level, type_only = id(node) in top, id(node) in checking
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, node.lineno, top_level, type_only)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{module}:{node.lineno}: relative import"
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                yield Import(module, target, node.lineno, top_level, type_only)


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


def _layer_violations(imports: list[Import], layer: str) -> list[Import]:
    """Imports of the aggregator's ``layer`` that reach a subpackage it may not use."""
    allowed = AGGREGATOR_ALLOWED[layer]
    package = f"deniable.aggregator.{layer}"
    wrong = []
    for item in imports:
        if not _under(item.module, package) or not _under(item.target, "deniable.aggregator"):
            continue
        parts = item.target.split(".")
        if len(parts) > 2 and parts[2] not in allowed:
            wrong.append(item)
    return wrong


def _central_violations(imports: list[Import]) -> list[Import]:
    """``central`` reaching past ``deniable.shared`` and itself, or others past its faces."""
    central = f"deniable.aggregator.{CENTRAL}"
    wrong = []
    for item in imports:
        if _under(item.module, central):
            used = any(
                _under(item.target, f"deniable.aggregator.{name}")
                and not any(p.startswith("_") for p in item.target.split(".")[2:])
                for name in CENTRAL_USES
            )
            if _under(item.target, "deniable") and not (
                _under(item.target, "deniable.shared") or _under(item.target, central) or used
            ):
                wrong.append(item)
        elif _under(item.target, central):
            # deniable.aggregator.central.<subpackage>[.<public name>]
            parts = item.target.split(".")
            if len(parts) < 4 or any(part.startswith("_") for part in parts[3:]):
                wrong.append(item)
    return wrong


def test_every_aggregator_subpackage_has_a_place() -> None:
    found = {path.parent.name for path in (ROOT / "aggregator").glob("*/__init__.py")}
    assert found == set(AGGREGATOR_ALLOWED)  # a new subpackage is placed before it is checked


@pytest.mark.parametrize("layer", sorted(AGGREGATOR_ALLOWED))
def test_aggregator_layers_import_only_downwards(layer: str) -> None:
    assert _layer_violations(IMPORTS, layer) == []


def test_central_imports_only_shared_and_is_used_through_its_faces() -> None:
    assert _central_violations(IMPORTS) == []


def test_the_layer_checks_see_a_violation() -> None:
    noise = "deniable.aggregator.central.curator._noise"
    upward = Import(noise, "deniable.aggregator.analysis._planner.plan", 1, True)
    into = Import(
        "deniable.aggregator.storage._base", "deniable.aggregator.central.curator", 1, True
    )
    assert _layer_violations([*IMPORTS, upward], CENTRAL) == [upward]
    assert _layer_violations([*IMPORTS, into], "storage") == [into]
    wrong = [
        upward,
        Import(noise, "deniable.client.Client", 2, False),  # inside a function too
        Import(noise, "deniable.aggregator.require_extra", 3, True),
        Import("deniable.aggregator.cli._closeness", f"{noise}.noise_scale", 4, True),
        Import("deniable.aggregator.cli._closeness", "deniable.aggregator.central", 5, True),
    ]
    fine = [
        Import(noise, "deniable.shared.sampling.os_source", 6, True),
        Import(noise, "deniable.aggregator.central.curator._table.Table", 7, True),
        Import(
            "deniable.aggregator.cli._closeness", "deniable.aggregator.central.closeness", 8, True
        ),
        Import(
            "deniable.aggregator.analysis._x", "deniable.aggregator.central.curator.Ledger", 9, True
        ),
    ]
    assert _central_violations([*IMPORTS, *wrong, *fine]) == wrong


def _mechanism_layer(module: str) -> int:
    """Index in MECHANISM_LAYERS of a module of deniable.shared.mechanisms."""
    short = module.removeprefix("deniable.shared.mechanisms").lstrip(".") or "__init__"
    for index, (_, modules) in enumerate(MECHANISM_LAYERS):
        if short in modules:
            return index
    return [name for name, _ in MECHANISM_LAYERS].index("concrete mechanisms")


def _upward_in_mechanisms(imports: list[Import]) -> list[Import]:
    """Imports inside deniable.shared.mechanisms of a higher layer (TYPE_CHECKING ones too)."""
    package = "deniable.shared.mechanisms"
    wrong = []
    for item in imports:
        if not _under(item.module, package) or not _under(item.target, package):
            continue
        target = item.target
        while target not in SOURCES:  # "pkg.module.name" -> "pkg.module"
            target = target.rpartition(".")[0]
        if _mechanism_layer(target) > _mechanism_layer(item.module):
            wrong.append(item)
    return wrong


def test_mechanism_modules_import_only_downwards() -> None:
    assert _upward_in_mechanisms(IMPORTS) == []


def test_the_layer_check_sees_an_upward_import() -> None:
    package = "deniable.shared.mechanisms"
    probe = Import(f"{package}._proportion", f"{package}.randomized_response.X", 1, False, True)
    assert _upward_in_mechanisms([*IMPORTS, probe]) == [probe]


def test_every_private_mechanism_module_has_a_layer() -> None:
    listed = set().union(*(modules for _, modules in MECHANISM_LAYERS))
    private = {
        module.rpartition(".")[2]
        for module in SOURCES
        if _under(module, "deniable.shared.mechanisms") and module.rpartition(".")[2][0] == "_"
    }
    assert private - listed == set()
    assert listed - private - {"__init__"} == set()


def _cycles(imports: list[Import]) -> list[list[str]]:
    """Cycles among the imports that run, at module level or inside functions.

    Only imports under ``if TYPE_CHECKING:`` are left out.
    """
    graph: dict[str, set[str]] = {module: set() for module in SOURCES}
    for item in imports:
        if item.type_only:
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


def test_no_import_cycles() -> None:
    assert _cycles(IMPORTS) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    a, b = "deniable.shared._exact", "deniable.shared._validate"
    loop = [Import(a, f"{b}.as_real", 1, True), Import(b, f"{a}.exp_at_least", 1, True)]
    assert _cycles([*IMPORTS, *loop]) == [[a, b, a]]
    inside = Import(b, a, 5, False)  # inside a function: runs all the same
    assert _cycles([*IMPORTS, loop[0], inside]) == [[a, b, a]]
    typing = Import(b, a, 5, False, type_only=True)  # under if TYPE_CHECKING: never runs
    assert _cycles([*IMPORTS, loop[0], typing]) == []


def test_imports_are_read_where_they_run() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import deniable.shared._exact\n"
        "if TYPE_CHECKING:\n"
        "    from deniable.shared import _validate\n"
        "def f():\n"
        "    from deniable.shared.stats import normal_quantile\n"
        "    if TYPE_CHECKING:\n"
        "        import deniable.shared.sampling\n"
    )
    found = {i.target: (i.top_level, i.type_only) for i in _imports("probe", ast.parse(source))}
    assert found == {
        "typing.TYPE_CHECKING": (True, False),
        "deniable.shared._exact": (True, False),
        "deniable.shared._validate": (False, True),
        "deniable.shared.stats.normal_quantile": (False, False),
        "deniable.shared.sampling": (False, True),
    }


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


QUESTION_PACKAGES = ("deniable.shared.questions", "deniable.aggregator.questions")
# A frequency oracle reads its number of options from the question message: for a joint
# question, the product of its parts' sizes, read part by part. Mechanisms sit below the
# question types, so they cannot ask the type; the one exception, named.
READS_JOINT_PARTS = "deniable.shared.mechanisms._frequency_oracle"


def _question_dispatches() -> Iterator[str]:
    """Comparisons with a question type's name outside the question packages."""
    from deniable.shared.questions import question_types

    names = set(question_types())
    for module, tree in SOURCES.items():
        if module == READS_JOINT_PARTS or any(_under(module, p) for p in QUESTION_PACKAGES):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            values = [node.left, *node.comparators]
            constants = {
                c.value for v in values for c in ast.walk(v)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            }  # fmt: skip
            if constants & names:
                yield f"{module}:{node.lineno}: {ast.unparse(node)}"


def test_question_types_are_dispatched_through_their_registries() -> None:
    assert list(_question_dispatches()) == []


def test_the_question_dispatch_check_sees_a_violation() -> None:
    tree = ast.parse(
        'if kind == "numeric":\n    pass\nif question_type in ("joint", "x"):\n    pass'
    )
    SOURCES["deniable.aggregator.cli._probe"] = tree
    try:
        found = [line for line in _question_dispatches() if "cli._probe:" in line]
    finally:
        del SOURCES["deniable.aggregator.cli._probe"]
    assert len(found) == 2


FACE_USERS = ("deniable.aggregator.cli", "deniable.aggregator.questions")


def _private_reaches(imports: list[Import]) -> Iterator[str]:
    """Imports from the commands or the question types of another package's private module."""
    for item in imports:
        user = next((u for u in FACE_USERS if _under(item.module, u)), None)
        if user is None or not _under(item.target, "deniable.aggregator"):
            continue
        if _under(item.target, user):
            continue
        package = item.target.split(".")[2:-1]  # the name imported is last
        if any(part.startswith("_") for part in package):
            yield f"{item.module}:{item.line}: {item.target}"


def test_commands_and_question_types_use_only_public_faces() -> None:
    assert list(_private_reaches(IMPORTS)) == []


def test_the_face_check_sees_a_private_reach() -> None:
    probe = [
        Import("deniable.aggregator.cli._probe", "deniable.aggregator.storage._copy.copy", 1, True),
        Import(
            "deniable.aggregator.questions.x", "deniable.aggregator.analysis.simulation.x", 2, True
        ),
        Import("deniable.aggregator.cli._probe", "deniable.aggregator.cli._common.fail", 3, True),
    ]
    found = list(_private_reaches(probe))
    assert found == ["deniable.aggregator.cli._probe:1: deniable.aggregator.storage._copy.copy"]
