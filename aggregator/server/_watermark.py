"""A free-space watermark: below it new reports are refused, while everything else still works."""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from deniable.aggregator.server._limits import LimitError
from deniable.shared.errors import ResourceExhausted

__all__ = ["DEFAULT_MIN_FREE", "PROBE_EVERY_S", "FreeSpace", "MinFree", "Usage"]

DEFAULT_MIN_FREE = "1GiB"
PROBE_EVERY_S = 1.0  # the filesystem is asked at most this often; refusals in between reuse it
_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}  # fmt: skip
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*|%)\s*")


class Usage(NamedTuple):
    """A filesystem's size and the bytes free to the daemon (``shutil.disk_usage``'s)."""

    total: int
    used: int
    free: int


@dataclass(frozen=True)
class MinFree:
    """The free space below which new reports are refused: bytes, or a share of the disk.

    Attributes:
        text: as given, e.g. ``1GiB``, ``500MB``, ``5%`` or ``0`` (no watermark).
        size: the bytes (0 when given as a share).
        share: the share of the filesystem's size (0 when given in bytes).
    """

    text: str
    size: int = 0
    share: float = 0.0

    @classmethod
    def parse(cls, text: str) -> MinFree:
        """``1GiB``, ``1.5GB``, ``500M``, ``1048576`` (bytes), ``5%`` or ``0``.

        Units are powers of 1000 (k, M, G, T, with or without B) or of 1024 (KiB, MiB,
        GiB, TiB), in any case.

        Example:
            >>> MinFree.parse("2GiB").size, MinFree.parse("5%").share
            (2147483648, 0.05)
        """
        match = _SIZE.fullmatch(text)
        unit = match.group(2).lower() if match else ""
        if match is None or (unit != "%" and unit not in _UNITS):
            raise LimitError(
                "min_free_space",
                f"{text!r} is not a size: bytes with an optional unit (k, M, G, T, KiB, "
                "MiB, GiB, TiB), a share of the disk (5%), or 0 for no watermark",
            )
        number = float(match.group(1))
        if unit == "%":
            if number >= 100:
                raise LimitError("min_free_space", f"a share must be below 100%, got {text!r}")
            return cls(text.strip(), share=number / 100)
        return cls(text.strip(), size=int(number * _UNITS[unit]))

    @property
    def enabled(self) -> bool:
        """Whether there is a watermark at all."""
        return self.size > 0 or self.share > 0

    def bytes_of(self, usage: Usage) -> int:
        """The watermark in bytes on a filesystem of this size."""
        return self.size or int(self.share * usage.total)


class FreeSpace:
    """Refuse new reports while the database's filesystem has less free space than ``minimum``.

    The filesystem is probed at most every ``every`` seconds (``clock``); in between the
    last answer stands. Only SubmitReports asks: estimates, listings and exports, which
    write nothing, go on. ``probe`` is ``shutil.disk_usage`` unless a test gives its own.
    """

    def __init__(
        self,
        path: str,
        minimum: MinFree,
        *,
        probe: Callable[[str], Usage] | None = None,
        clock: Callable[[], float] = time.monotonic,
        every: float = PROBE_EVERY_S,
    ) -> None:
        self.path = path
        self.minimum = minimum
        self.probe = probe or _disk_usage
        self.clock = clock
        self.every = every
        self._last: tuple[float, Usage] | None = None
        self._lock = threading.Lock()

    def usage(self) -> Usage:
        """The filesystem's usage, probed now unless it was less than ``every`` s ago."""
        with self._lock:
            now = self.clock()
            if self._last is None or now - self._last[0] >= self.every:
                self._last = (now, self.probe(self.path))
            return self._last[1]

    def check(self) -> None:
        """Raise ResourceExhausted if the free space is below the watermark.

        A filesystem that cannot be probed (say, its folder was removed) is not held
        against the batch: the storage reports its own error if it cannot write.
        """
        try:
            usage = self.usage()
        except OSError:
            return
        floor = self.minimum.bytes_of(usage)
        if usage.free < floor:
            raise ResourceExhausted(
                f"reports: the database's disk ({self.path}) has {_size(usage.free)} free, "
                f"below the aggregator's watermark of {_size(floor)} (--min-free-space "
                f"{self.minimum.text}): no new reports are stored until space is freed; "
                "estimates and exports still work; nothing stored"
            )


def _disk_usage(path: str) -> Usage:
    total, used, free = shutil.disk_usage(path)
    return Usage(total, used, free)


def _size(count: int) -> str:
    """Bytes in the largest binary unit that keeps a figure of at least 1, one decimal."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:,} bytes"
