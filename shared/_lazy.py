"""Package attributes imported on first use (PEP 562), so that importing a package is cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for names imported from modules on demand.

    ``exports`` maps each public name to the module it comes from; the first access imports
    that module and caches the value in the package's ``namespace``.

    Example:
        >>> getattr_, dir_ = lazy_exports("demo", {"sqrt": "math"}, {})
        >>> getattr_("sqrt")(9.0), "sqrt" in dir_()
        (3.0, True)
    """

    def attribute(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted([*namespace, *exports])

    return attribute, names
