"""Render a local HTML file in headless Chromium and report what a reader's browser would show and log.

    page = render(Path("report.html"))   # page.dom: the DOM after load; page.errors: console errors,
                                         # uncaught exceptions, failed loads; page.requests: every URL fetched

Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands on fd 3,
replies and events on fd 4, each a JSON message ended by a NUL byte), so the console's level is
known (a console.error is told from a console.log) and failed loads and blocked requests are seen
too. No network, no extension, a throwaway profile. `chromium_binary()` is None where Chromium is
not installed (.ci/run installs it with `apt-get install chromium`); the tests skip then.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--remote-debugging-pipe",
)


SETTLE_MS = 100  # after the load event: scripts that start then (a search worker) report their errors


def chromium_binary() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


@dataclass
class Rendered:
    dom: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    probe: object = None  # the value of render_all's `probe` expression on this page
    png: bytes = b""  # the whole page as a PNG (render_all's `screenshot`)


class DevTools:
    """The browser end of the pipe: `send` a command and wait for its reply; events are kept in order."""

    def __init__(self, to_browser: int, from_browser: int, deadline: float):
        self.to_browser, self.from_browser, self.deadline = to_browser, from_browser, deadline
        self.buffer = b""
        self.last_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.receive()
            if reply.get("id") == self.last_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def receive(self) -> dict:
        while b"\0" not in self.buffer:
            remaining = self.deadline - time.monotonic()
            ready, _, _ = select.select([self.from_browser], [], [], max(remaining, 0))
            if not ready:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        text, _, self.buffer = self.buffer.partition(b"\0")
        message = json.loads(text)
        if "method" in message:
            self.events.append(message)
        return message

    def wait_for(self, method: str) -> None:
        if any(event["method"] == method for event in self.events):
            return
        while self.receive().get("method") != method:
            pass


def error_lines(events: list[dict]) -> list[str]:
    """Console errors and assertions, uncaught exceptions, error log entries (failed loads, blocked requests)."""
    errors = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(
                "console.error: " + " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
            )
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            errors.append("exception: " + details.get("exception", {}).get("description", details.get("text", "")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            errors.append(f"log: {params['entry'].get('text', '')} {params['entry'].get('url', '')}".strip())
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            errors.append(f"load failed: {params.get('errorText', '')}")
    return errors


def above(fd: int, lowest: int) -> int:
    """`fd` moved to a number >= `lowest` (the old number closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)
    os.close(fd)
    return moved


def render(path: Path, timeout: float = 60.0) -> Rendered:
    """Open `path` in headless Chromium, wait for its load event, and return the DOM and what was logged."""
    return render_all([path], timeout=timeout)[0]


def render_all(
    paths: list[Path | str],
    *,
    timeout: float = 60.0,
    width: int = 0,
    probe: str = "",
    mobile: bool = False,
    screenshot: bool = False,
) -> list[Rendered]:
    """Each of `paths` (files, or URLs) opened in turn in one browser (one start for many pages), in a window
    `width` px wide when given; `probe` is a JavaScript expression evaluated after each load (a promise is
    awaited), its JSON value in `Rendered.probe`. `mobile`: the window is a phone's (a page without a viewport
    meta is laid out 980 px wide and shrunk, as a phone does); `screenshot`: each whole page as a PNG."""
    binary = chromium_binary()
    if binary is None:
        raise FileNotFoundError("chromium is not installed")
    to_browser_read, to_browser = os.pipe()
    from_browser, from_browser_write = os.pipe()
    # the browser's ends are moved to fds 3 and 4 below: first out of the way of those numbers
    to_browser_read, from_browser_write = (above(fd, 10) for fd in (to_browser_read, from_browser_write))
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        # the pipe ends must be fds 3 and 4 in the browser: a shell places them, then becomes chromium
        shell = f'exec 3<&{to_browser_read} 4>&{from_browser_write} {to_browser_read}<&- {from_browser_write}>&-; exec "$@"'
        command = ["bash", "-c", shell, "chromium", binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"]
        process = subprocess.Popen(
            command,
            pass_fds=(to_browser_read, from_browser_write),
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        tools = DevTools(to_browser, from_browser, time.monotonic() + timeout)
        try:
            target = tools.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = tools.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Network", "Page"):
                tools.send(f"{domain}.enable", session=session)
            if width:
                metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": mobile}
                tools.send("Emulation.setDeviceMetricsOverride", metrics, session=session)
            return [open_page(tools, session, path, probe, screenshot) for path in paths]
        finally:
            close(process, tools)
            os.close(to_browser)
            os.close(from_browser)


def open_page(tools: DevTools, session: str, path: Path | str, probe: str, screenshot: bool = False) -> Rendered:
    """Navigate to `path` (a file, or a URL) and wait for its load; only the events of this page are reported."""
    tools.events.clear()
    url = path if isinstance(path, str) else path.resolve().as_uri()
    tools.send("Page.navigate", {"url": url}, session=session)
    tools.wait_for("Page.loadEventFired")

    def evaluate(expression: str) -> object:
        asked = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        return tools.send("Runtime.evaluate", asked, session=session)["result"].get("value")

    evaluate(f"new Promise(done => setTimeout(done, {SETTLE_MS}))")  # what the page's scripts do after load
    dom = str(evaluate("document.documentElement.outerHTML"))
    probed = evaluate(probe) if probe else None
    requests = [event["params"]["request"]["url"] for event in tools.events if event["method"] == "Network.requestWillBeSent"]
    png = b""
    if screenshot:
        import base64

        shot = tools.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)
        png = base64.b64decode(shot["data"])
    return Rendered(dom, error_lines(tools.events), requests, probed, png)


def close(process: subprocess.Popen, tools: DevTools) -> None:
    """Ask the browser to close; if it does not, end its process group (its renderers with it)."""
    try:
        tools.deadline = time.monotonic() + 10
        tools.send("Browser.close")
    except (RuntimeError, TimeoutError, OSError):
        pass  # the pipe closes as the browser exits: no reply is expected
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)
