"""Storage's packages are reached through their public faces: each ``__init__``."""

from __future__ import annotations

from tests.test_architecture import IMPORTS, Import

STORAGE = "deniable.aggregator.storage"


def _private_reach(item: Import) -> str | None:
    """The package whose private module ``item`` reaches from outside it, if any."""
    if not (item.target == STORAGE or item.target.startswith(STORAGE + ".")):
        return None
    parts = item.target.split(".")
    for depth in range(3, len(parts)):
        if parts[depth].startswith("_"):
            package = ".".join(parts[:depth])
            inside = item.module == package or item.module.startswith(package + ".")
            return None if inside else package
    return None


def test_private_storage_modules_are_reached_only_from_inside_their_package() -> None:
    wrong = [
        f"{i.module}:{i.line} imports {i.target}"
        for i in IMPORTS
        if i.module.startswith("deniable.") and _private_reach(i) is not None
    ]
    assert wrong == []


def test_the_face_check_sees_a_private_reach() -> None:
    reach = Import("deniable.aggregator.server._x", f"{STORAGE}.codec._decode.Group", 1, True)
    assert _private_reach(reach) == f"{STORAGE}.codec"
    inside = Import(f"{STORAGE}.sqlite.index._jobs", f"{STORAGE}.sqlite._transaction.t", 1, True)
    assert _private_reach(inside) is None
    face = Import("deniable.aggregator.cli._check", f"{STORAGE}.open_reader", 1, True)
    assert _private_reach(face) is None
