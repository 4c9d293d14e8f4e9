"""What an interval covers: the population's share or mean, or these respondents' answers."""

from __future__ import annotations

from typing import Literal

__all__ = ["ESTIMANDS", "Estimand", "check_estimand"]

Estimand = Literal["population", "respondents"]
ESTIMANDS: dict[str, str] = {
    "population": "population share (participants drawn i.i.d. from a population)",
    "respondents": "share among exactly these n respondents (their answers fixed)",
}


def check_estimand(estimand: object) -> Estimand:
    """Return ``estimand`` if it is a known estimand, else raise naming it.

    Example:
        >>> check_estimand("population")
        'population'
    """
    if estimand == "population" or estimand == "respondents":
        return estimand
    raise ValueError(f"unknown estimand {estimand!r}; expected one of: {', '.join(ESTIMANDS)}")
