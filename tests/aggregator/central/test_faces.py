"""The public faces of ``deniable.aggregator.central``: each name is its module's, loaded lazily."""

from __future__ import annotations

import importlib
import subprocess
import sys
from types import ModuleType

import pytest

from deniable.aggregator.central import closeness, curator

FACES = [curator, closeness]


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_every_public_name_is_the_one_of_its_module(face: ModuleType) -> None:
    assert sorted(face.__all__) == sorted(face._EXPORTS)
    for name in face.__all__:
        module = importlib.import_module(face._EXPORTS[name])
        # a private module of the face, or a subpackage (itself a face)
        assert module.__name__.startswith(f"{face.__name__}.")
        assert getattr(face, name) is getattr(module, name)
    assert set(face.__all__) <= set(dir(face))


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_an_unknown_name_is_an_attribute_error(face: ModuleType) -> None:
    with pytest.raises(AttributeError, match="no attribute 'Storage'"):
        face.Storage  # noqa: B018 - the access is the test


def test_importing_a_face_loads_none_of_its_modules() -> None:
    code = (
        "import sys\n"
        "from deniable.aggregator.central import closeness, curator\n"
        "print(sorted(m for m in sys.modules if m.startswith('deniable.aggregator.')))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = run.stdout.strip()
    assert loaded == str(
        [
            "deniable.aggregator.central",
            "deniable.aggregator.central.closeness",
            "deniable.aggregator.central.curator",
        ]
    )
