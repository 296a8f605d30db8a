"""Headless Chromium (Debian's ``chromium``) driven over the DevTools protocol.

A small synchronous client over ``websockets``: open a page, wait for the report's
``data-ready`` mark, evaluate JavaScript, collect console errors and uncaught exceptions, take
a screenshot. Used by tests/report and benchmarks/report_open.py.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"  # ignored by git


def chromium_path() -> str:
    """The chromium binary; in CI (``make test`` installs it) its absence is a failure."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail(
            "chromium is not installed: `make test` installs Debian's chromium (scripts/install_chromium.sh)"
        )
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


class Browser:
    """One headless Chromium with one page; ``errors`` collects console errors and exceptions."""

    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        self.profile = tempfile.mkdtemp(prefix="gymhub-chromium-")
        self.process = subprocess.Popen(
            [
                chromium_path(),
                "--headless",
                "--no-sandbox",  # tests run as root in CI containers
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port = self._devtools_port()
        pages = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=30).json()
        target = next(p for p in pages if p["type"] == "page")
        self._connection = connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self.ws = self._connection.__enter__()
        self.ids = itertools.count(1)
        self.errors: list[str] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def _devtools_port(self) -> int:
        marker = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode}")
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port in 60 s")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self.ids)
        self.ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=120))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description") or details.get("text", "?"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
            self.errors.append(
                " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            )
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            entry = params["entry"]
            self.errors.append(f"{entry['source']}: {entry['text']} {entry.get('url', '')}".rstrip())

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str, *, ready: str = "document.body && document.body.dataset.ready === '1'") -> None:
        """Navigate and wait (up to 60 s) until ``ready`` is true in the page."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.evaluate(f"Boolean({ready})"):
                return
            time.sleep(0.05)
        raise TimeoutError(f"{url} was not ready in 60 s; errors: {self.errors}")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"{expression} stayed false for {timeout} s; errors: {self.errors}")

    def drain(self) -> None:
        """Read pending events (console errors raised after the last call)."""
        self.evaluate("0")

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params |= {
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
            }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))
        return path

    def close(self) -> None:
        try:
            self._connection.__exit__(None, None, None)
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
