"""A raw HTTP/2 peek at a server: the SETTINGS it announces to a new connection."""

from __future__ import annotations

import socket
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # length 0, type SETTINGS, no flags, stream 0
SETTINGS, ACK = 0x4, 0x1
MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE = 0x3, 0x4


def server_settings(port: int, timeout: float = 60.0) -> dict[int, int] | None:
    """The server's first SETTINGS frame as {identifier: value}, or None if it closed first.

    Sends the client preface and an empty SETTINGS frame on a new connection to
    127.0.0.1:``port``, then reads frames until the server's own SETTINGS (not an ACK).
    ``timeout`` only guards against a server that hangs.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(PREFACE + EMPTY_SETTINGS)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
            while len(data) >= 9 and len(data) >= 9 + int.from_bytes(data[:3], "big"):
                length, kind, flags = int.from_bytes(data[:3], "big"), data[3], data[4]
                payload, data = data[9 : 9 + length], data[9 + length :]
                if kind == SETTINGS and not flags & ACK:
                    pairs = (struct.unpack(">HI", payload[i : i + 6]) for i in range(0, length, 6))
                    return dict(pairs)
    return None
