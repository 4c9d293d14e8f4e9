"""True answers of simulated populations: option names and shares, numeric value shapes."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deniable.shared._validate import as_real
from deniable.shared.mechanisms._parameters import MAX_OPTIONS, check_options

__all__ = [
    "SHARE_TOLERANCE",
    "NumericDistribution",
    "check_option_names",
    "check_shares",
    "parse_options",
    "parse_shares",
]

SHARE_TOLERANCE = 1e-9
"""How far the true option shares may sum from 1."""

QUADRATURE_POINTS = 256
"""Quadrature nodes used to average a function of the true value over a distribution."""


def parse_options(text: str) -> tuple[str, ...]:
    """Option names from ``K`` (options ``0``..``K−1``) or comma-separated names.

    Example:
        >>> parse_options("3"), parse_options("red, green ,blue")
        (('0', '1', '2'), ('red', 'green', 'blue'))
    """
    stripped = text.strip()
    if re.fullmatch(r"[+-]?\d+", stripped):
        return tuple(str(i) for i in range(check_options(int(stripped))))
    return check_option_names([name.strip() for name in stripped.split(",")], None)


def check_option_names(names: Iterable[str], k: int | None) -> tuple[str, ...]:
    """Return distinct, non-empty option names (``k`` of them when ``k`` is given)."""
    result = tuple(names)
    for name in result:
        if not isinstance(name, str) or not name:
            raise ValueError(f"option names must be non-empty strings, got {name!r}")
        if result.count(name) > 1:
            raise ValueError(f"option names must be distinct, got {name!r} twice")
    if k is not None and len(result) != k:
        raise ValueError(f"need k={k} option names, got {len(result)}: {list(result)}")
    if not 2 <= len(result) <= MAX_OPTIONS:
        raise ValueError(
            f"need 2 to {MAX_OPTIONS} options (a number K or comma-separated names), "
            f"got {len(result)}: {list(result)}"
        )
    return result


def parse_shares(text: str) -> tuple[float, ...]:
    """Shares from ``0.5,0.3,0.2`` (not yet validated: see :func:`check_shares`)."""
    shares = []
    for item in text.split(","):
        try:
            shares.append(float(item))
        except ValueError:
            raise ValueError(
                f"distribution must be comma-separated shares such as 0.5,0.3,0.2; "
                f"{item.strip()!r} is not a number"
            ) from None
    return tuple(shares)


def check_shares(shares: Iterable[object], k: int) -> tuple[float, ...]:
    """True option shares: k finite numbers >= 0 summing to 1 within 1e-9; raise naming a bad one.

    Example:
        >>> check_shares([0.5, 0.3, 0.2], 3)
        (0.5, 0.3, 0.2)
    """
    values = tuple(as_real(f"share {index}", share) for index, share in enumerate(shares))
    if len(values) != k:
        raise ValueError(
            f"distribution must have one share per option (k={k}), "
            f"got {len(values)}: {list(values)}"
        )
    for index, value in enumerate(values):
        if not (math.isfinite(value) and value >= 0.0):
            raise ValueError(f"share {index} must be a finite number >= 0, got {value!r}")
    total = math.fsum(values)
    if abs(total - 1.0) > SHARE_TOLERANCE:
        raise ValueError(f"distribution shares must sum to 1 (within 1e-9), got {total!r}")
    return values


@dataclass(frozen=True)
class NumericDistribution:
    """The distribution of true numeric answers x on [lo, hi].

    ``constant`` (every x equals ``value``), ``uniform`` on [lo, hi], or ``beta``: x = lo +
    (hi − lo)·U with U ~ Beta(a, b).

    Example:
        >>> d = NumericDistribution.parse("beta:2,6")
        >>> d.mean(0.0, 100.0), str(d)
        (25.0, 'beta:2,6')
    """

    kind: str
    value: float = 0.0
    a: float = 1.0
    b: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in ("constant", "uniform", "beta"):
            raise ValueError(
                f"unknown distribution {self.kind!r}; expected constant:V, uniform or beta:A,B"
            )
        for name in ("value", "a", "b"):
            if not math.isfinite(as_real(name, getattr(self, name))):
                raise ValueError(f"{name} must be a finite number, got {getattr(self, name)!r}")
        if self.kind == "beta" and not (self.a > 0 and self.b > 0):
            raise ValueError(f"beta shapes must be > 0, got a={self.a!r}, b={self.b!r}")

    @classmethod
    def parse(cls, text: str) -> NumericDistribution:
        """``constant:V``, ``uniform`` or ``beta:A,B``; raise naming the text when malformed."""
        kind, _, rest = text.strip().partition(":")
        try:
            if kind == "uniform" and not rest:
                return cls("uniform")
            if kind == "constant" and rest:
                return cls("constant", value=float(rest))
            if kind == "beta" and rest.count(",") == 1:
                a, b = (float(part) for part in rest.split(","))
                return cls("beta", a=a, b=b)
        except ValueError as error:
            raise ValueError(f"bad distribution {text!r}: {error}") from None
        raise ValueError(f"unknown distribution {text!r}; expected constant:V, uniform or beta:A,B")

    def __str__(self) -> str:
        if self.kind == "constant":
            return f"constant:{self.value:g}"
        return "uniform" if self.kind == "uniform" else f"beta:{self.a:g},{self.b:g}"

    def check_range(self, lo: float, hi: float) -> None:
        """Raise unless every value of the distribution lies in [lo, hi]."""
        if self.kind == "constant" and not lo <= self.value <= hi:
            raise ValueError(f"constant value {self.value!r} is outside [{lo!r}, {hi!r}]")

    def draw(self, rng: np.random.Generator, n: int, lo: float, hi: float) -> NDArray[np.float64]:
        """Draw n i.i.d. true values on [lo, hi] from ``rng``."""
        if self.kind == "constant":
            return np.full(n, self.value, dtype=np.float64)
        u = rng.random(n) if self.kind == "uniform" else rng.beta(self.a, self.b, n)
        return np.clip(lo + (hi - lo) * u, lo, hi)

    def mean(self, lo: float, hi: float) -> float:
        """E[x]: the population mean the simulation estimates."""
        if self.kind == "constant":
            return self.value
        return lo + (hi - lo) * self._u_mean

    def variance(self, lo: float, hi: float) -> float:
        """Var(x), in x units squared."""
        if self.kind == "constant":
            return 0.0
        if self.kind == "uniform":
            u_variance = 1.0 / 12.0
        else:
            total = self.a + self.b
            u_variance = self.a * self.b / (total * total * (total + 1.0))
        return (hi - lo) ** 2 * u_variance

    def quadrature(self, lo: float, hi: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Values x_i and weights w_i (summing to 1) with E[g(x)] ≈ Σ w_i·g(x_i).

        Gauss–Jacobi with ``QUADRATURE_POINTS`` nodes: the Beta(a, b) density on
        t = 2u − 1 is ∝ (1 − t)^(b−1)·(1 + t)^(a−1), the Jacobi weight, so the rule is exact
        for every polynomial g of degree < 2·QUADRATURE_POINTS (uniform: Gauss–Legendre).
        A constant is one point.
        """
        if self.kind == "constant":
            return np.array([self.value]), np.array([1.0])
        from scipy import special

        a, b = (1.0, 1.0) if self.kind == "uniform" else (self.a, self.b)
        nodes, weights = special.roots_jacobi(QUADRATURE_POINTS, b - 1.0, a - 1.0)
        x = lo + (hi - lo) * (np.asarray(nodes) + 1.0) / 2.0
        return np.clip(x, lo, hi), np.asarray(weights) / math.fsum(weights)

    @property
    def _u_mean(self) -> float:
        return 0.5 if self.kind == "uniform" else self.a / (self.a + self.b)
