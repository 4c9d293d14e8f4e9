"""The browser participant's built page (client/web/dist), shipped inside the wheel."""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

__all__ = ["WEB_FILES", "web_bundle"]

WEB_FILES = ("index.html", "deniable.js", "deniable.css", "favicon.svg")
"""The files the page is made of; SOURCES.json beside them records what they were built from."""


def web_bundle() -> Traversable:
    """The folder of the built page: ``index.html``, ``deniable.js``, ``deniable.css``, its icon.

    The bundle is built from ``client/web`` by ``make web`` and committed, like the
    generated wire code, so that serving the page needs no Node.js.
    """
    return files("deniable.client") / "web" / "dist"
