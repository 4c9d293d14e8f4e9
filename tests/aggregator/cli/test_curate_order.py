"""``curate`` records the spend before it draws noise, and draws none when it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from deniable.aggregator.central.curator import _noise
from deniable.aggregator.central.curator.ledger import open_ledger
from deniable.aggregator.cli.curate import curate_group
from deniable.shared.sampling import discrete_laplace


def test_a_refused_query_draws_no_noise_and_a_spend_precedes_the_draw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "d.csv"
    data.write_text("age\n30\n41\n")
    ledger = tmp_path / "ledger.sqlite"
    draws: list[int] = []

    def watched(*args: Any) -> Any:
        # When noise is drawn, the spend is already in the ledger.
        with open_ledger(f"sqlite:///{ledger}") as book:
            draws.append(len(book.balance("d").spends))
        return discrete_laplace(*args)

    monkeypatch.setattr(_noise, "discrete_laplace", watched)
    base = ["count", str(data), "--db", f"sqlite:///{ledger}"]
    done = CliRunner().invoke(curate_group, [*base, "--epsilon", "0.6", "--budget", "1"])
    assert done.exit_code == 0, done.output
    assert draws == [1]
    refused = CliRunner().invoke(curate_group, [*base, "--epsilon", "0.6"])
    assert refused.exit_code == 5
    assert draws == [1]  # no noise drawn for the refused query
