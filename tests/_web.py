"""Plain HTTP to a daemon's web port (``serve --web``): requests and Connect unary calls."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

__all__ = ["RPC", "Reply", "call", "call_proto", "request"]

RPC = "/deniable.v1.Aggregator/"


@dataclass(frozen=True)
class Reply:
    """A response: status, headers (names in lower case; repeated ones joined) and body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)


def request(
    address: str,
    method: str,
    path: str,
    body: bytes | Iterable[bytes] | None = None,
    headers: dict[str, str] | None = None,
    *,
    tls: ssl.SSLContext | None = None,
) -> Reply:
    """One request on a fresh connection to ``address`` (``HOST:PORT``).

    A ``body`` that is an iterable of chunks is sent chunked (no Content-Length).
    """
    host, _, port = address.rpartition(":")
    connection: http.client.HTTPConnection
    if tls is None:
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
    else:
        connection = http.client.HTTPSConnection(host, int(port), timeout=30, context=tls)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        joined: dict[str, str] = {}
        for name, value in response.getheaders():
            key = name.lower()
            joined[key] = f"{joined[key]}, {value}" if key in joined else value
        return Reply(response.status, joined, response.read())
    finally:
        connection.close()


def call(
    address: str,
    rpc: str,
    message: Message | dict[str, Any],
    headers: dict[str, str] | None = None,
    *,
    tls: ssl.SSLContext | None = None,
) -> Reply:
    """A Connect unary call in JSON, as a browser's page makes it."""
    document = json_format.MessageToDict(message) if isinstance(message, Message) else message
    sent = {"Content-Type": "application/json", "Connect-Protocol-Version": "1", **(headers or {})}
    return request(address, "POST", RPC + rpc, json.dumps(document).encode(), sent, tls=tls)


def call_proto(address: str, rpc: str, data: bytes) -> Reply:
    """A Connect unary call in binary protobuf (``application/proto``)."""
    headers = {"Content-Type": "application/proto", "Connect-Protocol-Version": "1"}
    return request(address, "POST", RPC + rpc, data, headers)
