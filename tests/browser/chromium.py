"""Debian's Chromium driven by Playwright: the browser tests' and bench/console_page_load.py's.

Playwright's Python package drives the system's ``/usr/bin/chromium`` (``executable_path``);
``playwright install`` is never run (it downloads a browser build: not possible here, and not
the browser people use). ``make test`` installs the Debian package when it runs as root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_MISSING = "Chromium is not installed (make test installs it when run as root)"
# Headless as root (no user-namespace sandbox there); the rest keeps Chromium off the network and quiet.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def launch_chromium(playwright: Any, profile: str | Path, **options: Any) -> Any:
    """A BrowserContext of Debian's Chromium, headless, with ``profile`` as its (fresh,
    temporary) user data folder."""
    return playwright.chromium.launch_persistent_context(
        str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS, **options)
