"""``serve --web``'s HTTP side: the page, headers, CORS, health, TLS, draining and --help."""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from deniable.aggregator.server.web import CSP
from deniable.client import web_bundle
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._certs import Pki, make_pki
from tests._web import RPC, Reply, call, request
from tests.conftest import Daemon, RunCli, start_daemon

ALLOWED = "https://survey.example.org"
PAGE = {
    "/static/deniable.js": ("deniable.js", "text/javascript; charset=utf-8"),
    "/static/deniable.css": ("deniable.css", "text/css; charset=utf-8"),
    "/static/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
SECURITY = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(tmp_path_factory.mktemp("web"), args=["--web", "127.0.0.1:0"])
    yield running
    assert running.stop() == 0


def web(daemon: Daemon) -> str:
    assert daemon.web_address is not None
    return daemon.web_address


def assert_secure(reply: Reply) -> None:
    for name, value in SECURITY.items():
        assert reply.headers.get(name) == value, (name, reply.status)
    assert "unsafe" not in reply.headers["content-security-policy"]
    assert "cache-control" in reply.headers


def test_csp_allows_no_third_party_and_nothing_inline() -> None:
    directives = dict(part.strip().split(" ", 1) for part in CSP.split(";"))
    assert directives == {
        "default-src": "'none'", "script-src": "'self'", "style-src": "'self'",
        "connect-src": "'self'", "img-src": "'self'", "base-uri": "'none'",
        "form-action": "'none'", "frame-ancestors": "'none'",
    }  # fmt: skip


def test_the_page_and_its_files_with_types_etags_and_headers(daemon: Daemon) -> None:
    index = (web_bundle() / "index.html").read_bytes()
    for path in ("/", "/s/x", "/s/38d333e2695d3670", "/?from=mail"):
        page = request(web(daemon), "GET", path)
        assert (page.status, page.body) == (200, index), path
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert_secure(page)
    for path, (name, content_type) in PAGE.items():
        body = (web_bundle() / name).read_bytes()
        got = request(web(daemon), "GET", path)
        assert (got.status, got.body, got.headers["content-type"]) == (200, body, content_type)
        assert_secure(got)
        etag = got.headers["etag"]
        assert etag == f'"{hashlib.sha256(body).hexdigest()[:32]}"'  # strong: no W/
        assert got.headers["cache-control"] == "no-cache"
        again = request(web(daemon), "GET", path, headers={"If-None-Match": etag})
        assert (again.status, again.body, again.headers["etag"]) == (304, b"", etag)
        assert_secure(again)
        head = request(web(daemon), "HEAD", path)
        assert (head.status, head.body, head.headers["content-length"]) == (
            200,
            b"",
            str(len(body)),
        )
        posted = request(web(daemon), "POST", path, b"x")
        assert (posted.status, posted.headers["allow"]) == (405, "GET, HEAD")


def test_nothing_else_is_served_and_no_path_leaves_the_bundle(daemon: Daemon) -> None:
    beside = web_bundle() / "SOURCES.json"  # in the source tree; a wheel may leave it out
    sources = beside.read_bytes() if beside.is_file() else b'"sources"'
    for path in (
        "/static/", "/static", "/static/SOURCES.json", "/SOURCES.json", "/static/index.html",
        "/index.html", "/static/deniable.js/", "/static//deniable.js", "/static/DENIABLE.JS",
        "/static/../SOURCES.json", "/static/%2e%2e/SOURCES.json", "/static/..%2fSOURCES.json",
        "/static/%2e%2e/%2e%2e/%2e%2e/pyproject.toml", "/s/../../etc/passwd",
        "/s/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/s/", "/s/x/y", "/s/X", "//etc/passwd",
        "/../../../../etc/passwd", "/static/deniable.js%00.css", "/healthz/x", "/dist/index.html",
    ):  # fmt: skip
        got = request(web(daemon), "GET", path)
        assert got.status in (400, 404), (path, got.status)
        for leaked in (sources, b"root:", b"<html", b"[project]"):
            assert leaked not in got.body, path
        if got.status == 404:
            assert_secure(got)


def test_rpc_answers_carry_the_headers_and_are_never_cached(daemon: Daemon) -> None:
    ok = call(web(daemon), "ListSurveys", {})
    refused = call(web(daemon), "GetSurvey", {"surveyId": "nope"})
    absent = call(web(daemon), "CreateSurvey", {})
    for reply, status in ((ok, 200), (refused, 404), (absent, 404)):
        assert reply.status == status
        assert_secure(reply)
        assert reply.headers["cache-control"] == "no-store"


def test_cors_is_off_without_web_origin(daemon: Daemon) -> None:
    origin = {"Origin": "https://elsewhere.example"}
    answered = call(web(daemon), "ListSurveys", {}, origin)
    assert answered.status == 200
    assert not [name for name in answered.headers if name.startswith("access-control-")]
    preflight = request(web(daemon), "OPTIONS", RPC + "SubmitReports", headers={
        **origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,connect-protocol-version",
    })  # fmt: skip
    assert preflight.status == 405
    assert not [name for name in preflight.headers if name.startswith("access-control-")]


def test_cors_for_listed_origins_only_and_health_from_the_environment(tmp_path: Path) -> None:
    env = {
        "DENIABLE_AGGREGATOR_SERVE_WEB": "127.0.0.1:0",
        "DENIABLE_AGGREGATOR_SERVE_WEB_ORIGIN": f"{ALLOWED} http://localhost:8080",
        "DENIABLE_AGGREGATOR_SERVE_MIN_FREE_SPACE": "99.99%",  # below it: reports refused
    }
    daemon = start_daemon(tmp_path, env=env)
    try:
        listening = _listening(daemon)
        assert listening["web_origins"] == ["http://localhost:8080", ALLOWED]
        asked = {"Origin": ALLOWED, "Access-Control-Request-Method": "POST"}
        preflight = request(web(daemon), "OPTIONS", RPC + "SubmitReports", headers=asked)
        assert preflight.status == 204
        assert preflight.headers["access-control-allow-origin"] == ALLOWED
        assert preflight.headers["access-control-allow-methods"] == "POST"
        allowed = {
            h.strip().lower() for h in preflight.headers["access-control-allow-headers"].split(",")
        }
        assert allowed == {"content-type", "connect-protocol-version", "connect-timeout-ms"}
        assert "access-control-allow-credentials" not in preflight.headers
        answered = call(web(daemon), "ListSurveys", {}, {"Origin": ALLOWED})
        assert answered.headers["access-control-allow-origin"] == ALLOWED
        assert "Origin" in answered.headers["vary"]
        for other in ("https://evil.example", f"{ALLOWED}.evil.example", "null"):
            stranger = call(web(daemon), "ListSurveys", {}, {"Origin": other})
            assert "access-control-allow-origin" not in stranger.headers
            refused = request(
                web(daemon), "OPTIONS", RPC + "ListSurveys", headers={**asked, "Origin": other}
            )
            assert (refused.status, "access-control-allow-origin" in refused.headers) == (
                405,
                False,
            )
        # The watermark: still SERVING (estimates and listings go on), reports refused.
        health = request(web(daemon), "GET", "/healthz")
        assert (health.status, health.json()["status"]) == (200, "SERVING")
        assert health.json()["reports"].startswith("refused")
        batch = pb.SubmitReportsRequest(reports=[pb.Report(report_id="r", survey_id="s")])
        full = call(web(daemon), "SubmitReports", batch).json()
        assert full["code"] == "resource_exhausted"
        assert "below the aggregator's watermark" in full["message"]
    finally:
        assert daemon.stop() == 0


def test_healthz_says_serving_and_the_drain_covers_both_ports(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path, args=["--web", "127.0.0.1:0"])
    health = request(web(daemon), "GET", "/healthz")
    assert (health.status, health.json()) == (200, {"status": "SERVING", "reports": "accepted"})
    assert health.headers["cache-control"] == "no-store"
    assert_secure(health)
    assert daemon.stop() == 0
    log = [json.loads(line) for line in daemon.stderr_path.read_text().splitlines()]
    events = [r["event"] for r in log]
    assert "signal received" in events
    assert events[-1] == "stopped"
    with pytest.raises(ConnectionRefusedError):
        request(web(daemon), "GET", "/healthz")
    # One access line per request; never a body, a token or a query.
    lines = [r for r in log if r["event"] == "web request"]
    assert [(r["method"], r["path"], r["status"]) for r in lines] == [("GET", "/healthz", 200)]


def test_tls_serves_https_with_the_same_certificate(tmp_path: Path) -> None:
    pki: Pki = make_pki(tmp_path)
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
    args = ["--web", "127.0.0.1:0", "--tls-cert", str(pki.server.cert_file),
            "--tls-key", str(pki.server.key_file)]  # fmt: skip
    daemon = start_daemon(tmp_path / "one", args=args)
    try:
        assert _listening(daemon)["web"] == f"https://{web(daemon)}"
        trusting = ssl.create_default_context(cafile=str(pki.ca.cert_file))
        page = request(web(daemon), "GET", "/", tls=trusting)
        assert page.status == 200
        assert_secure(page)
        assert call(web(daemon), "ListSurveys", {}, tls=trusting).status == 200
        with pytest.raises(ssl.SSLError):  # a CA that did not sign it
            request(
                web(daemon),
                "GET",
                "/",
                tls=ssl.create_default_context(cafile=str(pki.other_ca.cert_file)),
            )
        with pytest.raises((ConnectionError, OSError)):  # plaintext against TLS
            request(web(daemon), "GET", "/")
    finally:
        assert daemon.stop() == 0
    mutual = start_daemon(tmp_path / "two", args=[*args, "--tls-client-ca", str(pki.ca.cert_file)])
    try:
        with_cert = ssl.create_default_context(cafile=str(pki.ca.cert_file))
        with_cert.load_cert_chain(pki.client.cert_file, pki.client.key_file)
        assert request(web(mutual), "GET", "/healthz", tls=with_cert).status == 200
        with pytest.raises((ssl.SSLError, ConnectionError)):  # no client certificate
            request(web(mutual), "GET", "/healthz", tls=trusting)
    finally:
        assert mutual.stop() == 0


def test_help_lists_web_and_bad_values_exit_2(run_cli: RunCli, tmp_path: Path) -> None:
    shown = run_cli("deniable-aggregator", "serve", "--help")
    text = "".join(shown.stdout.split())
    for option in ("--web", "--web-origin"):
        assert f"{option}" in shown.stdout
        assert "DENIABLE_AGGREGATOR_SERVE_" + option[2:].upper().replace("-", "_") in text
    database = tmp_path / "never.db"
    for args, message in (
        (["--web", "127.0.0.1"], "listen address '127.0.0.1': no port"),
        (["--web", "unix:/tmp/x.sock"], "a Unix socket is not served"),
        (["--web", "127.0.0.1:0", "--web-origin", "*"], "--web-origin '*': an origin is"),
        (["--web", "127.0.0.1:0", "--web-origin", f"{ALLOWED}/"], "no trailing slash"),
        (["--web-origin", ALLOWED], "--web-origin needs --web"),
    ):
        done = run_cli("deniable-aggregator", "serve", "--listen", "127.0.0.1:0",
                       "--db", f"sqlite:///{database}", *args)  # fmt: skip
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, done.stderr
        assert not database.exists()


def test_a_web_port_that_cannot_be_bound_stops_the_daemon_before_it_serves(
    run_script: RunCli, tmp_path: Path
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        done = run_script(
            "deniable-aggregator", "serve", "--listen", "127.0.0.1:0", "--web", f"127.0.0.1:{port}",
            "--db", f"sqlite:///{tmp_path / 'a.db'}", env={"XDG_DATA_HOME": str(tmp_path / "data")},
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    error = done.stderr.splitlines()[-1]
    assert error.startswith(f"Error: cannot serve the web port on 127.0.0.1:{port}: "), error
    assert "listening" not in done.stderr
    assert done.stdout == ""


def _listening(daemon: Daemon) -> dict[str, object]:
    lines = daemon.stderr_path.read_text().splitlines()
    record: dict[str, object] = next(json.loads(line) for line in lines if '"listening"' in line)
    return record
