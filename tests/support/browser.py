"""Headless Chromium (Debian's /usr/bin/chromium) driven by Playwright's Python client."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# This machine's network is closed: no background connections, no component updates.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def available() -> bool:
    return shutil.which("chromium") is not None


@contextlib.contextmanager
def page() -> Iterator[object]:
    """A fresh page in a fresh headless browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 900})
        finally:
            browser.close()
