"""The examples in the package's docstrings run, imported by their installed names."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("deniable.client", "deniable.aggregator", "deniable.shared")


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            if ".wire." not in info.name:  # generated code has no examples
                names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
