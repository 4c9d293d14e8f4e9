"""TLS and mutual TLS on a real in-process server; loading PEM files; the plaintext warning."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives import serialization

from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.server._tls import (
    ServerTls,
    TlsError,
    is_loopback,
    load_server_tls,
    plaintext_warning,
    warn_if_plaintext,
)
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.transport import TlsConfig, load_client_tls
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._certs import Pki, make_pki
from tests.conftest import ADMIN_TOKEN, binary_question

Code = grpc.StatusCode


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@contextmanager
def tls_server(tmp_path: Path, pki: Pki, *, mutual: bool) -> Iterator[RunningServer]:
    tls = ServerTls(pki.server.cert, pki.server.key, pki.ca.cert if mutual else None)
    storage = open_storage(f"sqlite:///{tmp_path / 'tls.db'}")
    running = start_server(storage, ADMIN_TOKEN, "127.0.0.1:0", tls=tls)
    try:
        yield running
    finally:
        running.stop(grace=1.0)


def client_tls(pki: Pki, name: str) -> TlsConfig | None:
    """The client side of each case: what it trusts and which certificate it shows."""
    return {
        "plaintext": None,
        "right-ca": TlsConfig(ca=pki.ca.cert),
        "other-ca": TlsConfig(ca=pki.other_ca.cert),
        "client-cert": TlsConfig(pki.ca.cert, pki.client.cert, pki.client.key),
        "other-client-cert": TlsConfig(pki.ca.cert, pki.other_client.cert, pki.other_client.key),
    }[name]


def reports(survey: pb.Survey, prefix: str, count: int = 3) -> list[pb.Report]:
    question = survey.questions[0]
    return [
        pb.Report(
            report_id=f"{prefix}-{i}", survey_id=survey.id, question_id=question.id,
            mechanism=question.mechanism, bit=i % 2 == 0,
        )
        for i in range(count)
    ]  # fmt: skip


CASES = [
    # (server requires client certs, client, accepted)
    (False, "right-ca", True),
    (False, "client-cert", True),
    (False, "plaintext", False),
    (False, "other-ca", False),
    (True, "client-cert", True),
    (True, "right-ca", False),  # no client certificate
    (True, "other-client-cert", False),
    (True, "plaintext", False),
    (True, "other-ca", False),
]


@pytest.mark.parametrize(("mutual", "client", "accepted"), CASES)
def test_who_may_connect_and_store(
    tmp_path: Path, pki: Pki, mutual: bool, client: str, accepted: bool
) -> None:
    trusted = client_tls(pki, "client-cert")  # accepted in both modes
    with tls_server(tmp_path, pki, mutual=mutual) as running:
        with AggregatorClient(
            running.address, admin_token=ADMIN_TOKEN, tls=trusted, attempts=1
        ) as admin:
            survey = admin.create_survey("TLS", [binary_question("q")])
        with AggregatorClient(running.address, tls=client_tls(pki, client), attempts=1) as peer:
            if accepted:
                assert peer.submit_reports(reports(survey, client)).stored == 3
            else:
                with pytest.raises(RemoteError) as caught:
                    peer.submit_reports(reports(survey, client))
                assert caught.value.status == Code.UNAVAILABLE
        with AggregatorClient(running.address, tls=trusted, attempts=1) as admin:
            assert admin.get_survey(survey.id).reports == (3 if accepted else 0)


def test_tls_client_cannot_talk_to_a_plaintext_server(
    server: RunningServer, anonymous: AggregatorClient, pki: Pki
) -> None:
    tls = client_tls(pki, "right-ca")
    with (
        AggregatorClient(server.address, tls=tls, attempts=1) as client,
        pytest.raises(RemoteError) as caught,
    ):
        client.list_surveys()
    assert caught.value.status == Code.UNAVAILABLE
    assert anonymous.list_surveys() == []  # the server itself is fine


@pytest.mark.parametrize("mutual", [False, True])
def test_a_certificate_that_does_not_verify_is_not_retried(
    tmp_path: Path, pki: Pki, mutual: bool
) -> None:
    """A failed handshake fails the same way every time: one attempt, no backoff sleeps."""
    slept: list[float] = []
    with (
        tls_server(tmp_path, pki, mutual=mutual) as running,
        AggregatorClient(
            running.address, tls=client_tls(pki, "other-ca"), attempts=4, sleep=slept.append
        ) as client,
        pytest.raises(RemoteError) as caught,
    ):
        client.list_surveys()
    assert caught.value.status == Code.UNAVAILABLE
    assert "CERTIFICATE_VERIFY_FAILED" in caught.value.details
    assert (caught.value.attempts, slept) == (1, [])


def test_a_closed_connection_is_still_retried(tmp_path: Path, pki: Pki) -> None:
    """Plaintext to a TLS server looks like a dropped connection: retried with backoff."""
    slept: list[float] = []
    with (
        tls_server(tmp_path, pki, mutual=False) as running,
        AggregatorClient(running.address, attempts=3, sleep=slept.append) as client,
        pytest.raises(RemoteError) as caught,
    ):
        client.list_surveys()
    assert caught.value.status == Code.UNAVAILABLE
    assert (caught.value.attempts, slept) == (3, [0.25, 0.5])


# --- loading the PEM files ---------------------------------------------------------------


def test_server_tls_loads_and_checks_the_files(pki: Pki) -> None:
    tls = load_server_tls(pki.server.cert_file, pki.server.key_file, pki.ca.cert_file)
    assert tls == ServerTls(pki.server.cert, pki.server.key, pki.ca.cert)
    assert tls.mutual
    assert load_server_tls(None, None) is None
    plain = load_server_tls(pki.server.cert_file, pki.server.key_file)
    assert plain is not None
    assert not plain.mutual


def test_client_tls_loads_and_checks_the_files(pki: Pki) -> None:
    assert load_client_tls(None, None, None) is None
    server_only = load_client_tls(pki.ca.cert_file, None, None)
    assert server_only == TlsConfig(ca=pki.ca.cert)
    assert not server_only.mutual
    mutual = load_client_tls(pki.ca.cert_file, pki.client.cert_file, pki.client.key_file)
    assert mutual == TlsConfig(pki.ca.cert, pki.client.cert, pki.client.key)
    assert mutual.mutual


def _bad_files(folder: Path, pki: Pki) -> dict[str, Path]:
    folder.mkdir(exist_ok=True)
    files = {
        "garbage": b"not a certificate\n",
        "bad-body": b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        "encrypted": serialization.load_pem_private_key(pki.client.key, None).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        ),
    }
    paths = {name: folder / f"{name}.pem" for name in files}
    for name, data in files.items():
        paths[name].write_bytes(data)
    paths["missing"] = folder / "missing.pem"
    return paths


def test_server_tls_errors_name_the_option_and_file(tmp_path: Path, pki: Pki) -> None:
    bad = _bad_files(tmp_path / "bad", pki)
    cert, key, ca = pki.server.cert_file, pki.server.key_file, pki.ca.cert_file
    cases: list[tuple[tuple[Path | None, Path | None, Path | None], str]] = [
        ((cert, None, None), "--tls-cert needs --tls-key"),
        ((None, key, None), "--tls-key needs --tls-cert"),
        ((None, None, ca), "--tls-client-ca needs --tls-cert and --tls-key"),
        ((bad["missing"], key, None), f"--tls-cert {bad['missing']}: cannot read"),
        ((bad["garbage"], key, None), f"--tls-cert {bad['garbage']}: no PEM certificate"),
        ((bad["bad-body"], key, None), f"--tls-cert {bad['bad-body']}: invalid PEM certificate"),
        ((cert, bad["garbage"], None), f"--tls-key {bad['garbage']}: no PEM private key"),
        ((cert, cert, None), f"--tls-key {cert}: no PEM private key"),
        ((cert, bad["encrypted"], None), f"--tls-key {bad['encrypted']}: encrypted private"),
        ((cert, pki.client.key_file, None), "does not match the certificate --tls-cert"),
        ((cert, key, bad["garbage"]), f"--tls-client-ca {bad['garbage']}: no PEM certificate"),
    ]
    for args, message in cases:
        with pytest.raises(TlsError) as caught:
            load_server_tls(*args)
        assert message in str(caught.value), args
        assert "\n" not in str(caught.value)


def test_client_tls_errors_name_the_option_and_file(tmp_path: Path, pki: Pki) -> None:
    bad = _bad_files(tmp_path / "bad", pki)
    cert, key = pki.client.cert_file, pki.client.key_file
    cases: list[tuple[tuple[Path | None, Path | None, Path | None], str]] = [
        ((None, cert, None), "--tls-cert needs --tls-key"),
        ((None, None, key), "--tls-key needs --tls-cert"),
        ((bad["missing"], None, None), f"--tls-ca {bad['missing']}: cannot read"),
        ((bad["garbage"], None, None), f"--tls-ca {bad['garbage']}: no PEM certificate"),
        ((None, cert, pki.server.key_file), "does not match the certificate --tls-cert"),
        ((None, cert, bad["encrypted"]), "encrypted private keys are not supported"),
    ]
    for args, message in cases:
        with pytest.raises(TlsError) as caught:
            load_client_tls(*args)
        assert message in str(caught.value), args
    with pytest.raises(TlsError, match="both --tls-cert and --tls-key"):
        TlsConfig(ca=pki.ca.cert, cert=pki.client.cert)
    with pytest.raises(TlsError, match=r"tls\.ca: no PEM certificate"):
        TlsConfig(ca=b"nothing")


# --- the plaintext warning ---------------------------------------------------------------

LOOPBACK = [
    "127.0.0.1:50051", "127.0.0.1:0", "127.8.9.10:1", "localhost:50051", "LocalHost:1",
    "localhost.:1", "[::1]:50051", "[0:0:0:0:0:0:0:1]:1", "[::ffff:127.0.0.1]:1",
    "unix:/tmp/deniable.sock",
]  # fmt: skip
EXPOSED = [
    "0.0.0.0:50051", "[::]:50051", ":50051", "10.0.0.5:50051", "192.168.1.2:0",
    "128.0.0.1:1", "[2001:db8::1]:443", "[fe80::1%eth0]:1", "[::ffff:10.0.0.1]:1",
    "example.com:50051", "localhost.example.com:1", "127.0.0.1.nip.io:1", "aggregator:50051",
    "[::1:1",
]  # fmt: skip


@pytest.mark.parametrize("listen", LOOPBACK)
def test_loopback_addresses_get_no_warning(listen: str, pki: Pki) -> None:
    assert is_loopback(listen)
    assert plaintext_warning(listen, None) is None


@pytest.mark.parametrize("listen", EXPOSED)
def test_exposed_addresses_warn_without_tls(listen: str, pki: Pki) -> None:
    assert not is_loopback(listen)
    warning = plaintext_warning(listen, None)
    assert warning is not None
    for words in (listen, "WITHOUT TLS", "admin token", "unencrypted", "--tls-cert", "--tls-key"):
        assert words in warning
    assert plaintext_warning(listen, ServerTls(pki.server.cert, pki.server.key)) is None


class Collect(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_the_warning_is_logged_at_warning_level(pki: Pki) -> None:
    records: list[logging.LogRecord] = []
    logger = logging.getLogger("tests.tls.warning")
    handler = Collect(records)
    logger.addHandler(handler)
    try:
        assert warn_if_plaintext("0.0.0.0:50051", None, logger)
        assert not warn_if_plaintext("127.0.0.1:50051", None, logger)
        assert not warn_if_plaintext("0.0.0.0:50051", load_server_tls(
            pki.server.cert_file, pki.server.key_file), logger)  # fmt: skip
    finally:
        logger.removeHandler(handler)
    assert [r.levelno for r in records] == [logging.WARNING]
    assert records[0].getMessage() == plaintext_warning("0.0.0.0:50051", None)
