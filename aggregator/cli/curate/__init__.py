"""``deniable-aggregator curate``: central Laplace queries on a CSV file the curator holds.

One module per family of subcommands: ``_counts`` (count, histogram), ``_numeric`` (sum,
mean), ``_release`` (release, ledger); ``_options`` holds what they share (options, the
data, the budget spend, the output). The curator is used only through its public face,
``deniable.aggregator.central.curator``.
"""

from __future__ import annotations

import inspect

import click

from deniable.aggregator.cli.curate._counts import count_command, histogram_command
from deniable.aggregator.cli.curate._numeric import mean_command, sum_command
from deniable.aggregator.cli.curate._options import EXIT_CODES_HELP
from deniable.aggregator.cli.curate._release import ledger_command, release_command

__all__ = ["curate_group"]


@click.group("curate")
def curate_group() -> None:
    """Central queries on data you hold: Laplace noise of scale Δ/ε, a privacy budget.

    The curator (you) sees the raw rows of DATA.csv (UTF-8, a header row) and releases
    noisy answers: count, histogram, sum, mean. Each query spends ε from the data set's
    budget (--budget, set once, kept in a ledger by the file's SHA-256); a query that
    would overspend is refused before any noise is drawn. `curate release` spends ε once
    for a noisy contingency table that later answers any count or histogram for free
    (--from-release). --seed is a mode for tests that is NOT private: labelled so, and
    never charged to or checked against a ledger. See docs/curator.md.

    \b
    Exit codes: 0 released, 2 invalid input (file, column, type, condition,
    option), 5 refused by the privacy budget (nothing spent, no noise drawn).
    """


for _command in (count_command, histogram_command, sum_command, mean_command, release_command):
    _command.help = f"{inspect.cleandoc(_command.help or '')}\n\n{EXIT_CODES_HELP}"
    curate_group.add_command(_command)
curate_group.add_command(ledger_command)
