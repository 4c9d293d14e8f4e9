"""A plain HTTP server of the committed page on 127.0.0.1:0, for tests of the library alone."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deniable.client import WEB_FILES, web_bundle

_PAGES = re.compile(r"/|/s/[^/]*")
TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
}


def page_file(path: str) -> tuple[str, bytes] | None:
    """What the daemon's web port serves at ``path`` of the page (type, bytes), or None.

    ``/static/NAME`` for the bundle's files, ``/`` and ``/s/ID`` for its index.html.
    """
    name = path.removeprefix("/static/") if path.startswith("/static/") else None
    if name is None and not _PAGES.fullmatch(path):
        return None
    file = web_bundle() / ("index.html" if name is None else name)
    if file.name not in WEB_FILES:
        return None
    return TYPES[file.name[file.name.rindex(".") :]], file.read_bytes()


class _Page(BaseHTTPRequestHandler):
    """The page's files as the daemon serves them; every other path the page itself."""

    index: bytes | None = None  # the page's index.html, when not the bundle's

    def do_GET(self) -> None:
        found = page_file(self.path) or page_file("/")
        assert found is not None
        content_type, body = found
        if content_type.startswith("text/html") and self.index:
            body = self.index
        self.send_response(200)
        self.send_header("Content-Type", content_type)
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
