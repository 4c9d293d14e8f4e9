"""``deniable-aggregator export --what estimates`` against a real daemon, loaded with pandas."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deniable.aggregator.cli.export._rows import ESTIMATE_COLUMNS
from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.storage import open_storage
from deniable.client import AggregatorClient, build_report, check_mechanism, parse_answer
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.analysis._report_data import OPTION, fill, questions
from tests.aggregator.cli._terminal import last_drawn, on_terminal
from tests.conftest import ADMIN_TOKEN, BIN
from tests.e2e._forks import Runner

PAIRED: dict[str, object] = {
    "title": "Paired",
    "questions": [
        {"id": "both", "text": "Two yes/no parts", "type": "joint", "epsilon": 2.0,
         "parts": [{"id": "a", "text": "A?"}, {"id": "b", "text": "B?"}]},
    ],
}  # fmt: skip
"""A joint question of two yes/no parts: its estimate has a covariance and a correlation."""


def _paired_reports(survey: pb.Survey) -> list[pb.Report]:
    """200 participants' randomized answers to ``both``, the parts mostly alike."""
    (question,) = survey.questions
    mechanism, rng = check_mechanism(question), np.random.default_rng(3)
    answers = ["yes,yes", "no,no", "yes,no", "no,no", "yes,yes"]
    return [
        build_report(
            survey.id, question, mechanism, parse_answer(answers[i % 5], question), rng
        ).report
        for i in range(200)
    ]


@dataclass(frozen=True)
class Daemon:
    """The daemon, its surveys (every kind, stepped, paired) and a folder for the files."""

    server: RunningServer
    submitted: list[pb.Report]
    kinds: pb.Survey
    stepped: pb.Survey
    paired: pb.Survey
    folder: Path


