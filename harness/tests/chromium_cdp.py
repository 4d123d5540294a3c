"""Headless Chromium driven over the DevTools protocol, for the tests of
report.html and of the view command's pages.

Debian's `chromium` is started headless with a fresh profile, no network
services and --remote-debugging-port=0; the port is read from the profile's
DevToolsActivePort file and one page is driven through python3-websocket
(Debian package python3-websocket; harness/scripts/ensure-deps.sh lint
installs both).  Every console error, uncaught exception and error log entry
(a Content-Security-Policy violation, a failed load) is collected in
`Browser.errors`.

For the tests that pin what a reader sees first: opened() shows a page on
a VIEW_W x VIEW_H (1400 x 900) screen, rect() reads an element's bounding
rectangle from the DOM, and keep() writes a screenshot (the first screen,
the whole page, or the screen starting at an element) to
$MEMPROF_CI_SCREENSHOT_DIR, or else to _build/test-artifacts/report-html/,
and prints its path.

Invariants: only 127.0.0.1 is contacted; every wait is bounded (TIMEOUT
seconds, a failure, never a pass); the browser process and its profile
directory are removed on close.  Missing chromium or websocket is a test
failure naming the install command, not a skip.
"""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import pytest

from harness_testlib import REPO

TIMEOUT = 60
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def chromium_path() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is missing: run harness/scripts/ensure-deps.sh lint "
                    "(Debian package chromium)")
    return exe


class Browser:
    def __init__(self, width=1400, height=1000):
        try:
            import websocket
        except ImportError:
            pytest.fail("python3-websocket is missing: run harness/scripts/ensure-deps.sh lint")
        self.profile = tempfile.mkdtemp(prefix="memprof-ci-chromium.")
        self.proc = subprocess.Popen(
            [chromium_path(), *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}",
             "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.errors, self.events, self._id = [], [], 0
        try:
            port = self._port()
            targets = self._json(f"http://127.0.0.1:{port}/json/list")
            page = next(t for t in targets if t.get("type") == "page")
            self.ws = websocket.create_connection(page["webSocketDebuggerUrl"],
                                                  timeout=TIMEOUT, suppress_origin=True)
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable")
        except BaseException:
            self.close()
            raise

    def _port(self) -> int:
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"chromium exited with status {self.proc.returncode}")
            try:
                with open(path) as fh:
                    first = fh.readline().strip()
                if first.isdigit():
                    return int(first)
            except OSError:
                pass
            time.sleep(0.1)
        pytest.fail("chromium did not open its DevTools port")

    @staticmethod
    def _json(url):
        with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
            return json.load(r)

    def _event(self, msg):
        self.events.append(msg)
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: " + str((d.get("exception") or {}).get("description")
                                                   or d.get("text")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                      for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            self.errors.append("log: " + p["entry"].get("text", ""))

    def call(self, method, **params):
        self._id += 1
        my = self._id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)
        raise TimeoutError(method)

    def wait_event(self, method):
        for msg in self.events:
            if msg.get("method") == method:
                return msg
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            self._event(msg)
            if msg.get("method") == method:
                return msg
        raise TimeoutError(method)

    def open(self, path):
        self.events.clear()
        self.call("Page.navigate", url="file://" + os.path.abspath(path))
        self.wait_event("Page.loadEventFired")

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr[:80]}: {r['exceptionDetails'].get('text')}")
        return r.get("result", {}).get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data["data"]))
        return path

    def viewport(self, width, height):
        """The page's viewport in CSS pixels (scale 1), for what a reader
        sees on one screen."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def screen(self, path):
        """A screenshot of the viewport only (the first screen when not scrolled)."""
        data = self.call("Page.captureScreenshot", format="png")
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data["data"]))
        return path

    def settle(self):
        """Let pending console messages arrive: a no-op round trip."""
        self.eval("1")

    def close(self):
        ws = getattr(self, "ws", None)
        if ws is not None:
            try:
                ws.close()
            except Exception:  # noqa: BLE001 - closing a dead socket
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_screenshot(shot, name):
    """A screenshot that shows something (a blank page is a few KB), moved
    to $MEMPROF_CI_SCREENSHOT_DIR/name when that is set, for a person to
    look at."""
    assert os.path.getsize(shot) > 10_000
    keep = os.environ.get("MEMPROF_CI_SCREENSHOT_DIR")
    if keep:
        os.makedirs(keep, exist_ok=True)
        os.replace(shot, os.path.join(keep, name))


# A reviewer's screen, for the tests that pin what the first screen shows.
VIEW_W, VIEW_H = 1400, 900


def artifacts_dir():
    """Where keep() writes: $MEMPROF_CI_SCREENSHOT_DIR, or else
    _build/test-artifacts/report-html/ under the repository."""
    d = os.environ.get("MEMPROF_CI_SCREENSHOT_DIR") or os.path.join(
        REPO, "_build", "test-artifacts", "report-html")
    os.makedirs(d, exist_ok=True)
    return d


def keep(br, name, full=False, at=None):
    """A screenshot of the first screen, the whole page, or the screen
    that starts with the element `at`."""
    path = os.path.join(artifacts_dir(), name)
    if at:
        br.eval(f"document.querySelector({json.dumps(at)}).scrollIntoView()")
    if full:     # the whole page, 1400 px wide like the screen
        height = br.eval("document.documentElement.scrollHeight")
        data = br.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                       clip={"x": 0, "y": 0, "width": VIEW_W, "height": height, "scale": 1})
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data["data"]))
    else:
        br.screen(path)
    assert os.path.getsize(path) > 10_000, path   # a blank page is a few KB
    print(f"screenshot: {path}")
    return path


def opened(page):
    """A Browser showing `page` (report.html or a view page) on a
    VIEW_W x VIEW_H screen, once its script has marked the body ready."""
    br = Browser(VIEW_W, VIEW_H)
    try:
        br.viewport(VIEW_W, VIEW_H)
        br.open(str(page))
        assert br.eval("document.body.getAttribute('data-ready')") == "1"
        assert br.eval("window.innerWidth") == VIEW_W
    except BaseException:
        br.close()
        raise
    return br


def rect(br, selector):
    """The bounding rectangle of the first element matching `selector`, in
    CSS pixels of the viewport, or None when there is none."""
    return br.eval(f"(function(){{var e=document.querySelector({json.dumps(selector)});"
                   "if(!e)return null;var r=e.getBoundingClientRect();"
                   "return {top:r.top,bottom:r.bottom,left:r.left,right:r.right,"
                   "width:r.width,height:r.height};})()")
