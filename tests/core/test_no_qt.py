"""The core and the CLI must import without Qt: every module is imported with Qt made unimportable."""

import pkgutil
import subprocess
import sys

import fxstudio.cli_commands
import fxstudio.core

BLOCKER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph'):
            raise ImportError('Qt imported from the core: ' + name)
sys.meta_path.insert(0, Block())
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
print('ok')
"""


def _modules():
    names = ["fxstudio.cli"]
    for pkg in (fxstudio.core, fxstudio.cli_commands):
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg.__name__}.")]
    return names


def test_core_and_cli_import_without_qt():
    names = _modules()
    assert "fxstudio.core.errors" in names
    assert "fxstudio.core.loading.tracing" in names  # subpackages are walked too
    proc = subprocess.run([sys.executable, "-c", BLOCKER, *names], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")
