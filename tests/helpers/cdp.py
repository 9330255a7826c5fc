"""Drive headless Chromium over the DevTools protocol on a pipe (``--remote-debugging-pipe``): no websocket
client and no browser download needed, only the Debian ``chromium`` binary.

Used by the UI tests to read what a real browser lays out: element rectangles, form state, localStorage.
Messages are JSON terminated by a NUL byte; the browser reads fd 3 and writes fd 4.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Optional


def _above_4(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)  # close-on-exec as os.pipe made it
    os.close(fd)
    return high


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page, at a fixed viewport size."""

    def __init__(self, binary: str, profile: Path, width: int = 1366, height: int = 768, fresh: bool = True) -> None:
        """``fresh=False`` reopens an earlier browser's profile (a later visit: same localStorage, new tab)."""
        if fresh:
            shutil.rmtree(profile, ignore_errors=True)
        profile.mkdir(parents=True, exist_ok=True)
        self.profile = profile
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        # Chrome's --remote-debugging-pipe reads fd 3 and writes fd 4. bash (dash takes single-digit fds only)
        # puts the pipes there before it execs the browser: no preexec_fn, whose Python-after-fork a process
        # with gRPC threads can abort. The pipes are first moved above 4, so wiring one never closes the other.
        to_browser_r, from_browser_w = (_above_4(fd) for fd in (to_browser_r, from_browser_w))
        wire = f'exec "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", wire, "bash", binary, "--headless", "--remote-debugging-pipe", "--no-sandbox",
             "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size={width},{height}",
             "about:blank"],
            pass_fds=(to_browser_r, from_browser_w), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._buffer = b""
        target = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def call(self, method: str, session: bool = False, timeout: float = 60.0, **params: Any) -> dict:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
        raise CdpError(f"{method}: no reply in {timeout} s")

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise CdpError("the browser closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise CdpError(f"script failed: {result['exceptionDetails'].get('text')} "
                           f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)

    def wait_for(self, expression: str, timeout: float = 60.0) -> Any:
        """Poll ``expression`` until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        value: Optional[Any] = None
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except CdpError:
                value = None
            if value:
                return value
            time.sleep(0.3)
        raise CdpError(f"timed out after {timeout} s waiting for: {expression[:200]}")

    def screenshot(self, path: Path) -> None:
        import base64

        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self, keep_profile: bool = False) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        if not keep_profile:
            shutil.rmtree(self.profile, ignore_errors=True)


# In-page helper: is the element entirely inside the viewport and inside every clipping ancestor?
VISIBLE_JS = """
window.__babelragVisible = function (el) {
  if (!el) return {found: false};
  var r = el.getBoundingClientRect();
  var box = {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
  var clipped = null;
  for (var a = el.parentElement; a; a = a.parentElement) {
    var s = getComputedStyle(a);
    if (/(auto|scroll|hidden)/.test(s.overflowY + s.overflowX)) {
      var ar = a.getBoundingClientRect();
      if (r.top < ar.top - 1 || r.bottom > ar.bottom + 1) { clipped = (a.className || a.tagName).toString(); break; }
    }
  }
  var inView = r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0;
  return {found: true, box: box, inView: inView, clippedBy: clipped, visible: inView && !clipped};
};
"""
