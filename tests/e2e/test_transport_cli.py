"""TLS, mutual TLS and limits through the console scripts against a real ``serve`` daemon."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.transport import TlsConfig
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._certs import Pki, make_pki
from tests.conftest import ADMIN_TOKEN, Daemon, RunCli, binary_question, start_daemon

SPEC = {"title": "Over TLS", "questions": [{"id": "q", "text": "Did you?", "alpha": 0.5}]}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def server_flags(pki: Pki, *, mutual: bool) -> list[str]:
    flags = ["--tls-cert", str(pki.server.cert_file), "--tls-key", str(pki.server.key_file)]
    return flags + (["--tls-client-ca", str(pki.ca.cert_file)] if mutual else [])


@pytest.fixture
def tls_daemon(request: pytest.FixtureRequest, tmp_path: Path, pki: Pki) -> Iterator[Daemon]:
    daemon = start_daemon(tmp_path, args=server_flags(pki, mutual=request.param))
    yield daemon
    daemon.stop()


def log_records(daemon: Daemon) -> list[dict[str, Any]]:
    return [json.loads(line) for line in daemon.stderr_path.read_text().splitlines()]


def one_line_error(done: subprocess.CompletedProcess[str], code: int, *fragments: str) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert done.stderr.startswith("Error: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in done.stderr


def reports_of(daemon: Daemon, survey_id: str, pki: Pki) -> int:
    tls = TlsConfig(pki.ca.cert, pki.client.cert, pki.client.key)
    with AggregatorClient(daemon.address, tls=tls, attempts=1) as client:
        return client.get_survey(survey_id).reports


def create(run_cli: RunCli, daemon: Daemon, tmp_path: Path, *tls: str, **env: str) -> str:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    done = run_cli(
        "deniable-aggregator", "survey", "create", "--server", daemon.address, *tls,
        "--admin-token-file", str(daemon.token_file), str(spec), env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("tls_daemon", [False], indirect=True)
def test_clis_over_tls_and_what_is_refused(
    run_cli: RunCli, tls_daemon: Daemon, tmp_path: Path, pki: Pki
) -> None:
    server = ["--server", tls_daemon.address]
    ca, other_ca = ["--tls-ca", str(pki.ca.cert_file)], ["--tls-ca", str(pki.other_ca.cert_file)]
    survey_id = create(run_cli, tls_daemon, tmp_path, *ca)
    answer = ["answer", *server, survey_id, "--answer", "q=yes", "--yes"]
    refused = [
        ("deniable", *answer),  # plaintext to a TLS daemon
        ("deniable", *answer, *other_ca),  # the daemon's certificate does not verify
        ("deniable-aggregator", "survey", "list", *server),
        ("deniable-aggregator", "estimate", *server, *other_ca, survey_id),
    ]
    for command in refused:
        one_line_error(run_cli(*command), 3, "cannot reach the aggregator")
        assert reports_of(tls_daemon, survey_id, pki) == 0, command
    verify_failed = run_cli("deniable", "surveys", *server, *other_ca)
    one_line_error(verify_failed, 3, "CERTIFICATE_VERIFY_FAILED")
    done = run_cli("deniable", *answer, *ca, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stored"] == 1
    env = {"DENIABLE_AGGREGATOR_TLS_CA": str(pki.ca.cert_file)}
    shown = run_cli("deniable-aggregator", "survey", "show", *server, survey_id, "--json", env=env)
    assert int(json.loads(shown.stdout)["reports"]) == 1, shown.stderr
    estimate = run_cli("deniable-aggregator", "estimate", *server, survey_id, "--json", env=env)
    assert json.loads(estimate.stdout)["estimates"][0]["n"] == 1, estimate.stderr
    records = log_records(tls_daemon)
    assert [r["tls"] for r in records if r["event"] == "listening"] == ["on"]
    assert not [r for r in records if r["level"] == "warning"]  # loopback: no plaintext warning


@pytest.mark.parametrize("tls_daemon", [True], indirect=True)
def test_clis_over_mutual_tls(
    run_cli: RunCli, tls_daemon: Daemon, tmp_path: Path, pki: Pki
) -> None:
    server = ["--server", tls_daemon.address]
    env = {
        "DENIABLE_TLS_CA": str(pki.ca.cert_file),
        "DENIABLE_TLS_CERT": str(pki.client.cert_file),
        "DENIABLE_TLS_KEY": str(pki.client.key_file),
    }
    analyst = {f"DENIABLE_AGGREGATOR_{name[9:]}": path for name, path in env.items()}
    survey_id = create(run_cli, tls_daemon, tmp_path, **analyst)
    ca = ["--tls-ca", env["DENIABLE_TLS_CA"]]
    answer = ["answer", *server, survey_id, "--answer", "q=no", "--yes", *ca]
    other = ["--tls-cert", str(pki.other_client.cert_file)]
    other += ["--tls-key", str(pki.other_client.key_file)]
    for command in [
        ("deniable", *answer),  # no client certificate
        ("deniable", *answer, *other),  # a client certificate from another CA
        ("deniable-aggregator", "survey", "show", *server, survey_id, *ca),
    ]:
        one_line_error(run_cli(*command), 3, "cannot reach the aggregator")
        assert reports_of(tls_daemon, survey_id, pki) == 0, command
    mine = ["--tls-cert", env["DENIABLE_TLS_CERT"], "--tls-key", env["DENIABLE_TLS_KEY"]]
    done = run_cli("deniable", *answer, *mine, "--json")
    assert done.returncode == 0, done.stderr
    assert reports_of(tls_daemon, survey_id, pki) == 1
    simulated = run_cli(
        "deniable-aggregator", "simulate", "--participants", "50", "--p", "0.3", "--alpha", "0.5",
        *server, "--admin-token-file", str(tls_daemon.token_file), "--json",
        env={f"DENIABLE_AGGREGATOR_SIMULATE_{name[9:]}": path for name, path in env.items()},
    )  # fmt: skip
    assert simulated.returncode == 0, simulated.stderr
    assert json.loads(simulated.stdout)["grpc"]["reports_sent"] == 50
    closed = run_cli(
        "deniable-aggregator", "survey", "close", *server, survey_id,
        "--admin-token-file", str(tls_daemon.token_file), "--json", env=analyst,
    )  # fmt: skip
    assert json.loads(closed.stdout)["state"] == "SURVEY_STATE_CLOSED", closed.stderr
    assert [r["tls"] for r in log_records(tls_daemon) if r["event"] == "listening"] == ["mutual"]


def test_serve_refuses_bad_tls_files_and_limits(run_cli: RunCli, tmp_path: Path, pki: Pki) -> None:
    missing = tmp_path / "missing.pem"
    cert, key = str(pki.server.cert_file), str(pki.server.key_file)
    cases: list[tuple[list[str], dict[str, str], str]] = [
        (["--tls-cert", cert], {}, "--tls-cert needs --tls-key"),
        ([], {"DENIABLE_AGGREGATOR_SERVE_TLS_CERT": cert}, "--tls-cert needs --tls-key"),
        (["--tls-client-ca", str(pki.ca.cert_file)], {}, "--tls-client-ca needs --tls-cert"),
        (["--tls-cert", str(missing), "--tls-key", key], {}, f"--tls-cert {missing}: cannot read"),
        (["--tls-cert", cert, "--tls-key", str(pki.client.key_file)], {}, "does not match"),
        (["--max-batch", "0"], {}, "--max-batch: must be between 1 and 2147483647, got 0"),
        (
            [],
            {"DENIABLE_AGGREGATOR_SERVE_MAX_CONCURRENT_RPCS": "0"},
            "--max-concurrent-rpcs: must be between",
        ),
        (["--max-message-bytes", "100"], {}, "--max-message-bytes: must be at least 1024, got 100"),
    ]
    database = tmp_path / "never.db"
    for args, env, message in cases:
        done = run_cli(
            "deniable-aggregator", "serve", "--listen", "127.0.0.1:0",
            "--db", f"sqlite:///{database}", *args, env=env, timeout=60,
        )  # fmt: skip
        one_line_error(done, 2, message)
        assert not database.exists()  # refused before opening anything


def test_client_tls_options_are_checked_before_connecting(
    run_cli: RunCli, tmp_path: Path, pki: Pki
) -> None:
    garbage, missing = tmp_path / "garbage.pem", tmp_path / "missing.pem"
    garbage.write_text("not PEM\n")
    server = ["--server", "127.0.0.1:9"]
    cert, key = str(pki.client.cert_file), str(pki.client.key_file)
    cases: list[tuple[tuple[str, ...], str]] = [
        (("deniable", "surveys", *server, "--tls-cert", cert), "--tls-cert needs --tls-key"),
        (("deniable", "answer", *server, "s1", "--tls-ca", str(missing)), f"{missing}: cannot"),
        (("deniable-aggregator", "survey", "list", *server, "--tls-key", key), "needs --tls-cert"),
        (("deniable-aggregator", "estimate", *server, "s1", "--tls-ca", str(garbage)), "no PEM"),
        (("deniable-aggregator", "survey", "close", *server, "s1", "--tls-cert", cert,
          "--tls-key", str(pki.server.key_file)), "does not match"),
    ]  # fmt: skip
    for command, message in cases:
        one_line_error(
            run_cli(*command, env={"DENIABLE_AGGREGATOR_ADMIN_TOKEN": ADMIN_TOKEN}), 2, message
        )
    embedded = run_cli(
        "deniable-aggregator", "simulate", "--participants", "10", "--p", "0.3",
        "--alpha", "0.5", "--tls-ca", str(pki.ca.cert_file),
    )  # fmt: skip
    assert embedded.returncode == 2
    assert "need --server" in embedded.stderr


def test_daemon_enforces_its_limits(run_cli: RunCli, tmp_path: Path) -> None:
    flags = ["--max-batch", "4", "--max-message-bytes", "4096"]
    daemon = start_daemon(tmp_path, args=[*flags, "--workers", "2", "--max-concurrent-rpcs", "6"])
    try:
        listening = next(r for r in log_records(daemon) if r["event"] == "listening")
        assert (listening["max_batch"], listening["max_message_bytes"]) == (4, 4096)
        assert (listening["workers"], listening["max_concurrent_rpcs"]) == (2, 6)
        done = run_cli(
            "deniable-aggregator", "simulate", "--participants", "10", "--p", "0.3",
            "--alpha", "0.5", "--server", daemon.address, "--batch-size", "5",
            "--admin-token-file", str(daemon.token_file),
        )  # fmt: skip
        one_line_error(done, 2, "batch of 5 exceeds the limit of 4")
        with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
            assert [s.reports for s in client.list_surveys(include_closed=True)] == [0]
            survey = client.create_survey("Limits", [binary_question("q")])
            mechanism = survey.questions[0].mechanism
            big = [
                pb.Report(report_id=f"{i}".ljust(2000, "x"), survey_id=survey.id,
                          question_id="q", mechanism=mechanism, bit=True)
                for i in range(3)
            ]  # fmt: skip
            with pytest.raises(RemoteError) as caught:
                client.submit_reports(big)
            assert caught.value.status == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert client.get_survey(survey.id).reports == 0
            small = [pb.Report(**{**_fields(r), "report_id": f"s{i}"}) for i, r in enumerate(big)]
            assert client.submit_reports(small).stored == 3
    finally:
        daemon.stop()


def _fields(report: pb.Report) -> dict[str, Any]:
    return {
        "survey_id": report.survey_id,
        "question_id": report.question_id,
        "mechanism": report.mechanism,
        "bit": report.bit,
    }
