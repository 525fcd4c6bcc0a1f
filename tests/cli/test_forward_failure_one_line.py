"""Issue #23 (5): when an edited graph's forward raises, the CLI says so in one line. torch.fx's own
``GraphModule.__call__`` prints a multi-line "Traceback ... Call using an FX-traced Module" block on
stderr before re-raising; fxstudio names the node itself, so that block must never reach the user."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

import pytest
import torch
import torch.fx

from fxstudio.core.fx_compat import quiet_fx_call_errors

# The example inputs do not fit the view: the traced graph's forward fails inside generated code,
# where torch.fx's GraphModule.__call__ prints its block.
MODEL = '''import torch
class M(torch.nn.Module):
    def forward(self, x):
        return x.view(-1, 4) + 1
def example_inputs():
    return (torch.ones(3, 3),)
'''


@pytest.fixture
def broken_edit(tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    script = {"format": "fxstudio.edits/1", "edits": [{"op": "set_arg", "node": "add", "key": 1, "value": "2"}]}
    (tmp_path / "e.json").write_text(json.dumps(script))
    return tmp_path


@pytest.mark.parametrize("argv", [["export", "m.py", "-o", "out.py"], ["apply", "m.py", "e.json", "-o", "out.py"]])
def test_a_failing_forward_is_one_line(broken_edit, argv):
    proc = subprocess.run([sys.executable, "-m", "fxstudio", *argv], capture_output=True, text=True, timeout=300,
                          cwd=broken_edit, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxstudio: "), proc.stderr
    assert "Traceback" not in proc.stderr and "shape '[-1, 4]' is invalid" in lines[0]
    assert not (broken_edit / "out.py").exists()


def test_quiet_keeps_the_exception_and_drops_only_the_printout():
    class M(torch.nn.Module):
        def forward(self, x):
            return x + 1

    gm = torch.fx.symbolic_trace(M())
    add = next(n for n in gm.graph.nodes if n.op == "call_function")
    add.args = (add.args[0], "hello")
    gm.recompile()
    quiet_fx_call_errors()
    quiet_fx_call_errors()  # installing twice is harmless
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(TypeError, match="unsupported operand"):
        gm(torch.ones(2))
    assert err.getvalue() == ""
    assert torch.equal(torch.fx.symbolic_trace(M())(torch.ones(2)), torch.full((2,), 2.0))


def test_the_last_resort_is_one_line_without_debug(tmp_path):
    """An exception no check anticipated: one "unexpected error" line and exit 2 for a user
    (``FXSTUDIO_DEBUG`` unset); with ``FXSTUDIO_DEBUG=1`` the traceback, for whoever fixes it."""
    import os

    code = ("import sys, fxstudio.cli as c, fxstudio.cli_commands.inspect as i\n"
            "def boom(args): raise ValueError('a check nobody wrote\\x1b[2J')\n"
            "i.run = boom\nsys.exit(c.main(['inspect', 'anything.py']))\n")
    env = {k: v for k, v in os.environ.items() if k != "FXSTUDIO_DEBUG"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unexpected error (ValueError: a check nobody wrote\\x1b[2J)" in lines[0]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**env, "FXSTUDIO_DEBUG": "1"}, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" in proc.stderr
