"""The web port in process: health beside gRPC's, shared admission, its own caps, its options."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import grpc
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from grpc_health.v1 import health_pb2, health_pb2_grpc

from deniable.aggregator.server import (
    ListenAddress,
    RunningServer,
    ServerLimits,
    WebOptions,
    start_server,
)
from deniable.aggregator.server.web import CSP, CorsPolicy, check_origin
from deniable.aggregator.server.web import _serve as web_serve
from deniable.aggregator.server.web._app import TOO_MANY_CALLS, WebApp, _body_within
from deniable.aggregator.server.web._headers import with_headers
from deniable.aggregator.server.web._page import Page
from deniable.aggregator.storage import open_storage
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._web import call, request
from tests.conftest import ADMIN_TOKEN


@pytest.fixture
def running(tmp_path: Path) -> Iterator[RunningServer]:
    web = WebOptions(ListenAddress.parse("127.0.0.1:0"))
    server = start_server(
        open_storage(f"sqlite:///{tmp_path / 'a.db'}"), ADMIN_TOKEN, "127.0.0.1:0", web=web
    )
    yield server
    server.stop(grace=1.0)


def web(running: RunningServer) -> str:
    assert running.web_port is not None
    return f"127.0.0.1:{running.web_port}"


def test_draining_turns_healthz_not_serving_as_the_grpc_health_service(
    running: RunningServer,
) -> None:
    assert request(web(running), "GET", "/healthz").status == 200
    running.enter_graceful_shutdown()
    drained = request(web(running), "GET", "/healthz")
    assert (drained.status, drained.json()["status"]) == (503, "NOT_SERVING")
    assert request(web(running), "HEAD", "/healthz").status == 503
    with grpc.insecure_channel(running.address) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING
    assert call(web(running), "ListSurveys", {}).status == 200  # calls are still served


def test_both_ports_share_the_request_bytes_in_flight(running: RunningServer) -> None:
    batch = pb.SubmitReportsRequest(reports=[pb.Report(report_id="r", survey_id="s", bit=True)])
    limit = running.admission.max_bytes
    with running.admission.admit("held by a gRPC call", limit - 1):
        refused = call(web(running), "SubmitReports", batch).json()
    assert refused["code"] == "resource_exhausted"
    assert refused["message"].startswith(
        f"SubmitReports: the aggregator is handling {limit - 1:,} bytes of requests"
    )
    assert refused["message"].endswith("(--max-inflight-bytes); nothing done, retry later")
    assert running.admission.held == 0
    assert call(web(running), "SubmitReports", batch).json()["code"] == "invalid_argument"


def test_rpcs_beyond_the_concurrent_limit_are_refused_at_once() -> None:
    release = asyncio.Event()
    started: list[str] = []

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        started.append(scope["path"])
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    app = WebApp(slow, Page.load(), CorsPolicy(), lambda: (True, True),
                 max_message_bytes=1024, max_concurrent_rpcs=2)  # fmt: skip

    async def one(sent: list[dict[str, Any]]) -> None:
        scope = {
            "type": "http", "method": "POST", "path": "/deniable.v1.Aggregator/ListSurveys",
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"2")],
        }  # fmt: skip

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(dict(message))

        await app(scope, receive, send)

    async def run() -> list[list[dict[str, Any]]]:
        replies: list[list[dict[str, Any]]] = [[] for _ in range(3)]
        first = [asyncio.create_task(one(replies[i])) for i in range(2)]
        while len(started) < 2:
            await asyncio.sleep(0)
        await one(replies[2])  # answered while the two others are held
        assert app.calls == 2
        release.set()
        await asyncio.gather(*first)
        return replies

    replies = asyncio.run(run())
    assert [reply[0]["status"] for reply in replies] == [200, 200, 429]
    assert TOO_MANY_CALLS.encode() in replies[2][1]["body"]
    assert app.calls == 0


@pytest.mark.parametrize(
    "origin", ["https://survey.example.org", "http://localhost:8080", "https://[::1]:8443"]
)
def test_origins_that_are_accepted(origin: str) -> None:
    assert check_origin(origin) == origin


@pytest.mark.parametrize(
    "origin",
    ["*", "https://*.example.org", "https://survey.example.org/", "https://a.example/page",
     "survey.example.org", "ftp://survey.example.org", "https://user@survey.example.org",
     "null", "https://survey.example.org?x=1", ""],
)  # fmt: skip
def test_origins_that_are_refused(origin: str) -> None:
    with pytest.raises(ValueError, match="an origin is scheme://host"):
        check_origin(origin)


def test_web_options_refuse_a_unix_socket_and_a_bad_origin() -> None:
    with pytest.raises(ValueError, match="a Unix socket is not served"):
        WebOptions(ListenAddress.parse("unix:/tmp/web.sock"))
    with pytest.raises(ValueError, match="--web-origin"):
        WebOptions(ListenAddress.parse("127.0.0.1:0"), ("https://a.example/",))


def test_security_headers_replace_what_a_response_set_and_default_to_no_store() -> None:
    headers = with_headers(
        [(b"Content-Security-Policy", b"default-src *"), (b"vary", b"Accept-Encoding")],
        [(b"vary", b"Origin")],
    )
    names = [name for name, _ in headers]
    assert names.count(b"content-security-policy") == 1
    assert (b"content-security-policy", b"default-src *") not in headers
    assert (b"vary", b"Accept-Encoding") in headers
    assert (b"vary", b"Origin") in headers
    assert (b"cache-control", b"no-store") in headers
    cached = with_headers([(b"cache-control", b"no-cache")], [])
    assert [value for name, value in cached if name == b"cache-control"] == [b"no-cache"]


def test_a_body_that_does_not_arrive_in_time_ends_the_call() -> None:
    async def never() -> MutableMapping[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def run() -> ConnectError:
        with pytest.raises(ConnectError) as raised:
            await _body_within(never, 0.01)()
        return raised.value

    error = asyncio.run(run())
    assert error.code == Code.DEADLINE_EXCEEDED
    assert error.message == "the request's body did not all arrive within 0.01 s; nothing done"


@pytest.fixture
def two_connections(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A daemon whose web port takes two connections at once."""
    running = start_server(
        open_storage(f"sqlite:///{tmp_path / 'a.db'}"), ADMIN_TOKEN, "127.0.0.1:0",
        limits=ServerLimits(max_connections=2),
        web=WebOptions(ListenAddress.parse("127.0.0.1:0")),
    )  # fmt: skip
    assert running.web_port is not None
    yield "127.0.0.1", running.web_port
    running.stop(grace=1.0)


