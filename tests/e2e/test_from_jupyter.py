"""``fxstudio.edit`` from a real Jupyter kernel (ipykernel, started by ``jupyter_client`` as a notebook
front end would) with ``%gui qt`` on the X server: cells are sent as ``execute_request`` messages and
their printed output is read from the kernel's iopub channel. The window is driven only from outside,
with X input (xdotool): click a card, type a value in Properties, Enter, Ctrl+Q.

- a ``block=False`` window stays responsive while the kernel idles between cells (the kernel's Qt
  event loop runs it), and ``h.result()`` in the next cell returns the module with the edit made by
  X input, equal to the same edit done in plain torch.fx inside the cell;
- a blocking ``fxstudio.edit`` in a cell, while the kernel's Qt loop runs, returns (and the cell
  finishes) once X input closes the window.

ipykernel and jupyter_client are not dependencies of fxstudio: without them this test is skipped."""

from __future__ import annotations

import json
import queue
import sys
import time

import pytest

from tests.e2e.xsession import ROOT, App, set_field

pytest.importorskip("ipykernel")
jupyter_client = pytest.importorskip("jupyter_client")
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402

# ipykernel's %gui qt loop can strand a request that arrives while the kernel is going back into Qt's
# loop just after a cell ended (the cell then hangs until the next message): a person typing cells
# leaves a moment between them; so does this test.
PAUSE = 1.0


class KernelApp(App):
    """A Jupyter kernel (the .venv interpreter) whose cells open fxstudio windows on the X server."""

    def __init__(self, x, folder):
        super().__init__(x, folder, "<memory>::Net", wait_open=False)

    def start(self, *, wait_open: bool = True) -> None:
        """Start the kernel with the geometry file named in the environment, and a client on it."""
        self.geometry.unlink(missing_ok=True)
        env = {**self.x.env, "FXSTUDIO_STATE_DIR": str(self.state), "FXSTUDIO_CONFIG_DIR": str(self.config),
               "OMP_NUM_THREADS": "1", "FXSTUDIO_TEST_GEOMETRY": str(self.geometry),
               "IPYTHONDIR": str(self.folder / "ipython"), "JUPYTER_CONFIG_DIR": str(self.folder / "jupyter"),
               "JUPYTER_RUNTIME_DIR": str(self.folder / "runtime"),
               "PYTHONPATH": str(ROOT) + ":" + ":".join(p for p in sys.path if p)}
        env.pop("JUPYTER_PATH", None)
        self.log = open(self.folder / "app.log", "ab")
        spec = self.folder / "kernels" / "fxstudio-test"   # a kernelspec that runs this interpreter
        spec.mkdir(parents=True, exist_ok=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "fxstudio test", "language": "python"}), encoding="utf-8")
        specs = KernelSpecManager(kernel_dirs=[str(spec.parent)])
        self.km = jupyter_client.KernelManager(kernel_name="fxstudio-test", kernel_spec_manager=specs,
                                               connection_file=str(self.folder / "connection.json"))
        self.km.start_kernel(env=env, cwd=str(self.work), stdout=self.log, stderr=self.log)
        self.proc = self.km.provisioner.process   # the kernel's Popen: App.wait_for notices if it dies
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=120)
        except RuntimeError:
            self.close()
            raise
        self.idle_at = time.monotonic()

    def send(self, code: str) -> str:
        """Send one cell (an execute_request), a moment after the last one ended; returns its id at once."""
        time.sleep(max(0.0, self.idle_at + PAUSE - time.monotonic()))
        return self.kc.execute(code, store_history=True)

    def output(self, msg_id: str, timeout: float = 120) -> str:
        """What the cell ``msg_id`` printed (stream messages on iopub), once the kernel is idle after it.
        An error in the cell fails the test with its traceback."""
        text, deadline = [], time.monotonic() + timeout
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"cell {msg_id} did not finish; printed {''.join(text)!r}; "
                                     f"log {self.log_tail()}") from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                text.append(content["text"])
            elif kind == "error":
                raise AssertionError(f"the cell raised {content['ename']}: {content['evalue']}\n"
                                     + "\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                self.idle_at = time.monotonic()
                return "".join(text)

    def cell(self, code: str, timeout: float = 120) -> str:
        """Run one cell to its end and return what it printed."""
        return self.output(self.send(code), timeout)

    def wait_window(self) -> dict:
        """Wait for a (new) fxstudio window on the in-memory model, active and laid out."""
        self.wait_for(lambda g: g["cards"] and g["active"] and g["model"] == self.model,
                      what="the window open on the in-memory model", timeout=90)
        return self.wait_still()

    def close(self) -> None:
        """Stop the client and the kernel (only the kernel started here)."""
        try:
            self.kc.stop_channels()
        finally:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=True)
            self.log.close()


@pytest.fixture
def kernel(xserver, tmp_path):
    """A running kernel on the X server; shut down after the test."""
    app = KernelApp(xserver, tmp_path / "kernel")
    yield app
    app.close()


def test_edit_from_a_jupyter_kernel_with_gui_qt(kernel):
    out = kernel.cell("import sys; print('EXE', sys.executable)")
    assert f"EXE {sys.executable}" in out   # the kernel runs the .venv interpreter
    kernel.cell("%gui qt")
    kernel.cell("import torch, fxstudio\n"
                "from PySide6.QtWidgets import QApplication\n"
                "from tests.api.api_models import Net, example_input, plain_fx_set_arg\n"
                "m, x = Net(), example_input()")
    out = kernel.cell("h = fxstudio.edit(m, x, block=False)\nprint('OPEN', h.done())")
    assert "OPEN False" in out          # the cell returned with the window open
    g = kernel.wait_window()             # the kernel idles; its Qt loop draws the window and takes input
    assert g["title"].startswith("<memory>::Net")
    set_field(kernel, "mul", "field:1", "10")     # click the card, click the field, type, Enter: X input only
    kernel.shot("jupyter_01_edited_from_outside")
    out = kernel.cell("print('STILL OPEN', h.done(), len(h.script['edits']))")
    assert "STILL OPEN False 1" in out  # the edit reached the session while the kernel ran other cells
    kernel.key("ctrl+q")
    out = kernel.cell("edited = h.result(timeout=30)\n"
                      "expected = plain_fx_set_arg(m, 'mul', 1, 10)\n"
                      "print('CLOSED', h.done(), type(edited).__name__)\n"
                      "print('EQUAL', torch.equal(edited(x), expected(x)), torch.equal(m(x), Net()(x)))")
    assert "CLOSED True GraphModule" in out and "EQUAL True True" in out

    # a blocking edit in a cell, while the kernel's Qt loop runs: the cell ends when X input closes it
    kernel.geometry.unlink(missing_ok=True)
    msg_id = kernel.send("gm2 = fxstudio.edit(m, x)\n"
                         "print('RETURNED', type(gm2).__name__,"
                         " torch.equal(gm2(x), plain_fx_set_arg(m, 'mul', 1, 7)(x)))")
    kernel.wait_window()
    set_field(kernel, "mul", "field:1", "7")
    kernel.shot("jupyter_02_blocking_edit")
    kernel.key("ctrl+q")
    assert "RETURNED GraphModule True" in kernel.output(msg_id, timeout=60)
    out = kernel.cell("print('APP', QApplication.instance().applicationName() == 'fxstudio',"
                      " [type(w).__name__ for w in QApplication.topLevelWidgets() if w.isVisible()])")
    assert "APP False []" in out         # the kernel's application, not one fxstudio made; no window left
