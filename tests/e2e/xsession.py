"""A real X session for end-to-end tests: Xvfb (a free display picked by the server itself), openbox
as window manager (focus, activation), the app as a separate process, and input only as X events
sent by ``xdotool`` at screen coordinates.

Where things are comes from the app's ``--test-geometry`` file; what happened is read from what a
user could observe or what the app wrote (that file's title / edit count / status, the edit script,
the journal, an exported file, a screenshot).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FXSTUDIO = Path(sys.executable).with_name("fxstudio")
EXAMPLES = ROOT / "resources" / "examples"
SHOTS = Path(os.environ.get("FXSTUDIO_E2E_SHOTS", "/tmp/e2e-shots"))
SCREEN = (1920, 1200)
TOOLS = ("Xvfb", "xdotool", "openbox")


def missing_tools() -> list[str]:
    """The programs the e2e tests need that are not on PATH."""
    return [tool for tool in TOOLS if shutil.which(tool) is None]


class XServer:
    """Xvfb plus openbox on a display of their own (``-displayfd``: no collisions between workers)."""

    def __init__(self, log_dir: Path, screen: tuple[int, int] = SCREEN):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.screen = screen
        read, write = os.pipe()
        self.xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", f"{screen[0]}x{screen[1]}x24",
             "-nolisten", "tcp", "-noreset"],
            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=open(log_dir / "xvfb.log", "wb"),
        )
        os.close(write)
        number = b""
        deadline = time.monotonic() + 20
        with os.fdopen(read, "rb") as pipe:
            while not number.endswith(b"\n") and time.monotonic() < deadline:
                chunk = pipe.read(1)
                if not chunk:
                    break
                number += chunk
        if not number.strip().isdigit():
            self.xvfb.kill()
            raise RuntimeError(f"Xvfb did not report a display: {(log_dir / 'xvfb.log').read_text()[-500:]}")
        self.display = f":{number.decode().strip()}"
        self.env = {**os.environ, "DISPLAY": self.display}
        self.env.pop("QT_QPA_PLATFORM", None)  # the real xcb platform, not offscreen
        self.env.pop("WAYLAND_DISPLAY", None)
        self.wm = subprocess.Popen(["openbox", "--sm-disable"], env=self.env, stdout=subprocess.DEVNULL,
                                   stderr=open(log_dir / "openbox.log", "wb"))
        if shutil.which("xprop") is None:  # x11-utils missing: give openbox a moment instead
            time.sleep(1.0)
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # openbox is up once it names itself on the root window
            out = subprocess.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], env=self.env,
                                 capture_output=True, text=True)
            if "window id" in out.stdout:
                break
            time.sleep(0.1)

    def stop(self) -> None:
        """End openbox and Xvfb (only the two processes started here)."""
        for proc in (self.wm, self.xvfb):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()


class App:
    """``fxstudio MODEL --test-geometry FILE`` on the X server, driven through xdotool."""

    def __init__(self, x: XServer, folder: Path, model: str | Path, *args: str, wait_open: bool = True,
                 env: dict[str, str] | None = None, open_timeout: float = 60):
        self.x = x
        self.extra_env = dict(env or {})  # on top of the X server's environment (FXSTUDIO_STALL_LOG, …)
        self.open_timeout = open_timeout
        self.folder = folder
        self.work = folder / "work"  # the app's cwd: where its save dialogs start
        self.state = folder / "state"
        self.config = folder / "config"
        for d in (self.work, self.state, self.config):
            d.mkdir(parents=True, exist_ok=True)
        self.geometry = folder / "geometry.json"
        self.model = str(model)
        self.args = args
        self.proc: subprocess.Popen | None = None
        self.start(wait_open=wait_open)

    def start(self, *, wait_open: bool = True) -> None:
        """Start (or start again, after ``kill9``) the app process."""
        self.geometry.unlink(missing_ok=True)
        env = {**self.x.env, "FXSTUDIO_STATE_DIR": str(self.state), "FXSTUDIO_CONFIG_DIR": str(self.config),
               "OMP_NUM_THREADS": "1", **self.extra_env}
        self.log = open(self.folder / "app.log", "ab")
        self.proc = subprocess.Popen([str(FXSTUDIO), self.model, "--test-geometry", str(self.geometry), *self.args],
                                     cwd=self.work, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        if wait_open:
            self.wait_for(lambda g: g["cards"] and g["active"] and g["model"], what="the model open and the window active",
                          timeout=self.open_timeout)
            self.wait_still()

    # ------------------------------------------------------------------ reading the app

    def geo(self) -> dict:
        """The last geometry the app wrote."""
        for _ in range(50):
            try:
                return json.loads(self.geometry.read_text(encoding="utf-8"))
            except (FileNotFoundError, json.JSONDecodeError):
                time.sleep(0.05)
        raise AssertionError(f"no geometry file from the app; its log: {self.log_tail()}")

    def fresh(self) -> dict:
        """Ask for a new snapshot (SIGUSR1) and return it."""
        seq = self.geo().get("seq", 0)
        self.proc.send_signal(signal.SIGUSR1)
        return self.wait_for(lambda g: g.get("seq", 0) > seq, what="a fresh geometry snapshot")

    def wait_for(self, check, *, what: str, timeout: float = 15) -> dict:
        """Poll the geometry until ``check(geo)`` is true; returns that snapshot."""
        deadline = time.monotonic() + timeout
        g = {}
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the app exited ({self.proc.returncode}) waiting for {what}: {self.log_tail()}")
            if self.geometry.exists():
                g = self.geo()
                try:
                    if check(g):
                        return g
                except (KeyError, TypeError, IndexError):
                    pass
            time.sleep(0.05)
        summary = {k: g.get(k) for k in ("title", "edits", "status_edits", "status_message", "selected", "focus",
                                          "undo_enabled", "windows")}
        raise AssertionError(f"timed out waiting for {what}; last state: {summary}; log: {self.log_tail()}")

    def wait_still(self, settle: float = 0.4) -> dict:
        """Wait until the geometry stops changing for ``settle`` seconds (layout and redraws done)."""
        last, since = None, time.monotonic()
        deadline = since + 10
        while time.monotonic() < deadline:
            g = self.geo()
            if g.get("seq") != last:
                last, since = g.get("seq"), time.monotonic()
            elif time.monotonic() - since >= settle:
                return g
            time.sleep(0.05)
        return self.geo()

    def log_tail(self) -> str:
        """The end of the app's stdout and stderr."""
        self.log.flush()
        return (self.folder / "app.log").read_text(errors="replace")[-1500:]

    def rect(self, name: str) -> list[int]:
        """Global rectangle of a named widget (see fxstudio/qt/test_geometry.py)."""
        g = self.wait_for(lambda g: name in g["widgets"], what=f"widget {name}")
        return g["widgets"][name]

    def dialog(self, title: str) -> dict:
        """The visible top-level window titled ``title`` (waits for it)."""
        g = self.wait_for(lambda g: any(w["title"] == title and w["active"] for w in g["windows"]),
                          what=f"the dialog {title!r}")
        return next(w for w in g["windows"] if w["title"] == title)

    # ------------------------------------------------------------------ input, as X events only

    def xdo(self, *args) -> None:
        """Run xdotool on this display."""
        subprocess.run(["xdotool", *map(str, args)], env=self.x.env, check=True, timeout=30)

    def click_at(self, x: int, y: int, button: int = 1) -> None:
        """Move the pointer there and click."""
        self.xdo("mousemove", "--sync", x, y)
        self.xdo("click", button)

    def click(self, rect: list[int], dx: float = 0.5) -> None:
        """Click inside ``rect`` (at fraction ``dx`` of its width, half its height)."""
        x, y, w, h = rect
        self.click_at(int(x + w * dx), int(y + h / 2))

    def click_card(self, name: str) -> dict:
        """Click a card's centre; waits until it is selected."""
        card = self.wait_for(lambda g: g["cards"][name]["visible"], what=f"card {name} on screen")["cards"][name]
        self.click_at(*card["center"])
        return self.wait_for(lambda g: g["selected"] == name, what=f"{name} selected")

    def key(self, *names: str) -> None:
        """Press keys (xdotool names: ``Return``, ``ctrl+z``, ``ctrl+shift+z``)."""
        self.xdo("key", "--delay", 40, *names)

    def type(self, text: str) -> None:
        """Type text key by key."""
        self.xdo("type", "--delay", 30, "--", text)

    def drag(self, start: list[int], end: list[int], steps: int = 12) -> None:
        """Press at ``start``, move there in ``steps``, release at ``end``."""
        self.xdo("mousemove", "--sync", *start)
        self.xdo("mousedown", 1)
        for i in range(1, steps + 1):
            x = start[0] + (end[0] - start[0]) * i // steps
            y = start[1] + (end[1] - start[1]) * i // steps
            self.xdo("mousemove", "--sync", x, y)
            time.sleep(0.02)
        time.sleep(0.2)
        self.xdo("mouseup", 1)

    def shot(self, name: str) -> Path:
        """Screenshot of the whole screen to SHOTS/NAME.png (ImageMagick ``import``)."""
        SHOTS.mkdir(parents=True, exist_ok=True)
        out = SHOTS / f"{name}.png"
        if shutil.which("import"):
            subprocess.run(["import", "-window", "root", str(out)], env=self.x.env, check=True, timeout=30)
        return out

    # ------------------------------------------------------------------ ending

    def kill9(self) -> None:
        """SIGKILL the app, as a crash would."""
        self.proc.kill()
        self.proc.wait(10)

    def close(self) -> None:
        """End the app (no questions: SIGKILL), if still running."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


def set_field(app, card: str, field: str, text: str) -> dict:
    """Click the card, click the field, select all, type, Enter; returns the state after."""
    before = app.geo()["edits"]
    app.click_card(card)
    app.click(app.rect(field))
    app.wait_for(lambda g: g["focus"].get("field") == field, what=f"the focus in {field}")
    app.key("ctrl+a")
    app.type(text)
    app.key("Return")
    return app.wait_for(lambda g: g["edits"] == before + 1, what=f"{card} {field} = {text} applied")
