"""``deniable-aggregator curate``: the trusted curator, as the custodian's daemon or in-process.

``serve`` holds one data set and answers the Curator gRPC service; ``tokens`` issues and
revokes analysts' tokens on it; ``count``, ``histogram``, ``sum``, ``mean``, ``release``,
``ledger`` and ``describe`` query it with ``--server`` and a token, or run in this process
over a source the custodian holds (charged as the analyst ``custodian``);
``migrate-ledger`` moves an old file-keyed ledger. The curator is used only through its
public face, ``deniable.aggregator.central.curator``.
"""

from __future__ import annotations

import inspect

import click

from deniable.aggregator.cli.curate._migrate import migrate_command
from deniable.aggregator.cli.curate._options import EXIT_CODES_HELP
from deniable.aggregator.cli.curate._queries import (
    count_command,
    histogram_command,
    mean_command,
    sum_command,
)
from deniable.aggregator.cli.curate._release import (
    describe_command,
    ledger_command,
    release_command,
)
from deniable.aggregator.cli.curate._serve import serve_command
from deniable.aggregator.cli.curate._tokens import tokens_group

__all__ = ["curate_group"]


@click.group("curate")
def curate_group() -> None:
    """Central queries on data a custodian holds: Laplace noise of scale Δ/ε, a budget.

    The custodian runs `curate serve --data SOURCE --privacy-unit COLUMN
    --max-contributions K --budget ε` where the data lives (a CSV or Parquet file, or a
    PostgreSQL table), and issues each analyst a token with its own budget (`curate
    tokens issue`). Analysts query it with --server HOST:PORT --token-file F: every
    query is charged to their budget and the data set's, in the custodian's ledger,
    before any noise is drawn; a query that would overspend is refused (exit 5).
    Without --server the query runs in this process over DATA, for the custodian's own
    use, charged to the same ledger (--db) as the analyst 'custodian'. See
    docs/curator.md.
    """


for _command in (count_command, histogram_command, sum_command, mean_command, release_command):
    _command.help = f"{inspect.cleandoc(_command.help or '')}\n\n{EXIT_CODES_HELP}"
    curate_group.add_command(_command)
for _command in (ledger_command, describe_command, serve_command, migrate_command):
    curate_group.add_command(_command)
curate_group.add_command(tokens_group)
