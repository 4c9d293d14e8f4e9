"""A plain HTTP server of the committed page on 127.0.0.1:0, for tests of the library alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deniable.client import WEB_FILES, web_bundle

TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
}


class _Page(BaseHTTPRequestHandler):
    """``/static/NAME`` from the bundle, every other path the page itself."""

    index: bytes | None = None  # the page's index.html, when not the bundle's

    def do_GET(self) -> None:
        name = self.path.removeprefix("/static/") if self.path.startswith("/static/") else ""
        file = web_bundle() / (name if name in WEB_FILES[1:] else "index.html")
        body = file.read_bytes() if file.name != "index.html" or not self.index else self.index
        self.send_response(200)
        self.send_header("Content-Type", TYPES[file.name[file.name.rindex(".") :]])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@dataclass
class Site:
    """A static server of the page: its base URL, and the index.html it serves."""

    url: str
    handler: type[_Page]

    def serve_index(self, index: bytes) -> None:
        """Serve ``index`` as the page's index.html from now on."""
        self.handler.index = index


@contextmanager
def page_site() -> Iterator[Site]:
    """A static server of the committed page on 127.0.0.1:0, until the block ends."""
    handler: type[_Page] = type("Page", (_Page,), {"index": None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}", handler)
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def static_page() -> Iterator[str]:
    """The committed page's base URL, served until the block ends."""
    with page_site() as site:
        yield site.url
