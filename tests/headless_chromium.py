"""Drive headless Chromium over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON messages
ended by NUL on fds 3 and 4), so that a test can load a page, wait for it in real time and collect what
it logged, with nothing beyond the standard library."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def find_browser() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


class Browser:
    """One headless browser with one page. `errors` collects uncaught exceptions, console errors and log
    entries of level error, as text. `loopback_only`: every host name but 127.0.0.1 fails to resolve."""

    def __init__(self, exe: str, loopback_only: bool = False) -> None:
        self._profile = tempfile.mkdtemp(prefix="webxnn-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child reads commands on fd 3 and writes on fd 4 (kept open: fds to keep are closed after
        # preexec_fn runs, so 3 and 4 are listed too)
        self._proc = subprocess.Popen(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile}",
                "about:blank",
            ]
            + (
                ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"] if loopback_only else []
            ),  # fmt: skip
            pass_fds=(3, 4, to_browser_r, from_browser_w),
            preexec_fn=lambda: (os.dup2(to_browser_r, 3), os.dup2(from_browser_w, 4)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        target = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self._session = self.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)[
            "sessionId"
        ]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=True)

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                return
            buf += chunk
            *messages, buf = buf.split(b"\0")
            for raw in messages:
                self._handle(json.loads(raw))

    def _handle(self, msg: dict[str, Any]) -> None:
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.errors.append(str(d.get("exception", {}).get("description") or d.get("text")))
        elif method == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            self.errors.append(f"{p['entry'].get('url', '')}: {p['entry']['text']}")
        if "id" in msg:
            with self._cond:
                self._replies[msg["id"]] = msg
                self._cond.notify_all()

    def call(self, method: str, session: bool = False, timeout: float = 60, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        with self._cond:
            if not self._cond.wait_for(lambda: self._id in self._replies, timeout):
                raise TimeoutError(f"{method}: no reply in {timeout} s")
            reply = self._replies.pop(self._id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)[
            "result"
        ].get("value")

    def wait_for(self, expression: str, timeout: float) -> Any:
        """Polls `expression` until it is truthy (returned) or `timeout` seconds pass (TimeoutError)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"{expression}: still false after {timeout} s")

    def close(self) -> None:
        self._proc.kill()
        self._proc.wait()
        os.close(self._to_browser)
        shutil.rmtree(self._profile, ignore_errors=True)
