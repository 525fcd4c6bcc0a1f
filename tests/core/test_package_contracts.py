"""The import-linter contracts cover every core module: each top-level module of ``fxstudio/core`` is
either in a layer of the core's layers contract or one of the shared modules that import no package."""

import tomllib
from pathlib import Path

import fxstudio.core

CORE = Path(fxstudio.core.__file__).parent
PYPROJECT = CORE.parents[1] / "pyproject.toml"


def _contracts() -> dict[str, dict]:
    config = tomllib.loads(PYPROJECT.read_text())
    return {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}


def test_every_core_module_is_layered_or_shared():
    contracts = _contracts()
    shared = set(contracts["The shared core modules import no core package"]["source_modules"])
    layered = {name.strip() for c in contracts.values() if c["type"] == "layers"
               for layer in c["layers"] for name in layer.split("|")}
    modules = {f"fxstudio.core.{p.stem}" for p in CORE.glob("*.py") if p.stem != "__init__"}
    modules |= {f"fxstudio.core.{p.parent.name}" for p in CORE.glob("*/__init__.py")}
    unplaced = modules - shared - layered - {"fxstudio.core.journal_schema"}
    assert not unplaced, f"add these to a contract in pyproject.toml: {sorted(unplaced)}"


def test_every_core_package_has_a_protected_face():
    protected = {c["protected_modules"][0].removesuffix(".*") for c in _contracts().values() if c["type"] == "protected"}
    packages = {f"fxstudio.core.{p.parent.name}" for p in CORE.glob("*/__init__.py")}
    assert packages <= protected, sorted(packages - protected)
