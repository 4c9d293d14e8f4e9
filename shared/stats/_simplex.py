"""Euclidean projection onto the probability simplex, vectorized over leading axes."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["project_to_simplex"]


def project_to_simplex(values: ArrayLike) -> NDArray[np.float64]:
    """The closest point with non-negative entries summing to 1, along the last axis.

    Sort u = values in decreasing order; ρ is the largest j with
    u_j − (Σ_{i<=j} u_i − 1)/j > 0, θ = (Σ_{i<=ρ} u_i − 1)/ρ and the projection is
    max(values − θ, 0) (Duchi, Shalev-Shwartz, Singer and Chandra, ICML 2008).

    Example:
        >>> project_to_simplex([0.6, 0.6, -0.2]).tolist()
        [0.5, 0.5, 0.0]
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"values must have at least one entry on the last axis, got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("values must be finite")
    k = x.shape[-1]
    u = -np.sort(-x, axis=-1)
    excess = np.cumsum(u, axis=-1) - 1.0
    ranks = np.arange(1, k + 1, dtype=np.float64)
    positive = u - excess / ranks > 0  # true at j = 1, and on a prefix of the ranks
    rho = k - np.argmax(positive[..., ::-1], axis=-1)
    theta = np.take_along_axis(excess, (rho - 1)[..., None], axis=-1) / rho[..., None]
    projected: NDArray[np.float64] = np.maximum(x - theta, 0.0)
    return projected
