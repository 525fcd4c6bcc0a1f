"""``pass_names`` lists the passes a file imports (``from X import name``) as well as those it defines,
without running the file or importing any module: ``X`` is located with ``PathFinder`` and read with
``ast``; re-exports are followed a few levels; names that cannot be resolved are listed only when they
look like passes."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
import types
from pathlib import Path

import pytest

from fxstudio.core.passes import pass_names
from fxstudio.core.passes import imported as imported_module


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def listing(path: Path) -> dict[str, tuple[str, str]]:
    """name -> (kind, where), with ``sys.modules`` checked unchanged (nothing was imported)."""
    before = set(sys.modules)
    found = {p.name: (p.kind, p.where) for p in pass_names(path)}
    assert set(sys.modules) == before, set(sys.modules) - before
    return found


def test_passes_imported_from_torch_are_listed_with_their_module(tmp_path):
    path = write(tmp_path, "passes.py", """\
        import torch
        from torch.fx.experimental.optimization import fuse
        from torch.fx.passes.shape_prop import ShapeProp
        from torch.ao.quantization.quantize_fx import prepare_fx
        from torch.fx.passes.dialect.common.cse_pass import CSEPass
        from torch.fx import Transformer, Interpreter, GraphModule, symbolic_trace
        from torch.fx.passes.infra.pass_base import PassBase, PassResult
        from torch.nn.functional import relu
        from torch.nn import Conv2d
        from torch.fx.passes import shape_prop


        def mine(gm):
            return gm
        """)
    found = listing(path)
    assert found["fuse"] == ("function", "line 2, imported from torch.fx.experimental.optimization")
    assert found["ShapeProp"] == ("interpreter", "line 3, imported from torch.fx.passes.shape_prop")
    assert found["prepare_fx"][0] == "function"  # a parameter example_inputs
    assert found["CSEPass"][0] == "pass_class"
    assert found["mine"] == ("function", "line 13")
    # the base classes themselves, modules, nn.Modules, PassResult and functions of a Tensor are no passes
    for name in ("Transformer", "Interpreter", "GraphModule", "PassBase", "PassResult", "relu", "Conv2d",
                 "shape_prop", "torch"):
        assert name not in found, name
    assert [p.name for p in pass_names(path)][0] == "mine"  # the file's own definitions first


def test_a_sibling_module_is_read_not_run(tmp_path):
    marker = tmp_path / "ran"
    write(tmp_path, "helpers.py", f"""\
        open({str(marker)!r}, "w").close()


        def sibling_pass(gm):
            return gm


        def two_arguments(a, b):
            return a
        """)
    path = write(tmp_path, "passes.py", "from helpers import sibling_pass, two_arguments\n")
    assert listing(path) == {"sibling_pass": ("function", "line 1, imported from helpers")}
    assert not marker.exists()


def test_re_exports_of_a_package_are_followed(tmp_path):
    marker = tmp_path / "ran"
    write(tmp_path, "mypkg/__init__.py", f"open({str(marker)!r}, 'w').close()\nfrom .sub import *\n"
                                         "from .alias import renamed as short\n")
    write(tmp_path, "mypkg/sub.py", "from .deep.inner import deep_pass\n__all__ = ['deep_pass']\n")
    write(tmp_path, "mypkg/deep/__init__.py", "")
    write(tmp_path, "mypkg/deep/inner.py", "import torch\n\n\nclass DeepPass(torch.fx.Transformer):\n    pass\n\n\n"
                                          "def deep_pass(gm, *, strict=False):\n    return gm\n")
    write(tmp_path, "mypkg/alias.py", "from mypkg.deep.inner import DeepPass\nrenamed = DeepPass\n")
    path = write(tmp_path, "passes.py", "from mypkg import deep_pass, short, deep\n")
    found = listing(path)
    assert found == {"deep_pass": ("function", "line 1, imported from mypkg"),
                     "short": ("transformer", "line 1, imported from mypkg")}  # deep: a subpackage
    assert not marker.exists()


def test_unresolved_names_are_listed_only_when_they_look_like_passes(tmp_path):
    write(tmp_path, "dynamic.py", "globals()['made_pass'] = lambda gm: gm\n")
    path = write(tmp_path, "passes.py", """\
        from not_installed_anywhere import fold_everything, helper
        from dynamic import made_pass, thing
        from .relative import relative_pass
        """)
    found = listing(path)
    assert found == {"fold_everything": ("unresolved", "line 1, imported from not_installed_anywhere (not resolved)"),
                     "made_pass": ("unresolved", "line 2, imported from dynamic (not resolved)")}


def test_classes_callable_abstract_and_modules(tmp_path):
    write(tmp_path, "lib.py", """\
        from abc import ABC, abstractmethod
        import torch
        from torch import nn


        class Transformation(ABC):
            def __call__(self, graph_module, lint_and_recompile=True):
                return self.transform(graph_module)

            @abstractmethod
            def transform(self, graph_module):
                ...


        class Reversible(Transformation):
            @abstractmethod
            def reverse(self, graph_module):
                ...


        class MergeThings(Reversible):
            def transform(self, graph_module):
                return graph_module

            def reverse(self, graph_module):
                return graph_module


        class Half(Transformation):
            def transform(self, graph_module):
                return graph_module


        class Block(nn.Module):
            def __call__(self, x):
                return x


        class TwoArgs:
            def __call__(self, a, b):
                return a


        def on_tensor(x: torch.Tensor):
            return x


        async def coroutine(gm):
            return gm


        PASS = Half()
        NUMBER = 3
        """)
    path = write(tmp_path, "passes.py", "from lib import (Transformation, Reversible, MergeThings, Half, Block, "
                                        "TwoArgs, on_tensor, coroutine, PASS, NUMBER)\n")
    found = {name: kind for name, (kind, _) in listing(path).items()}
    assert found == {"MergeThings": "callable_class", "Half": "callable_class", "PASS": "instance"}


@pytest.mark.skipif(importlib.util.find_spec("optimum") is None, reason="optimum is not installed")
def test_optimum_transformations_are_callable_classes(tmp_path):
    path = write(tmp_path, "passes.py", "from optimum.fx.optimization import MergeLinears, Transformation, "
                                        "ReversibleTransformation, ChangeTrueDivToMulByInverse\n")
    found = {name: kind for name, (kind, _) in listing(path).items()}
    assert found == {"MergeLinears": "callable_class", "ChangeTrueDivToMulByInverse": "callable_class"}


def test_a_definition_after_the_import_wins_and_vice_versa(tmp_path):
    path = write(tmp_path, "passes.py", """\
        from torch.fx.experimental.optimization import fuse


        def fuse(gm):
            return gm


        def remove_dropout(gm):
            return gm


        from torch.fx.experimental.optimization import remove_dropout
        """)
    found = listing(path)
    assert found == {"fuse": ("function", "line 4"),
                     "remove_dropout": ("function", "line 12, imported from torch.fx.experimental.optimization")}


def test_type_checking_imports_and_stdlib_are_not_passes(tmp_path):
    path = write(tmp_path, "passes.py", """\
        from typing import TYPE_CHECKING
        from copy import deepcopy
        from functools import partial as transform_partial
        if TYPE_CHECKING:
            from torch.fx.experimental.optimization import fuse
        else:
            from torch.fx.experimental.optimization import remove_dropout
        try:
            from torch.fx.passes.shape_prop import ShapeProp
        except ImportError:
            ShapeProp = None
        """)
    found = listing(path)
    assert set(found) == {"remove_dropout"}  # ShapeProp: rebound to None in the except block (last binding)


def test_a_module_already_imported_is_inspected_without_calling_its_code(tmp_path, monkeypatch):
    """A module without a source to read: its dictionary is read, its ``__getattr__`` never called."""
    marker = tmp_path / "called"
    module = types.ModuleType("fxs_listing_ghost")

    def ghost_pass(gm, example_inputs=None):
        return gm

    def __getattr__(name):
        marker.write_text(name)
        raise AttributeError(name)

    module.ghost_pass = ghost_pass
    module.__getattr__ = __getattr__
    monkeypatch.setitem(sys.modules, "fxs_listing_ghost", module)
    path = write(tmp_path, "passes.py", "from fxs_listing_ghost import ghost_pass, other_pass, nothing\n")
    found = listing(path)
    assert found == {"ghost_pass": ("function", "line 1, imported from fxs_listing_ghost"),
                     "other_pass": ("unresolved", "line 1, imported from fxs_listing_ghost (not resolved)")}
    assert not marker.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_device_module_is_never_read(tmp_path):
    os.mkfifo(tmp_path / "blocking.py")
    (tmp_path / "zeros.py").symlink_to("/dev/zero")
    path = write(tmp_path, "passes.py", "from blocking import fifo_pass\nfrom zeros import zero_pass\n")
    found = listing(path)  # returns (a read would block forever or fill the memory)
    assert {k for k, _ in found.values()} == {"unresolved"}


def test_oversized_and_broken_modules_leave_names_unresolved(tmp_path, monkeypatch):
    monkeypatch.setattr(imported_module, "MAX_MODULE_BYTES", 100)
    write(tmp_path, "big.py", "def big_pass(gm):\n    return gm\n" + "# padding\n" * 20)
    write(tmp_path, "broken.py", "def broken_pass(gm:\n")
    path = write(tmp_path, "passes.py", "from big import big_pass\nfrom broken import broken_pass\n")
    assert {k for k, _ in listing(path).values()} == {"unresolved"}


def test_import_cycles_and_long_chains_end(tmp_path):
    write(tmp_path, "ring_a.py", "from ring_b import loop_pass\n")
    write(tmp_path, "ring_b.py", "from ring_a import loop_pass\n")
    for i in range(20):
        write(tmp_path, f"chain{i}.py", f"from chain{i + 1} import chain_pass\n")
    write(tmp_path, "chain20.py", "def chain_pass(gm):\n    return gm\n")
    path = write(tmp_path, "passes.py", "from ring_a import loop_pass\nfrom chain0 import chain_pass\n")
    found = listing(path)
    assert found["loop_pass"][0] == "unresolved" and found["chain_pass"][0] == "unresolved"


def test_star_imports_of_star_imports_end_quickly(tmp_path):
    """30 modules each star-importing all 30: without a bound on the steps, 30**6 lookups."""
    import time

    names = [f"star{i}" for i in range(30)]
    for name in names:
        write(tmp_path, f"{name}.py", "".join(f"from {other} import *\n" for other in names))
    path = write(tmp_path, "passes.py", "".join(f"from {name} import missing_pass_{name}\n" for name in names)
                 + "from torch.fx.experimental.optimization import fuse\n")
    start = time.perf_counter()
    found = listing(path)
    assert time.perf_counter() - start < 10
    assert found.pop("fuse")[0] == "function"  # the names before it left it its share of the work
    assert {kind for kind, _ in found.values()} == {"unresolved"} and len(found) == 30


def test_imported_passes_run_by_the_name_listed(tmp_path):
    """What is listed is what runs: the file's own attribute after it ran."""
    from fxstudio.core.passes import load_pass

    write(tmp_path, "helpers_run.py", "def sibling_run_pass(gm):\n    return gm\n")
    path = write(tmp_path, "passes_run.py", "from torch.fx.experimental.optimization import fuse\n"
                                            "from helpers_run import sibling_run_pass\n")
    names = [p.name for p in pass_names(path)]
    assert names == ["fuse", "sibling_run_pass"]
    try:
        for name in names:
            assert callable(load_pass(path, name).obj)
    finally:
        sys.modules.pop("helpers_run", None)
        if str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))
