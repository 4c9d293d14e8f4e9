"""Attack: the curator's seed reveals one person by a difference of two charged counts."""

# Issue 33, item 3. A reader who knows the seed recomputes the noise: with the same seed,
# count() and count(not (name = 'bob' and hiv = 'yes')) carry the same noise, so their
# difference is bob's row exactly, while the ledger vouched for ε = 0.1 per query.

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import RunCli

AGG = "deniable-aggregator"
TARGET = "not (name = 'bob' and hiv = 'yes')"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """61 rows: bob has HIV; 60 others, half of them too."""
    rows = ["name,hiv", "bob,yes"] + [f"p{i},{'yes' if i % 2 else 'no'}" for i in range(60)]
    path = tmp_path / "patients.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _spends(run_cli: RunCli, data: Path, ledger: Path) -> list[float]:
    """The ε of every spend the ledger records for the data, as `curate ledger` shows it."""
    done = run_cli(AGG, "curate", "ledger", str(data), "--db", f"sqlite:///{ledger}", "--json")
    assert done.returncode == 0, done.stderr
    return [float(spend["epsilon"]) for spend in json.loads(done.stdout)["spends"]]


def _count(
    run_cli: RunCli, data: Path, ledger: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, object] | None, str]:
    args = ["curate", "count", str(data), "--epsilon", "0.1", "--json", *extra]
    done = run_cli(
        AGG, *args, env={"DENIABLE_AGGREGATOR_CURATE_DB": f"sqlite:///{ledger}", **(env or {})}
    )
    document = json.loads(done.stdout) if done.returncode == 0 else None
    return done.returncode, document, done.stderr


def test_seeded_counts_are_never_charged_to_or_vouched_for_by_the_ledger(
    run_cli: RunCli, data: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    run_cli(AGG, "curate", "count", str(data), "--epsilon", "0.1", "--budget", "5",
            "--db", f"sqlite:///{ledger}")  # fmt: skip  # the budget is set; 0.1 spent, unseeded
    before = _spends(run_cli, data, ledger)
    recovered, labels = [], []
    for seed in ("1", "2", "3"):
        _, everyone, _ = _count(run_cli, data, ledger, "--seed", seed)
        _, but_bob, _ = _count(run_cli, data, ledger, "--seed", seed, "--where", TARGET)
        if everyone is not None and but_bob is not None:
            recovered.append(int(everyone["released"]) - int(but_bob["released"]))  # type: ignore[call-overload]
            labels += [everyone.get("private"), but_bob.get("private")]
    charged = _spends(run_cli, data, ledger)[len(before) :]
    # The attack: bob's row recovered every time, under a ledger that vouches for ε = 0.1.
    assert not (recovered == [1, 1, 1] and charged == [0.1] * 6), (recovered, charged)
    assert charged == []  # a seeded query is never charged to (or checked against) a ledger
    assert labels == [False] * len(labels)  # and says it is not private


def test_the_seed_is_not_taken_from_the_environment(
    run_cli: RunCli, data: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    env = {"DENIABLE_AGGREGATOR_CURATE_COUNT_SEED": "1"}
    first = _count(run_cli, data, ledger, "--budget", "5", env=env)
    second = _count(run_cli, data, ledger, "--where", TARGET, env=env)
    assert first[0] == second[0] == 2, (first, second)  # refused: a seed only on the command line
    assert "DENIABLE_AGGREGATOR_CURATE_COUNT_SEED" in first[2]
    assert not ledger.exists()  # no ledger was even opened


def test_seeded_text_output_says_not_private_on_its_first_line(
    run_cli: RunCli, data: Path, tmp_path: Path
) -> None:
    env = {"DENIABLE_AGGREGATOR_CURATE_DB": f"sqlite:///{tmp_path / 'l.sqlite'}"}
    done = run_cli(AGG, "curate", "count", str(data), "--epsilon", "0.1", "--seed", "1", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("NOT PRIVATE")
    assert not (tmp_path / "l.sqlite").exists()


def test_unseeded_charged_differences_are_not_the_individual(
    run_cli: RunCli, data: Path, tmp_path: Path
) -> None:
    # Fresh noise per query: the difference is 1 + Z1 − Z2, Z discrete Laplace (q = e^-0.1);
    # P(Z1 = Z2) = (1 − q)(1 + q²)/(1 + q)³ ≈ 0.025, so three exact 1s: ≈ 1.6e-5.
    ledger = tmp_path / "ledger.sqlite"
    differences = []
    for index in range(3):
        budget = ("--budget", "1") if index == 0 else ()
        code_all, everyone, _ = _count(run_cli, data, ledger, *budget)
        code_but, but_bob, _ = _count(run_cli, data, ledger, "--where", TARGET)
        assert code_all == code_but == 0
        assert everyone is not None
        assert but_bob is not None
        assert everyone["private"] is True
        differences.append(int(everyone["released"]) - int(but_bob["released"]))  # type: ignore[call-overload]
    assert differences != [1, 1, 1]
    assert _spends(run_cli, data, ledger) == pytest.approx([0.1] * 6)
