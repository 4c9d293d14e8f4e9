"""``deniable-aggregator survey``: create, list, show and close surveys, issue tokens."""

from __future__ import annotations

from deniable.aggregator.cli.survey._command import survey_group

__all__ = ["survey_group"]
