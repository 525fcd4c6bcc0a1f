"""Headless Chromium for the report tests, spoken to over ``--remote-debugging-pipe`` (CDP, NUL-separated
JSON on fds 3/4, as bench/bench_open.py does): open a file with every network request recorded, read
the DOM, take a screenshot. The browser runs with name resolution and a proxy pointing at nothing, so
a request the page made would fail; the test sees it in the Network events all the same."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
SKIP_REASON = "Chromium is not installed (apt-get install chromium; .ci/run installs it)"


class Chromium:
    """One headless browser with one page; use as a context manager."""

    def __init__(self, width: int = 1400, height: int = 1000, javascript: bool = True):
        self.width, self.height, self.javascript = width, height, javascript
        self.next_id = 0
        self.events: list[dict] = []

    def __enter__(self) -> "Chromium":
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        self.profile = tempfile.mkdtemp(prefix="fxs-report-chrome-")

        def fds():
            # out of the way first: a pipe end already on fd 3 or 4 would keep its close-on-exec flag
            r, w = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
             f"--user-data-dir={self.profile}", f"--window-size={self.width},{self.height}", "about:blank"],
            preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        targets = self.call("Target.getTargets", session=None)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", session=None, targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        return self

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its debugging pipe")
            self.buffer += chunk
        raw, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(raw)

    def call(self, method: str, session: str | None = "", timeout: float = 60, **params) -> dict:
        """Send one CDP command and return its result; events on the way are kept in ``events``."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session == "":
            message["sessionId"] = self.session
        elif session is not None:
            message["sessionId"] = session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"Chromium: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def open(self, path: Path, timeout: float = 60) -> None:
        """Load ``path`` with Network events on; returns once the load event fired."""
        for domain in ("Network", "Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setScriptExecutionDisabled", value=not self.javascript)
        self.call("Page.navigate", url=path.resolve().as_uri())
        deadline = time.monotonic() + timeout
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            event = self._read(deadline)
            if "method" in event:
                self.events.append(event)
        self.evaluate("1")  # a round trip: events the load queued are read by now

    def requested_urls(self) -> list[str]:
        """Every URL the page asked for (the file itself included)."""
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def console_errors(self) -> list[str]:
        """Console messages and exceptions of level error (a CSP violation shows up here)."""
        out = [e["params"]["exceptionDetails"].get("text", "") for e in self.events if e["method"] == "Runtime.exceptionThrown"]
        out += [e["params"]["entry"].get("text", "") for e in self.events
                if e["method"] == "Log.entryAdded" and e["params"]["entry"].get("level") == "error"]
        return out

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (runs even where the page's scripts are off)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def screenshot(self, out: Path, scale: float = 1.0) -> bytes:
        """A PNG of the viewport at ``scale``, written to ``out``; its bytes."""
        top = self.evaluate("window.scrollY") or 0
        clip = {"x": 0, "y": top, "width": self.width, "height": self.height, "scale": scale}
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png", clip=clip)["data"])
        out.write_bytes(data)
        return data

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)


def png_colours(data: bytes) -> int:
    """How many distinct pixel colours an 8-bit RGB(A) PNG holds (a blank page: one or two)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 4
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            channels = {2: 3, 6: 4}[body[9]]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    prev = bytearray(stride)
    colours = set()
    for y in range(height):
        row = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        kind, line = row[0], bytearray(row[1:])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 4 == 0:  # every fourth row is plenty to tell a drawing from a blank page
            colours.update(bytes(line[i:i + channels]) for i in range(0, stride, channels * 4))
        prev = line
    return len(colours)
