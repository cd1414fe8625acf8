"""A real headless chromium driven over the DevTools protocol (its --remote-debugging-pipe).

Enough to load a page, wait for its scripts, run an expression in it and read the result:
what a person would see, for pages that fill themselves in (the live run page).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "Browser"]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless chromium with one tab; `evaluate` runs JavaScript in the tab."""

    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        to_chromium, self._ours_out = os.pipe()
        self._ours_in, from_chromium = os.pipe()
        # Chromium reads commands on fd 3 and writes replies on fd 4.
        high_in = fcntl.fcntl(to_chromium, fcntl.F_DUPFD, 100)
        high_out = fcntl.fcntl(from_chromium, fcntl.F_DUPFD, 100)
        os.close(to_chromium)
        os.close(from_chromium)

        def wire() -> None:
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self._process = subprocess.Popen(
            [
                CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank",
            ],
            pass_fds=(3, 4, high_in, high_out), preexec_fn=wire,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(high_in)
        os.close(high_out)
        self._buffer = b""
        self._last_id = 0
        self._session: str | None = None

    def _send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self._last_id += 1
        message: dict[str, Any] = {"id": self._last_id, "method": method, "params": params or {}}
        if self._session is not None and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._ours_out, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._ours_in, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed its DevTools pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._last_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def open(self, url: str) -> None:
        target = self._send("Target.createTarget", {"url": url})["targetId"]
        attached = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]

    def evaluate(self, expression: str) -> Any:
        result = self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    def wait_for_text(self, text: str, timeout: float = 20.0) -> str:
        """The page's visible text, once it contains `text`."""
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = str(self.evaluate("document.body ? document.body.innerText : ''"))
            if text in shown:
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared; the page shows:\n{shown}")

    def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        """The value of `expression` in the tab, once it is truthy."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        shown = self.evaluate("document.body ? document.body.innerText : ''")
        raise AssertionError(f"{expression} never held; the page shows:\n{shown}")

    def screenshot(self, path: Path, width: int = 1280, height: int = 900) -> Path:
        """The tab as a PNG at `path`, drawn in a window of `width` x `height`."""
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self._send("Emulation.setDeviceMetricsOverride", metrics)
        shot = self._send("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        self._process.kill()
        self._process.wait()
        os.close(self._ours_in)
        os.close(self._ours_out)
