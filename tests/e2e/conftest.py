"""End-to-end tests on a real X server: skipped, with the reason, where Xvfb, xdotool or openbox is
missing; one X server per test process (pytest-xdist workers each get their own display)."""

from __future__ import annotations

import os

import pytest

from tests.e2e.xsession import App, XServer, missing_tools

_MISSING = missing_tools()


def pytest_collection_modifyitems(config, items):
    """Skip every e2e test, saying which programs are missing, when the X tools are not installed."""
    if not _MISSING:
        return
    if os.environ.get("CI") == "true":  # CI installs the tools (.ci/run): a skip there would hide a gap
        raise pytest.UsageError(f"e2e: {', '.join(_MISSING)} missing on CI; .ci/run should have installed them")
    skip = pytest.mark.skip(reason=f"e2e: needs {', '.join(_MISSING)} (apt-get install xvfb xdotool openbox)")
    for item in items:
        if "tests/e2e/" in item.nodeid.replace("\\", "/") or item.nodeid.startswith("e2e/"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def xserver(tmp_path_factory):
    """Xvfb + openbox for this test process."""
    server = XServer(tmp_path_factory.mktemp("xserver"))
    yield server
    server.stop()


@pytest.fixture
def launch(xserver, tmp_path):
    """Factory: ``launch(model, *args, env=…)`` starts the app on the X server (``env``: variables added
    to its environment); every app is killed after."""
    apps: list[App] = []

    def start(model, *args, wait_open: bool = True, env: dict | None = None, open_timeout: float = 60) -> App:
        app = App(xserver, tmp_path / f"app{len(apps)}", model, *args, wait_open=wait_open, env=env,
                  open_timeout=open_timeout)
        apps.append(app)
        return app

    yield start
    for app in apps:
        app.close()
