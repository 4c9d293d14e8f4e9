"""``serve --listen``: a bad address is a usage error; the bound address is printed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from deniable.aggregator.server._address import ListenAddress
from deniable.client._remote import AggregatorClient
from deniable.shared.errors import InvalidArgument
from tests.conftest import BIN, RunCli, has_ipv6_loopback

BAD = [
    ("127.0.0.1:99999", "port 99999 is out of range 1..65535 (0: any free port)"),
    ("127.0.0.1:65536", "port 65536 is out of range 1..65535"),
    ("127.0.0.1:1000000000000", "port 1000000000000 is out of range 1..65535"),
    ("127.0.0.1", "no port"),
    ("localhost", "no port"),
    (":50051", "no host"),
    ("127.0.0.1:", "port '' is not a number"),
    ("127.0.0.1:-1", "port '-1' is not a number"),
    ("127.0.0.1:http", "port 'http' is not a number"),
    ("::1:50051", "an IPv6 address goes in brackets, e.g. [::1]:50051"),
    ("[::1:50051", "[::1 is not an IPv6 address in brackets"),
    ("[not-ipv6]:50051", "[not-ipv6] is not an IPv6 address in brackets"),
    ("bad host:50051", "no valid host"),
    ("unix:", "expected HOST:PORT"),
]


@pytest.mark.parametrize(("listen", "problem"), BAD)
def test_parse_refuses_and_quotes_the_address(listen: str, problem: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        ListenAddress.parse(listen)
    assert raised.value.message.startswith(f"listen address {listen!r}: ")
    assert problem in raised.value.message


@pytest.mark.parametrize(
    ("listen", "host", "port"),
    [
        ("127.0.0.1:0", "127.0.0.1", 0),
        ("127.0.0.1:65535", "127.0.0.1", 65535),
        ("localhost:1", "localhost", 1),
        ("[::1]:50051", "[::1]", 50051),
        ("[::]:0", "[::]", 0),
        ("0.0.0.0:50051", "0.0.0.0", 50051),
        ("unix:/run/deniable.sock", "unix:/run/deniable.sock", None),
    ],
)
def test_parse_accepts(listen: str, host: str, port: int | None) -> None:
    address = ListenAddress.parse(listen)
    assert (address.host, address.port, str(address)) == (host, port, listen)


def test_serve_refuses_a_bad_listen_address_before_opening_anything(
    run_cli: RunCli, tmp_path: Path
) -> None:
    database = tmp_path / "never.db"
    data = tmp_path / "data"
    for listen, problem in BAD:
        done = run_cli(
            "deniable-aggregator", "serve", "--listen", listen, "--db", f"sqlite:///{database}",
            env={"XDG_DATA_HOME": str(data)}, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, (listen, done.stderr)
        assert done.stderr.startswith(f"Error: listen address {listen!r}: "), done.stderr
        assert problem in done.stderr
        assert done.stderr.count("\n") == 1
        assert done.stdout == ""
        assert not database.exists()
        assert not data.exists()  # no admin token generated either


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
def test_serve_prints_and_logs_the_bound_address(tmp_path: Path, host: str) -> None:
    if host == "[::1]" and not has_ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    stderr = tmp_path / "serve.log"
    with stderr.open("w") as log:
        process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "serve", "--listen", f"{host}:0",
             "--db", f"sqlite:///{tmp_path / 'a.db'}", "--grace", "1"],
            stdout=subprocess.PIPE, stderr=log, text=True, env=env,
        )  # fmt: skip
    try:
        listening = _listening_record(process, stderr)
        port = listening["port"]
        assert 0 < port < 65536
        assert listening["address"] == f"{host}:{port}"
        with AggregatorClient(f"{host}:{port}", attempts=1) as client:
            assert client.list_surveys() == []  # really bound there
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert out == f"listening on {host}:{port}\n"


def _listening_record(process: subprocess.Popen[str], stderr: Path) -> dict[str, Any]:
    """The daemon's 'listening' log record, polled for at most 30 s (as conftest does)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in stderr.read_text().splitlines():
            record: dict[str, Any] = json.loads(line)
            if record["event"] == "listening":
                return record
        assert process.poll() is None, stderr.read_text()
        time.sleep(0.05)
    raise AssertionError(f"no 'listening' record: {stderr.read_text()}")
