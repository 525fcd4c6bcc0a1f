"""The desktop packaging files: the .desktop entry, the PyInstaller spec, the icon, the install
script, the bundle's entry point (its hidden ``python -c`` mode) and the frozen resource folder."""

from __future__ import annotations

import configparser
import importlib.util
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fxstudio.core.export import verify as export_verify
from fxstudio.resources import RESOURCES_DIR, find_resources_dir

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
ENTRY = PACKAGING / "fxstudio_entry.py"


def _desktop_entry(path: Path) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return parser["Desktop Entry"]


def test_desktop_file_has_the_required_keys():
    entry = _desktop_entry(PACKAGING / "linux" / "fxstudio.desktop")
    assert entry["Type"] == "Application"
    assert entry["Name"] == "fxstudio"
    assert entry["GenericName"] == "FX Graph Editor"
    assert entry["Comment"]
    assert entry["Exec"] == "fxstudio %f"
    assert entry["Icon"] == "fxstudio"
    assert entry["Terminal"] == "false"
    assert entry["Categories"] == "Development;Science;"
    assert "MimeType" not in entry  # fxstudio does not claim .py files


def test_install_script_writes_the_entry_and_icons_and_removes_them(tmp_path):
    binary = tmp_path / "my apps" / "fxstudio"  # a space: Exec must quote it
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    script = str(PACKAGING / "linux" / "install.sh")
    subprocess.run(["sh", script, str(binary)], env=env, check=True, capture_output=True, timeout=30)
    installed = tmp_path / "data" / "applications" / "fxstudio.desktop"
    entry = _desktop_entry(installed)
    assert entry["Exec"] == f'"{binary}" %f'
    assert entry["TryExec"] == str(binary)
    assert entry["Icon"] == "fxstudio"
    icons = tmp_path / "data" / "icons" / "hicolor"
    assert (icons / "256x256" / "apps" / "fxstudio.png").read_bytes() == (RESOURCES_DIR / "icon.png").read_bytes()
    assert (icons / "scalable" / "apps" / "fxstudio.svg").is_file()

    subprocess.run(["sh", script, "--uninstall"], env=env, check=True, capture_output=True, timeout=30)
    assert not installed.exists() and not (icons / "256x256" / "apps" / "fxstudio.png").exists()


def test_spec_file_compiles_as_python():
    path = PACKAGING / "fxstudio.spec"
    compile(path.read_text(encoding="utf-8"), str(path), "exec")


def test_icon_files_exist_and_the_png_is_256_square():
    from PySide6.QtGui import QImage

    root = ET.parse(RESOURCES_DIR / "icon.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("viewBox") == "0 0 256 256"
    image = QImage(str(RESOURCES_DIR / "icon.png"))
    assert not image.isNull()
    assert (image.width(), image.height()) == (256, 256)
    assert image.hasAlphaChannel()  # rounded corners on any background


def test_make_app_sets_the_window_icon():
    code = "from fxstudio.qt.launch import make_app; app = make_app(); print(not app.windowIcon().isNull())"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "True"


def test_resources_are_found_in_a_checkout_and_in_a_bundle(tmp_path):
    assert find_resources_dir() == ROOT / "resources" == RESOURCES_DIR
    assert find_resources_dir(str(tmp_path)) == tmp_path / "resources"  # sys._MEIPASS when frozen


def _entry_module():
    spec = importlib.util.spec_from_file_location("fxstudio_entry", ENTRY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_entry_flag_is_the_one_the_export_check_uses(monkeypatch):
    assert _entry_module().PYTHON_C_FLAG == export_verify.FROZEN_PYTHON_C_FLAG
    assert export_verify.python_c_argv("pass") == [sys.executable, "-I", "-B", "-c", "pass"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert export_verify.python_c_argv("pass") == [sys.executable, "--fxstudio-python-c", "pass"]


@pytest.mark.parametrize("command", [
    [str(ENTRY), "--fxstudio-python-c"],  # the bundle's hidden mode
    ["-I", "-B", "-c"],  # what it stands in for
])
def test_entry_runs_code_as_python_c_does(command):
    code = ("import sys\n"
            "print(sys.argv, sorted(m for m in sys.modules if m.split('.')[0] == 'fxstudio'), sys.dont_write_bytecode)\n"
            "def fail():\n"
            "    raise ValueError('boom')\n"
            "fail()\n")
    out = subprocess.run([sys.executable, *command, code, "a", "b c"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert out.stdout == "['-c', 'a', 'b c'] [] True\n"
    assert out.stderr == ('Traceback (most recent call last):\n'
                          '  File "<string>", line 5, in <module>\n'
                          '  File "<string>", line 4, in fail\n'
                          'ValueError: boom\n')
