"""Simulated populations: truth drawn, randomized by the client, estimated by the aggregator."""

from __future__ import annotations

from deniable.aggregator.analysis.simulation._anytime import looks_line
from deniable.aggregator.analysis.simulation._binary import SimulationResult, simulate_binary
from deniable.aggregator.analysis.simulation._categorical import (
    CategoricalSimulation,
    simulate_categorical,
)
from deniable.aggregator.analysis.simulation._compare_central import (
    ModelsCompared,
    compare_local_central,
    sizes_up_to,
)
from deniable.aggregator.analysis.simulation._distributions import (
    NumericDistribution,
    check_shares,
    parse_options,
    parse_shares,
)
from deniable.aggregator.analysis.simulation._grpc import (
    QUESTION_ID,
    GrpcTransport,
    aggregator_connection,
    grpc_submitter,
)
from deniable.aggregator.analysis.simulation._grpc_kinds import (
    categorical_grpc_submitter,
    numeric_grpc_submitter,
)
from deniable.aggregator.analysis.simulation._joint import JointSimulation, simulate_joint
from deniable.aggregator.analysis.simulation._multi_select import (
    MultiSelectGrpcSubmitter,
    MultiSelectSimulation,
    SetDistribution,
    simulate_multi_select,
)
from deniable.aggregator.analysis.simulation._numeric import NumericSimulation, simulate_numeric
from deniable.aggregator.analysis.simulation._sweep import (
    DEFAULT_EPSILONS,
    Accuracy,
    Simulate,
    SweepResult,
    rmse,
    sweep,
)

__all__ = [
    "DEFAULT_EPSILONS",
    "QUESTION_ID",
    "Accuracy",
    "CategoricalSimulation",
    "GrpcTransport",
    "JointSimulation",
    "ModelsCompared",
    "MultiSelectGrpcSubmitter",
    "MultiSelectSimulation",
    "NumericDistribution",
    "NumericSimulation",
    "SetDistribution",
    "Simulate",
    "SimulationResult",
    "SweepResult",
    "aggregator_connection",
    "categorical_grpc_submitter",
    "check_shares",
    "compare_local_central",
    "grpc_submitter",
    "looks_line",
    "numeric_grpc_submitter",
    "parse_options",
    "parse_shares",
    "rmse",
    "simulate_binary",
    "simulate_categorical",
    "simulate_joint",
    "simulate_multi_select",
    "simulate_numeric",
    "sizes_up_to",
    "sweep",
]
