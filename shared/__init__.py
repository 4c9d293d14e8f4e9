"""What participants and aggregators share: mechanisms, question types, errors, wire code.

Names are imported on first use (PEP 562): importing ``deniable.shared`` (or a light module
of it, such as :mod:`deniable.shared.errors`) loads neither numpy nor protobuf until a
mechanism is asked for, and nothing here ever loads scipy (the statistics import it inside
the functions that need it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deniable.shared._lazy import lazy_exports

if TYPE_CHECKING:
    from deniable.shared._exact import exp_at_least, tightest_epsilon
    from deniable.shared.errors import DeniableError
    from deniable.shared.mechanisms import (
        Mechanism,
        RandomizedResponse,
        Tally,
        mechanism_of,
        register,
        registered,
    )
    from deniable.shared.questions import QuestionType, question_type, question_types
    from deniable.shared.stats import ESTIMANDS, Estimand, check_estimand

_EXPORTS = {
    "DeniableError": "deniable.shared.errors",
    "ESTIMANDS": "deniable.shared.stats",
    "Estimand": "deniable.shared.stats",
    "Mechanism": "deniable.shared.mechanisms",
    "QuestionType": "deniable.shared.questions",
    "RandomizedResponse": "deniable.shared.mechanisms",
    "Tally": "deniable.shared.mechanisms",
    "check_estimand": "deniable.shared.stats",
    "exp_at_least": "deniable.shared._exact",
    "mechanism_of": "deniable.shared.mechanisms",
    "question_type": "deniable.shared.questions",
    "question_types": "deniable.shared.questions",
    "register": "deniable.shared.mechanisms",
    "registered": "deniable.shared.mechanisms",
    "tightest_epsilon": "deniable.shared._exact",
}
__all__ = [
    "ESTIMANDS",
    "DeniableError",
    "Estimand",
    "Mechanism",
    "QuestionType",
    "RandomizedResponse",
    "Tally",
    "check_estimand",
    "exp_at_least",
    "mechanism_of",
    "question_type",
    "question_types",
    "register",
    "registered",
    "tightest_epsilon",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
