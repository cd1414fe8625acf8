"""The browser tests' fixtures: pytest-playwright's, driving the system Chromium.

pytest-playwright gives the fixtures (`page`, `context`, `new_context`, `browser`, ...) and
the options (`--headed`, `--slowmo`, `--tracing`, `--screenshot`, ...). This plugin
(loaded by tests/conftest.py) overrides only what must differ, in two ways:

- `browser_type_launch_args` adds `executable_path`: the system Chromium, never a
  downloaded browser. Without one, every test that asks for a browser skips, saying why.
- `playwright`, `browser_type`, `launch_browser`, `browser` and `browser_context_args`
  (which reads `playwright`) last one module, not the session. Playwright's sync API keeps
  an event loop marked running in the process while it is started, so a later test's
  `asyncio.run` would fail; started for a module, it stops with the module's tests.

Hence a module with browser tests holds browser tests only (tests/**/test_*_browser.py).
Each test gets a context of its own: `page` or `context`, or `browser.new_context(...)`
for options of its own (JavaScript off, say).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserType, Playwright, sync_playwright

__all__ = [
    "CHROMIUM",
    "browser",
    "browser_context_args",
    "browser_type",
    "browser_type_launch_args",
    "launch_browser",
    "playwright",
]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "no system Chromium (apt-get install chromium; `make test` installs it)"


@pytest.fixture(scope="session")
def browser_type_launch_args(
    browser_type_launch_args: dict[str, Any],
) -> dict[str, Any]:
    """pytest-playwright's launch options (`--headed`, `--slowmo`, ...), on the system
    Chromium; skips the tests that launch a browser when there is none."""
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    return {**browser_type_launch_args, "executable_path": CHROMIUM}


@pytest.fixture(scope="module")
def playwright(_pw_api_request_contexts: Any) -> Iterator[Playwright]:
    """Playwright's sync API, started for one module (see the module's docstring)."""
    started = sync_playwright().start()
    if _pw_api_request_contexts:  # `--tracing`: API requests are traced too
        _pw_api_request_contexts.instrument(started)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def browser_type(playwright: Playwright, browser_name: str) -> BrowserType:
    browser: BrowserType = getattr(playwright, browser_name)
    return browser


@pytest.fixture(scope="module")
def launch_browser(
    browser_type_launch_args: dict[str, Any], browser_type: BrowserType
) -> Callable[..., Browser]:
    """Launches the browser with the launch options, those given overriding them."""

    def launch(**kwargs: Any) -> Browser:
        return browser_type.launch(**{**browser_type_launch_args, **kwargs})

    return launch


@pytest.fixture(scope="module")
def browser(launch_browser: Callable[..., Browser]) -> Iterator[Browser]:
    """One headless system Chromium for the module's tests."""
    launched = launch_browser()
    try:
        yield launched
    finally:
        launched.close()


@pytest.fixture(scope="module")
def browser_context_args(
    pytestconfig: pytest.Config,
    playwright: Playwright,
    device: str | None,
    base_url: str | None,
    _pw_artifacts_folder: tempfile.TemporaryDirectory[str],
) -> dict[str, Any]:
    """pytest-playwright's context options (`--device`, `--base-url`, `--video`)."""
    args: dict[str, Any] = {}
    if device:
        args.update(playwright.devices[device])
    if base_url:
        args["base_url"] = base_url
    if pytestconfig.getoption("--video") in ("on", "retain-on-failure"):
        args["record_video_dir"] = _pw_artifacts_folder.name
    return args
