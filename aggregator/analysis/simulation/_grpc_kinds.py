"""Simulated multiple-choice and numeric participants that submit over gRPC.

The reports travel as the participant client sends them (the mechanism's ``encode``) to an
embedded or remote aggregator (:func:`._simulate_grpc.aggregator_connection`); each
estimate is read back with GetEstimate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.analysis.simulation._binary import check_spec_type
from deniable.aggregator.analysis.simulation._distributions import check_option_names
from deniable.aggregator.analysis.simulation._grpc import (
    GrpcTransport,
    aggregator_connection,
    from_estimate,
    no_progress,
)
from deniable.shared.mechanisms import (
    FrequencyEstimate,
    FrequencyOracle,
    MeanEstimate,
    NumericMechanism,
)
from deniable.shared.questions import CATEGORICAL, NUMERIC
from deniable.shared.transport import TlsConfig

__all__ = [
    "CategoricalGrpcSubmitter",
    "NumericGrpcSubmitter",
    "categorical_grpc_submitter",
    "numeric_grpc_submitter",
]

PER_OPTION = ("estimate", "estimate_raw", "std_error", "ci_low", "ci_high")
"""FrequencyEstimate fields read from each OptionEstimate under the same name."""


@dataclass
class CategoricalGrpcSubmitter(GrpcTransport):
    """Multiple-choice questions: submits option, bits or hashed values; FrequencyEstimate."""

    def __call__(self, reports: Any) -> FrequencyEstimate:
        """Create a survey, submit ``reports`` (as ``perturb_many`` returns them), estimate."""
        estimate = self.exchange(reports)
        rows = estimate.options
        per_option = {name: tuple(getattr(row, name) for row in rows) for name in PER_OPTION}
        return from_estimate(
            FrequencyEstimate, estimate, k=len(rows),
            support_counts=tuple(int(row.support) for row in rows), **per_option,
        )  # fmt: skip


@dataclass
class NumericGrpcSubmitter(GrpcTransport):
    """Numeric questions: submits numbers on the normalized scale; MeanEstimate."""

    def __call__(self, reports: NDArray[np.float64]) -> MeanEstimate:
        """Create a survey, submit ``reports``, return its GetEstimate as a MeanEstimate."""
        estimate = self.exchange(reports)
        spec = cast(NumericMechanism, self.spec)  # as numeric_grpc_submitter built it
        # The range is the question's, not part of an Estimate.
        return from_estimate(MeanEstimate, estimate, lo=spec.lo, hi=spec.hi)


@contextmanager
def categorical_grpc_submitter(
    spec: FrequencyOracle,
    *,
    options: Sequence[str] | None = None,
    confidence: float,
    method: str,
    server: str | None = None,
    admin_token: str | None = None,
    batch_size: int = 1000,
    tls: TlsConfig | None = None,
    progress: Callable[[int], None] = no_progress,
) -> Iterator[CategoricalGrpcSubmitter]:
    """Yield a multiple-choice submitter for ``server``, or for an embedded daemon.

    ``options`` name the question's options (default ``0``..``k−1``); ``progress`` is
    called with the number of reports each SubmitReports call sent. See
    :func:`._simulate_grpc.aggregator_connection` for the daemon.

    Raises:
        TypeError: ``spec`` is not a multiple-choice mechanism.
    """
    check_spec_type(spec, CATEGORICAL)
    names = check_option_names(
        options if options is not None else [str(v) for v in range(spec.k)], spec.k
    )
    with aggregator_connection(server, admin_token, batch_size, tls) as (client, address):
        yield CategoricalGrpcSubmitter(
            client, spec, address, confidence, method, batch_size,
            embedded=server is None, options=names, progress=progress,
        )  # fmt: skip


@contextmanager
def numeric_grpc_submitter(
    spec: NumericMechanism,
    *,
    confidence: float,
    server: str | None = None,
    admin_token: str | None = None,
    batch_size: int = 1000,
    tls: TlsConfig | None = None,
    progress: Callable[[int], None] = no_progress,
) -> Iterator[NumericGrpcSubmitter]:
    """Yield a numeric submitter for ``server``, or for an embedded daemon.

    The interval is always the t-interval, so GetEstimate gets no interval method;
    ``progress`` is called with the number of reports each SubmitReports call sent. See
    :func:`._simulate_grpc.aggregator_connection` for the daemon.

    Raises:
        TypeError: ``spec`` is not a numeric mechanism.
    """
    check_spec_type(spec, NUMERIC)
    with aggregator_connection(server, admin_token, batch_size, tls) as (client, address):
        yield NumericGrpcSubmitter(
            client, spec, address, confidence, "", batch_size,
            embedded=server is None, progress=progress,
        )  # fmt: skip
