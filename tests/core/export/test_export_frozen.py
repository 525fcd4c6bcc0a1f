"""The exported-file check as a frozen bundle runs it: ``sys.executable`` is the app's binary, and
the check runs that binary in its hidden ``python -c`` mode (``packaging/fxstudio_entry.py``).

Here the binary is a stand-in: a script running this interpreter on the bundle's entry file, so the
frozen code path runs for real without building the bundle (``make bundle`` checks the real one).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fxstudio.core.errors import ExportError
from fxstudio.core.export import export_python
from fxstudio.core.export.verify import run_exported
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path

ENTRY = Path(__file__).resolve().parents[3] / "packaging" / "fxstudio_entry.py"


@pytest.fixture
def frozen(tmp_path, monkeypatch):
    """``sys.frozen`` set and ``sys.executable`` an executable that behaves as the bundle's binary."""
    binary = tmp_path / "bundle" / "fxstudio"
    binary.parent.mkdir()
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ENTRY}" "$@"\n')
    binary.chmod(0o755)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(binary))
    return binary


def test_frozen_export_is_verified_in_a_fresh_process_of_the_bundle(frozen, tmp_path):
    loaded = load_model(example_path("relu_add.py"))  # its exported file imports my_relu from relu_add.py
    result = export_python(loaded, tmp_path / "relu_add_export.py")
    assert result.verified and "identical" in result.verdict


def test_frozen_check_still_refuses_a_file_that_imports_fxstudio(frozen, tmp_path):
    bad = tmp_path / "leans_on_fxstudio.py"
    bad.write_text("import fxstudio\n")
    with pytest.raises(ExportError, match="imports fxstudio; it must run with only torch installed"):
        run_exported(bad, (), search_paths=[tmp_path])
