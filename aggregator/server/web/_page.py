"""The participant's page: the built bundle's files, read once, with strong ETags."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.resources.abc import Traversable

from deniable.client import WEB_FILES, web_bundle

__all__ = ["STATIC_PREFIX", "Page", "StaticFile"]

STATIC_PREFIX = "/static/"
_TYPES = {
    "index.html": "text/html; charset=utf-8",
    "deniable.js": "text/javascript; charset=utf-8",
    "deniable.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


@dataclass(frozen=True)
class StaticFile:
    """One file of the page: its bytes, content type and strong ETag (its SHA-256)."""

    body: bytes
    content_type: str
    etag: str

    @classmethod
    def read(cls, folder: Traversable, name: str) -> StaticFile:
        """Read ``name`` from ``folder``; the ETag is a quoted hash of the bytes."""
        body = folder.joinpath(name).read_bytes()
        etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
        return cls(body, _TYPES[name], etag)

    def matches(self, if_none_match: str) -> bool:
        """Whether an ``If-None-Match`` header names this version (``*`` included)."""
        tags = {tag.strip() for tag in if_none_match.split(",")}
        return "*" in tags or self.etag in tags


@dataclass(frozen=True)
class Page:
    """What the web port serves besides RPCs: ``index.html`` and ``/static/<file>``.

    Only the bundle's named files (:data:`~deniable.client.WEB_FILES`) are read, once, at
    start: a request names one by an exact path, never a file name, so no other file
    (``SOURCES.json`` beside them included) can be reached, whatever the path holds.
    """

    index: StaticFile
    static: dict[str, StaticFile]

    @classmethod
    def load(cls, folder: Traversable | None = None) -> Page:
        """The bundle's files, from ``folder`` (default: ``deniable.client.web_bundle()``).

        Raises:
            OSError: a file of the bundle is missing or unreadable.
        """
        folder = folder or web_bundle()
        files = {name: StaticFile.read(folder, name) for name in WEB_FILES}
        index = files.pop("index.html")
        return cls(index, {f"{STATIC_PREFIX}{name}": file for name, file in files.items()})
