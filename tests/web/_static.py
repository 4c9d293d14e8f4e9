"""A plain HTTP server of the committed page on 127.0.0.1:0, for tests of the library alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deniable.client import web_bundle

TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html; charset=utf-8"}


class _Page(BaseHTTPRequestHandler):
    """``/static/NAME`` from the bundle, every other path the page itself."""

    def do_GET(self) -> None:
        name = self.path.removeprefix("/static/") if self.path.startswith("/static/") else ""
        file = web_bundle() / (name if name in {"deniable.js", "deniable.css"} else "index.html")
        body = file.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", TYPES[file.name[file.name.rindex(".") :]])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@contextmanager
def static_page() -> Iterator[str]:
    """The page's base URL, served until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