def cli(runner: Runner, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``deniable-aggregator`` with only the given admin token in its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    if token is not None:
        env["DENIABLE_AGGREGATOR_ADMIN_TOKEN"] = token
    return runner.complete("deniable-aggregator", list(args), env)


@pytest.fixture
def runner(cli_runner: Runner) -> Runner:
    """The worker's forking runner of console scripts."""
    return cli_runner


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    folder = tmp_path_factory.mktemp("export")
    server = start_server(
        open_storage(f"sqlite:///{folder / 'aggregator.db'}"), ADMIN_TOKEN, "127.0.0.1:0"
    )
    try:
        submitted: list[pb.Report] = []
        with AggregatorClient(server.address, admin_token=ADMIN_TOKEN) as client:

            def submit(batch: list[pb.Report], enrollment_token: str | None = None) -> object:
                submitted.extend(batch)
                return client.submit_reports(batch, enrollment_token=enrollment_token)

            kinds, stepped = fill(client.create_survey, submit, client.issue_tokens)
            paired = client.create_survey(*questions(PAIRED))
            submit(_paired_reports(paired))
            kinds, stepped, paired = (client.get_survey(s.id) for s in (kinds, stepped, paired))
        yield Daemon(server, submitted, kinds, stepped, paired, folder)
    finally:
        server.stop(grace=1.0)


def _estimates(runner: Runner, daemon: Daemon, survey: pb.Survey) -> pd.DataFrame:
    done = cli(runner, "export", survey.id, "--server", daemon.server.address)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return pd.read_csv(io.StringIO(done.stdout), keep_default_na=False, na_values=[""])


def test_estimates_are_one_row_per_quantity_as_the_daemon_gives_them(
    runner: Runner, daemon: Daemon
) -> None:
    frame = _estimates(runner, daemon, daemon.kinds)
    assert list(frame.columns) == [column.name for column in ESTIMATE_COLUMNS]
    with AggregatorClient(daemon.server.address) as client:
        cheated = client.get_estimate(daemon.kinds.id, "cheated", 0.95, "clopper-pearson")
        phone = client.get_estimate(daemon.kinds.id, "os", 0.95, "clopper-pearson")
    row = frame[frame.question_id == "cheated"].iloc[0]
    assert (row.quantity, row.n, row.method) == ("estimate", cheated.n, "clopper-pearson")
    assert (row.estimate, row.ci_low, row.ci_high) == (
        cheated.estimate, cheated.ci_low, cheated.ci_high,
    )  # fmt: skip
    assert row.epsilon == cheated.epsilon
    assert row.status == "estimated"
    options = frame[frame.question_id == "os"]
    assert list(options.label) == [option.option for option in phone.options]  # OPTION as is
    assert OPTION in set(options.label)
    assert list(options.estimate) == [option.estimate for option in phone.options]
    assert list(options.support) == [option.support for option in phone.options]
    quantities = frame.groupby("question_id", sort=False).quantity.agg(lambda q: sorted(set(q)))
    assert quantities["hours"] == ["estimate"]
    assert quantities["habits"] == ["cell", "marginal"]
    assert quantities["fruit"] == ["item", "pair"]
    assert set(frame[frame.quantity == "marginal"].label) >= {"copied=no", f"dept={OPTION}"}
    estimated = frame[frame.status == "estimated"]
    assert (estimated.ci_low <= estimated.estimate).all()
    assert (estimated.estimate <= estimated.ci_high).all()
    assert (estimated.n == 120).all()


def test_anytime_and_simultaneous_intervals_are_the_daemons(runner: Runner, daemon: Daemon) -> None:
    address = daemon.server.address
    done = cli(runner, "export", daemon.kinds.id, "--server", address, "--anytime",
               "--simultaneous", "--confidence", "0.9")  # fmt: skip
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(io.StringIO(done.stdout), keep_default_na=False, na_values=[""])
    with AggregatorClient(address) as client:
        phone = client.get_estimate(
            daemon.kinds.id, "os", 0.9, "clopper-pearson", simultaneous=True, anytime=True
        )
    options = frame[frame.question_id == "os"]
    assert list(options.ci_low) == [option.ci_low for option in phone.options]
    assert list(options.ci_high) == [option.ci_high for option in phone.options]
    assert set(options.coverage) == {phone.coverage}
    assert phone.coverage.startswith("anytime-valid and simultaneous")
    assert set(frame.confidence.dropna()) == {0.9}


def test_a_question_without_an_estimate_is_one_row_saying_why(
    runner: Runner, daemon: Daemon
) -> None:
    later = _estimates(runner, daemon, daemon.kinds).query("question_id == 'later'")
    assert len(later) == 1
    assert "no reports yet" in later.status.iloc[0]
    assert math.isnan(later.estimate.iloc[0])
    stepped = _estimates(runner, daemon, daemon.stepped).set_index("question_id")
    # Without the admin token a stepped question's live count is not shown (80 stored).
    assert (stepped.loc["q1", "n"], stepped.loc["q1", "stored"]) == (70, 70)
    assert bool(stepped.loc["q1", "stored_as_released"])
    assert not later.stored_as_released.fillna(False).astype(bool).iloc[0]
    done = cli(runner, "export", daemon.stepped.id, "--server", daemon.server.address,
               token=ADMIN_TOKEN)  # fmt: skip
    assert done.returncode == 0, done.stderr
    live = pd.read_csv(io.StringIO(done.stdout)).set_index("question_id")  # the admin's view
    assert (live.loc["q1", "n"], live.loc["q1", "stored"]) == (70, 80)
    assert not bool(live.loc["q1", "stored_as_released"])
    assert 0 < stepped.loc["q1", "central_epsilon"] < 1.0
    assert stepped.loc["q1", "central_delta"] > 0
    assert "its first release is at 20 reports" in stepped.loc["q2", "status"]


def test_covariance_and_correlation_of_two_yes_no_parts(runner: Runner, daemon: Daemon) -> None:
    frame = _estimates(runner, daemon, daemon.paired).set_index("quantity")
    with AggregatorClient(daemon.server.address) as client:
        both = client.get_estimate(daemon.paired.id, "both", 0.95, "clopper-pearson")
    (association,) = both.associations
    for name in ("covariance", "correlation"):
        row = frame.loc[name]
        assert row.label == "a ~ b"
        assert row.method == "wald (delta method)"
        assert row.coverage == both.joint_coverage
        assert row.estimate == getattr(association, name)
        assert (row.ci_low, row.ci_high) == (
            getattr(association, f"{name}_low"), getattr(association, f"{name}_high"),
        )  # fmt: skip
    assert len(frame.loc["cell"]) == 4
    marginals = frame.loc["marginal"]
    assert list(marginals.label) == ["a=no", "a=yes", "b=no", "b=yes"]
    assert set(marginals.method) == {"wald (delta method)"}
    assert set(frame.loc["cell"].method) == {"clopper-pearson"}
    assert set(frame.loc["cell"].coverage) == {both.coverage} != set(marginals.coverage)


@pytest.mark.parametrize("file_format", ["json", "jsonl", "parquet"])
def test_every_format_loads_into_the_same_table(
    runner: Runner, daemon: Daemon, file_format: str
) -> None:
    expected = _estimates(runner, daemon, daemon.kinds)
    out = daemon.folder / f"estimates.{file_format}"
    done = cli(
        runner, "export", daemon.kinds.id, "--server", daemon.server.address,
        "--format", file_format, "--out", str(out), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["rows"] == len(expected)
    assert summary["bytes"] == out.stat().st_size
    if file_format == "parquet":
        loaded = pd.read_parquet(out)
    else:
        jsonl = file_format == "jsonl"
        loaded = pd.read_json(out, lines=jsonl, dtype=False, precise_float=True)
    assert list(loaded.columns) == list(expected.columns)
    for name in expected.columns:
        assert [_same(v) for v in loaded[name]] == [_same(v) for v in expected[name]], name


def _same(value: object) -> object:
    """A cell compared across formats: missing as None, numbers as float."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value) if isinstance(value, int | float) else value


def test_the_file_appears_only_when_complete_and_errors_change_nothing(
    runner: Runner, daemon: Daemon
) -> None:
    out = daemon.folder / "kept.csv"
    out.write_text("previous\n")
    address = daemon.server.address
    cases = [
        (["nosuchsurvey"], 4, "nosuchsurvey"),
        ([daemon.kinds.id, "--confidence", "1.5"], 2, "confidence"),
        ([daemon.kinds.id, "--format", "xlsx"], 2, "xlsx"),
        ([daemon.kinds.id, "--what", "everything"], 2, "everything"),
    ]
    for args, code, named in cases:
        done = cli(runner, "export", *args, "--server", address, "--out", str(out))
        assert done.returncode == code, (args, done.stderr)
        assert named in done.stderr
        assert "Traceback" not in done.stderr
        assert out.read_text() == "previous\n"
    missing = daemon.folder / "no" / "such" / "dir.csv"
    done = cli(runner, "export", daemon.kinds.id, "--server", address, "--out", str(missing))
    assert done.returncode == 2
    assert "does not exist" in done.stderr
    done = cli(runner, "export", daemon.kinds.id, "--server", address, "--json")
    assert done.returncode == 2
    assert "--json" in done.stderr
    assert done.stdout == ""
    assert sorted(p.name for p in daemon.folder.iterdir() if p.name.startswith(".")) == []


def test_parquet_without_pyarrow_names_the_extra(
    runner: Runner, daemon: Daemon, tmp_path: Path
) -> None:
    (tmp_path / "pyarrow").mkdir()
    (tmp_path / "pyarrow" / "__init__.py").write_text("raise ImportError('no pyarrow here')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    out = tmp_path / "estimates.parquet"
    done = subprocess.run(
        [str(BIN / "deniable-aggregator"), "export", daemon.kinds.id,
         "--server", daemon.server.address, "--format", "parquet", "--out", str(out)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "pip install 'deniable[parquet]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


def _reports_csv(runner: Runner, daemon: Daemon, survey: pb.Survey) -> pd.DataFrame:
    args = ("export", survey.id, "--server", daemon.server.address, "--what", "reports")
    done = cli(runner, *args, token=ADMIN_TOKEN)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no bar off a terminal
    return pd.read_csv(io.StringIO(done.stdout), dtype=str, keep_default_na=False)


def test_reports_are_each_stored_report_once_as_submitted(runner: Runner, daemon: Daemon) -> None:
    frame = _reports_csv(runner, daemon, daemon.kinds)
    assert list(frame.columns) == ["report_id", "survey_id", "question_id", "mechanism", "value"]
    mechanisms = {q.id: check_mechanism(q) for q in daemon.kinds.questions}
    expected = [
        [r.report_id, r.survey_id, r.question_id, mechanisms[r.question_id].name,
         _text(mechanisms[r.question_id].summary_value(r))]
        for r in daemon.submitted if r.survey_id == daemon.kinds.id
    ]  # fmt: skip
    assert len(frame) == daemon.kinds.reports == len(expected) == 600
    assert frame.values.tolist() == expected  # every report, once, in the order stored
    shown = dict(zip(frame.question_id, frame.value, strict=False))
    assert shown["cheated"] in ("true", "false")
    assert int(shown["os"]) in range(3)
    assert len(bytes.fromhex(shown["fruit"])) == 1  # three items' bits, packed


def _text(value: object) -> str:
    """A value as a CSV cell shows it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    return repr(value) if isinstance(value, float) else str(value)


@pytest.mark.parametrize("file_format", ["jsonl", "parquet"])
def test_reports_load_the_same_in_every_format(
    runner: Runner, daemon: Daemon, file_format: str
) -> None:
    expected = _reports_csv(runner, daemon, daemon.stepped)
    out = daemon.folder / f"reports.{file_format}"
    done = cli(
        runner, "export", daemon.stepped.id, "--server", daemon.server.address,
        "--what", "reports", "--format", file_format, "--out", str(out), token=ADMIN_TOKEN,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {len(expected):,} rows of reports of Stepped")
    if file_format == "parquet":
        loaded = pd.read_parquet(out)
    else:
        loaded = pd.read_json(out, lines=True, dtype=False)
        assert set(map(type, loaded.value)) == {bool}  # JSON keeps the yes/no reports' type
        loaded["value"] = [_text(value) for value in loaded.value]
    assert loaded.values.tolist() == expected.values.tolist()


def test_reports_need_the_admin_token_and_a_refusal_changes_nothing(
    runner: Runner, daemon: Daemon
) -> None:
    out = daemon.folder / "reports-kept.csv"
    out.write_text("previous\n")
    args = ("export", daemon.kinds.id, "--server", daemon.server.address, "--what", "reports")
    missing = cli(runner, *args, "--out", str(out))
    assert missing.returncode == 2
    assert "DENIABLE_AGGREGATOR_ADMIN_TOKEN" in missing.stderr
    refused = cli(runner, *args, "--out", str(out), token="not-the-admin-token")
    assert refused.returncode == 6, refused.stderr
    assert "Traceback" not in refused.stderr
    assert out.read_text() == "previous\n"
    unknown = cli(runner, "export", "nosuch", *args[2:], "--out", str(out), token=ADMIN_TOKEN)
    assert unknown.returncode == 4
    assert "nosuch" in unknown.stderr
    assert out.read_text() == "previous\n"
    assert [p.name for p in daemon.folder.iterdir() if p.name.endswith(".tmp")] == []


def test_on_a_terminal_a_bar_of_the_reports_ends_at_their_total(
    runner: Runner, daemon: Daemon
) -> None:
    out = daemon.folder / "reports-bar.csv"
    env = {"DENIABLE_AGGREGATOR_ADMIN_TOKEN": ADMIN_TOKEN}
    done = on_terminal(
        runner, "deniable-aggregator", "export", daemon.kinds.id, "--what", "reports",
        "--server", daemon.server.address, "--out", str(out), env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    last = last_drawn(done.stderr)
    assert "exporting" in last
    assert "600/600" in last
    assert "100%" in last
    assert "reports/s" in last
    assert len(out.read_text().splitlines()) == 601
    quiet = on_terminal(
        runner, "deniable-aggregator", "export", daemon.kinds.id, "--what", "reports",
        "--server", daemon.server.address, "--out", str(out), "--json", env=env,
    )  # fmt: skip
    assert quiet.returncode == 0
    assert quiet.stderr.strip() == ""
    assert json.loads(quiet.stdout)["rows"] == 600


def test_a_reader_that_stops_early_ends_the_export_quietly(daemon: Daemon, tmp_path: Path) -> None:
    with AggregatorClient(daemon.server.address, admin_token=ADMIN_TOKEN) as client:
        survey = client.create_survey(*questions(PAIRED))
        many = [
            pb.Report(report_id=f"{i:032d}", survey_id=survey.id, question_id="both",
                      mechanism=survey.questions[0].mechanism, option_fixed=i % 4)
            for i in range(4000)
        ]  # fmt: skip
        client.submit_reports(many)  # some 300 KB of CSV: more than a pipe holds
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["DENIABLE_AGGREGATOR_ADMIN_TOKEN"] = ADMIN_TOKEN
    script = (
        f"'{BIN / 'deniable-aggregator'}' export {survey.id} --what reports "
        f"--server {daemon.server.address} | head -c 100 > /dev/null; "
        'echo "status ${PIPESTATUS[0]}" >&2'
    )
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert done.stderr == "status 0\n"  # no traceback, no "Exception ignored" line