def test_a_connection_beyond_the_limit_is_closed_as_it_is_accepted(
    two_connections: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_serve, "HEADERS_S", 600.0)  # only the limit closes connections
    asked = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(two_connections, timeout=30) as first:
        with socket.create_connection(two_connections, timeout=30) as second:
            second.sendall(asked)
            assert second.recv(65536).startswith(b"HTTP/1.1 200 ")
            with socket.create_connection(two_connections, timeout=30) as third:
                assert third.recv(65536) == b""  # closed at once (else: a 30 s time-out)
        # One went away: a new connection is served.
        with socket.create_connection(two_connections, timeout=30) as fourth:
            fourth.sendall(asked)
            assert fourth.recv(65536).startswith(b"HTTP/1.1 200 ")
        first.sendall(asked)
        assert first.recv(65536).startswith(b"HTTP/1.1 200 ")


def test_a_connection_whose_request_does_not_begin_in_time_is_closed(
    two_connections: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_serve, "HEADERS_S", 0.2)
    with socket.create_connection(two_connections, timeout=30) as trickling:
        trickling.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never ends its headers
        assert trickling.recv(65536) == b""
    with socket.create_connection(two_connections, timeout=30) as answered:
        answered.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while chunk := answered.recv(65536):  # until the daemon closes it
            received += chunk
        assert received.startswith(b"HTTP/1.1 200 ")  # answered, then closed: no next request
        assert received.endswith(b'"reports": "accepted"}')


def test_a_failure_in_the_router_is_answered_500_with_the_headers() -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("a bug")

    app = WebApp(broken, Page.load(), CorsPolicy(), lambda: (True, True),
                 max_message_bytes=1024, max_concurrent_rpcs=2)  # fmt: skip
    sent: list[MutableMapping[str, Any]] = []
    scope = {
        "type": "http", "method": "POST", "path": "/deniable.v1.Aggregator/GetSurvey",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"2")],
    }  # fmt: skip

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 500
    assert (b"content-security-policy", CSP.encode()) in sent[0]["headers"]
    assert app.calls == 0
