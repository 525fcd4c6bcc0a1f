"""``fxstudio.edit`` from an interactive IPython with ``%gui qt`` on the X server (IPython's Qt input
hook needs a display): a ``block=False`` window lives while IPython waits at its prompt (a timer set
in one cell fires while IPython idles and closes it), ``result()`` returns the edited module in the
next cell, and a blocking ``fxstudio.edit`` returns from inside the hook's running application.

IPython is not a dependency of fxstudio: without it (and its pexpect) this test is skipped."""

from __future__ import annotations

import sys
import time

import pytest

from tests.e2e.xsession import ROOT

IPython = pytest.importorskip("IPython")
pexpect = pytest.importorskip("pexpect")


def test_edit_from_ipython_with_gui_qt(xserver, tmp_path):
    env = {**xserver.env, "FXSTUDIO_CONFIG_DIR": str(tmp_path / "config"), "FXSTUDIO_STATE_DIR": str(tmp_path / "state"),
           "IPYTHONDIR": str(tmp_path / "ipython"), "TERM": "xterm", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT) + ":" + ":".join(p for p in sys.path if p)}
    child = pexpect.spawn(sys.executable, ["-m", "IPython", "--no-banner", "--colors=nocolor", "--no-autoindent"],
                          env=env, encoding="utf-8", timeout=120, cwd=str(tmp_path), dimensions=(50, 400))
    log = open(tmp_path / "ipython.log", "w", encoding="utf-8")
    child.logfile_read = log
    count = 0

    def cell(code: str) -> str:
        """Run one cell and return what it printed (up to its end marker)."""
        nonlocal count
        count += 1
        child.sendline(f"{code}; print('EN' + 'D{count}')")
        child.expect(f"END{count}")
        return child.before

    try:
        time.sleep(2)  # the first prompt
        cell("%gui qt\nimport sys")
        cell("import torch, fxstudio; from PySide6.QtCore import QTimer; from PySide6.QtWidgets import QApplication;"
             "from tests.api.api_models import Net, example_input; m, x = Net(), example_input()")
        out = cell("h = fxstudio.edit(m, x, block=False);"
                   "h.document.apply_edit({'op': 'set_arg', 'node': 'mul', 'key': 1, 'value': '10'});"
                   "QTimer.singleShot(800, h.close); print('OPEN', h.done())")
        assert "OPEN False" in out
        time.sleep(3)   # IPython waits at its prompt, running Qt's loop: the timer closes the window
        out = cell("print('CLOSED', h.done()); gm = h.result(timeout=0);"
                   "print('EQUAL', torch.equal(gm(x), torch.relu(m.lin(x)) * 10 + 1))")
        assert "CLOSED True" in out and "EQUAL True" in out
        out = cell("QTimer.singleShot(1500, lambda: [w.close() for w in QApplication.topLevelWidgets()"
                   " if type(w).__name__ == 'ApiWindow' and w.isVisible()]);"
                   "gm2 = fxstudio.edit(m, x); print('RETURNED', type(gm2).__name__, torch.equal(gm2(x), m(x)))")
        assert "RETURNED GraphModule True" in out
        out = cell("print('APP', QApplication.instance().applicationName() == 'fxstudio')")
        assert "APP False" in out   # the hook's application, not one fxstudio made
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
        log.close()
