"""Participant side of deniable: answers are randomized here, before anything is sent.

Perturbation: every mechanism of every question type (yes/no, multiple choice, numeric)
randomizes true answers with the OS CSPRNG (``perturb_many``) and encodes the reports for
the wire (``encode``). Answering: :func:`parse_answer`, :func:`check_mechanism` (the
question's mechanism, refused unless valid and private, ε computed here),
:func:`build_reports` and the participant's :class:`Policy`. The gRPC client
(:class:`AggregatorClient`) and everything else are imported on first use, so that
perturbing alone never loads gRPC. Errors subclass
:class:`~deniable.shared.errors.DeniableError`.

Example:
    >>> from deniable.client import RandomizedResponse, categorical_mechanism
    >>> RandomizedResponse(alpha=0.5).perturb_many([True, False]).shape
    (2,)
    >>> categorical_mechanism("grr", 3, epsilon=1.0).perturb(2) in range(3)
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deniable.shared._lazy import lazy_exports

if TYPE_CHECKING:
    from deniable.client._answer import (
        Answer,
        PreparedReport,
        answer_hint,
        build_report,
        build_reports,
        check_mechanism,
        check_open,
        new_report_id,
        parse_answer,
        parse_answers,
    )
    from deniable.client._errors import (
        AuthError,
        InvalidAnswerError,
        NotFoundError,
        ParticipantError,
        RefusedError,
        UnreachableError,
    )
    from deniable.client._policy import (
        DEFAULT_BUDGET,
        DEFAULT_MAX_EPSILON,
        Policy,
    )
    from deniable.client._remote import (
        AggregatorClient,
    )
    from deniable.client._web import (
        WEB_FILES,
        web_bundle,
    )
    from deniable.shared.errors import (
        DeniableError,
        RemoteError,
    )
    from deniable.shared.mechanisms import (
        DuchiMechanism,
        GeneralizedRandomizedResponse,
        HybridMechanism,
        LaplaceMechanism,
        Mechanism,
        OlhReport,
        OlhReports,
        OptimizedLocalHashing,
        OptimizedUnaryEncoding,
        PiecewiseMechanism,
        RandomizedResponse,
        mechanism_of,
    )
    from deniable.shared.questions import (
        categorical_mechanism,
        numeric_mechanism,
    )
    from deniable.shared.transport import (
        TlsConfig,
        load_client_tls,
    )

# Each public name and its module, imported on first use (PEP 562): importing the package
# costs almost nothing, perturbing loads numpy, and talking to an aggregator loads gRPC.
_EXPORTS = {
    "WEB_FILES": "deniable.client._web",
    "web_bundle": "deniable.client._web",
    "Answer": "deniable.client._answer",
    "PreparedReport": "deniable.client._answer",
    "answer_hint": "deniable.client._answer",
    "build_report": "deniable.client._answer",
    "build_reports": "deniable.client._answer",
    "check_mechanism": "deniable.client._answer",
    "check_open": "deniable.client._answer",
    "new_report_id": "deniable.client._answer",
    "parse_answer": "deniable.client._answer",
    "parse_answers": "deniable.client._answer",
    "AuthError": "deniable.client._errors",
    "InvalidAnswerError": "deniable.client._errors",
    "NotFoundError": "deniable.client._errors",
    "ParticipantError": "deniable.client._errors",
    "RefusedError": "deniable.client._errors",
    "UnreachableError": "deniable.client._errors",
    "DEFAULT_BUDGET": "deniable.client._policy",
    "DEFAULT_MAX_EPSILON": "deniable.client._policy",
    "Policy": "deniable.client._policy",
    "AggregatorClient": "deniable.client._remote",
    "DeniableError": "deniable.shared.errors",
    "RemoteError": "deniable.shared.errors",
    "DuchiMechanism": "deniable.shared.mechanisms",
    "GeneralizedRandomizedResponse": "deniable.shared.mechanisms",
    "HybridMechanism": "deniable.shared.mechanisms",
    "LaplaceMechanism": "deniable.shared.mechanisms",
    "Mechanism": "deniable.shared.mechanisms",
    "OlhReport": "deniable.shared.mechanisms",
    "OlhReports": "deniable.shared.mechanisms",
    "OptimizedLocalHashing": "deniable.shared.mechanisms",
    "OptimizedUnaryEncoding": "deniable.shared.mechanisms",
    "PiecewiseMechanism": "deniable.shared.mechanisms",
    "RandomizedResponse": "deniable.shared.mechanisms",
    "mechanism_of": "deniable.shared.mechanisms",
    "categorical_mechanism": "deniable.shared.questions",
    "numeric_mechanism": "deniable.shared.questions",
    "TlsConfig": "deniable.shared.transport",
    "load_client_tls": "deniable.shared.transport",
}
__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_MAX_EPSILON",
    "WEB_FILES",
    "AggregatorClient",
    "Answer",
    "AuthError",
    "DeniableError",
    "DuchiMechanism",
    "GeneralizedRandomizedResponse",
    "HybridMechanism",
    "InvalidAnswerError",
    "LaplaceMechanism",
    "Mechanism",
    "NotFoundError",
    "OlhReport",
    "OlhReports",
    "OptimizedLocalHashing",
    "OptimizedUnaryEncoding",
    "ParticipantError",
    "PiecewiseMechanism",
    "Policy",
    "PreparedReport",
    "RandomizedResponse",
    "RefusedError",
    "RemoteError",
    "TlsConfig",
    "UnreachableError",
    "answer_hint",
    "build_report",
    "build_reports",
    "categorical_mechanism",
    "check_mechanism",
    "check_open",
    "load_client_tls",
    "mechanism_of",
    "new_report_id",
    "numeric_mechanism",
    "parse_answer",
    "parse_answers",
    "web_bundle",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
