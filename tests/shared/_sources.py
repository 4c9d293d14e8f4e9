"""Byte sources for tests of the samplers: scripted chunks, and a generator that counts reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np


class ScriptedSource:
    """A byte source that returns prepared chunks in order and records every request."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self.requests: list[int] = []

    def __call__(self, size: int) -> bytes:
        self.requests.append(size)
        chunk = next(self._chunks)
        assert len(chunk) == size
        return chunk


class CountingGenerator(np.random.Generator):
    """A seeded generator that records the size of every ``bytes`` call."""

    def __init__(self, seed: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.calls: list[int] = []

    def bytes(self, length: int) -> Any:
        self.calls.append(length)
        return super().bytes(length)
