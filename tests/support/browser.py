"""A real headless Chromium for the live-page tests, through Playwright (the system
Chromium, `executable_path`: no browser is downloaded).

The live page (`/`) fills itself in from its scripts, so its tests run JavaScript in the
tab and wait for what a person would see: `evaluate`, `wait_for`, `wait_for_text`. The
studio's tests (tests/studio) use pytest-playwright's fixtures and find controls by role.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from playwright.sync_api import Error, sync_playwright

__all__ = ["CHROMIUM", "Browser"]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one tab; `evaluate` runs JavaScript in the tab."""

    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        self._playwright = sync_playwright().start()
        try:
            self._context = self._playwright.chromium.launch_persistent_context(
                str(profile), executable_path=CHROMIUM, headless=True,
                viewport={"width": 1280, "height": 900},
            )  # fmt: skip
        except BaseException:
            self._playwright.stop()
            raise
        self._page = self._context.pages[0] if self._context.pages else self._context.new_page()

    def open(self, url: str) -> None:
        self._page.goto(url)

    def evaluate(self, expression: str) -> Any:
        return self._page.evaluate(_function(expression))

    def _shown(self) -> str:
        return str(self.evaluate("document.body ? document.body.innerText : ''"))

    def wait_for_text(self, text: str, timeout: float = 20.0) -> str:
        """The page's visible text, once it contains `text`."""
        try:
            self._page.wait_for_function(
                "(text) => document.body && document.body.innerText.includes(text)",
                arg=text, timeout=timeout * 1000,
            )  # fmt: skip
        except Error:
            raise AssertionError(
                f"{text!r} never appeared; the page shows:\n{self._shown()}"
            ) from None
        return self._shown()

    def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        """The value of `expression` in the tab, once it is truthy."""
        try:
            handle = self._page.wait_for_function(_function(expression), timeout=timeout * 1000)
        except Error:
            raise AssertionError(
                f"{expression} never held; the page shows:\n{self._shown()}"
            ) from None
        return handle.json_value()

    def screenshot(self, path: Path, width: int = 1280, height: int = 900) -> Path:
        """The tab as a PNG at `path`, drawn in a window of `width` x `height`."""
        self._page.set_viewport_size({"width": width, "height": height})
        self._page.screenshot(path=str(path))
        return path

    def close(self) -> None:
        self._context.close()
        self._playwright.stop()


def _function(expression: str) -> str:
    """`expression` as the function Playwright calls: a string holding ``=>`` anywhere
    would otherwise be taken for a function itself."""
    return f"() => ({expression})"
