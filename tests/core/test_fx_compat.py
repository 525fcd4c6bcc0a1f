"""``fxstudio.core.fx_compat``: every torch private behind one door, each with a public fallback.

Each fallback runs here with its private name taken away (``Hidden`` shows an object without one
attribute; module-level privates are monkeypatched away) and gives the fast path's answer on a real
traced model. The last tests check that no other module of fxstudio names a torch private.
"""

from __future__ import annotations

import ast
import copy
import io
import operator
from pathlib import Path

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from fxstudio.core import fx_compat
from fxstudio.core.code_text import IncrementalCode
from fxstudio.core.shape_propagation import propagate_shapes

ROOT = Path(fx_compat.__file__).resolve().parents[1]  # the fxstudio package


class Net(nn.Module):
    """Conv, batch norm, dropout, a residual add, a linear head: every kind the accessors meet."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 8 * 8, 5))
        self.register_buffer("scale", torch.full((5,), 2.0))

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        y = self.drop(y) + y
        return self.head(y) * self.scale


class Hidden:
    """A view of ``obj`` without the attribute ``name``: what a torch release that dropped that
    private offers. Everything else reads through to ``obj``; it compares equal to ``obj``."""

    def __init__(self, obj, name: str):
        self.hidden_obj, self.hidden_attr = obj, name

    def __getattr__(self, attr):
        if attr == self.hidden_attr:
            raise AttributeError(attr)
        return getattr(self.hidden_obj, attr)

    def __eq__(self, other):
        return other is self.hidden_obj or other is self

    def __hash__(self):
        return hash(self.hidden_obj)


@pytest.fixture
def gm() -> torch.fx.GraphModule:
    torch.manual_seed(0)
    return torch.fx.symbolic_trace(Net().eval())


def test_graph_namespace_fallbacks(gm):
    graph = gm.graph
    public = Hidden(graph, "_graph_namespace")
    live = {n.name for n in graph.nodes}
    assert fx_compat.used_names(public) == live <= fx_compat.used_names(graph)
    assert fx_compat.namespace_snapshot(public) == (live, {})
    fx_compat.namespace_restore(public, (set(), {}))  # nothing to restore: no error
    fx_compat.reserve_names(public, ["taken"])
    assert "taken" not in fx_compat.used_names(graph)
    fx_compat.reserve_names(graph, ["taken"])
    assert "taken" in fx_compat.used_names(graph)
    node = next(n for n in graph.nodes if n.op == "call_module")
    node.name = "renamed_conv"
    fx_compat.rename_in_namespace(public, node, "renamed_conv")  # falls back to reserve_names
    fx_compat.rename_in_namespace(graph, node, "renamed_conv")
    assert "renamed_conv" in fx_compat.used_names(graph)
    saved = fx_compat.namespace_snapshot(graph)
    graph.create_node("call_function", torch.relu, (node,), name="extra")
    fx_compat.namespace_restore(graph, saved)
    assert fx_compat.namespace_snapshot(graph) == saved


def test_node_fallbacks(gm):
    for node in gm.graph.nodes:
        assert list(fx_compat.node_input_nodes(Hidden(node, "_input_nodes"))) == list(fx_compat.node_input_nodes(node))
        assert fx_compat.node_args(Hidden(node, "_args")) is fx_compat.node_args(node)
        assert fx_compat.node_kwargs(Hidden(node, "_kwargs")) is fx_compat.node_kwargs(node)
        assert fx_compat.node_erased(Hidden(node, "_erased")) is fx_compat.node_erased(node) is False
    dead = gm.graph.create_node("call_function", torch.relu, (next(iter(gm.graph.nodes)),))
    gm.graph.erase_node(dead)
    assert fx_compat.node_erased(Hidden(dead, "_erased")) is fx_compat.node_erased(dead) is True


def test_codegen_fallbacks_take_the_full_regeneration_path(gm, monkeypatch):
    graph = gm.graph
    codegen = fx_compat.graph_codegen(graph)
    assert fx_compat.is_standard_codegen(codegen)
    assert fx_compat.graph_codegen(Hidden(graph, "_codegen")) is None
    assert not fx_compat.is_standard_codegen(None)
    assert not fx_compat.is_standard_codegen(Hidden(codegen, "_body_transformer"))
    scratch = torch.fx.Graph()
    fx_compat.set_graph_codegen(scratch, codegen)
    assert fx_compat.graph_codegen(scratch) is codegen
    pc = graph.python_code(root_module="self")
    start, lines = fx_compat.code_line_map(pc)
    assert start == pc._prologue_start and lines is pc._lineno_map
    assert fx_compat.code_line_map(Hidden(pc, "_lineno_map")) is None
    assert fx_compat.code_line_map(Hidden(pc, "_prologue_start")) is None

    fast = IncrementalCode()
    text = fast.full(graph)
    assert fast.incremental
    monkeypatch.setattr(fx_compat, "code_line_map", lambda _pc: None)
    slow = IncrementalCode()
    assert slow.full(graph) == text == pc.src  # the full generation still gives the same code
    assert not slow.incremental and slow.reason
    assert slow.update(graph, list(graph.nodes)[1:2]) is None  # the caller regenerates (recompiles)
    gm.recompile()
    assert gm.code.strip() == text.strip()


def user_fn(x):
    """A user function, named by module and qualified name alike by fx and by Python."""
    return x


def test_qualified_name_fallback(monkeypatch):
    fns = [F.relu, F.gelu, user_fn, torch.nn.init.zeros_]
    fast = [fx_compat.qualified_name(fn) for fn in fns]
    monkeypatch.setattr(fx_compat, "_get_qualified_name", None)
    assert [fx_compat.qualified_name(fn) for fn in fns] == fast
    # The fallback is Python's own name: fx's special cases (operator for _operator) are lost.
    assert fx_compat.qualified_name(operator.add) == "_operator.add"


def test_graph_module_state_fallbacks(gm, monkeypatch):
    assert fx_compat.deepcopy_init(Hidden(gm, "_deepcopy_init")) is torch.fx.GraphModule.__init__
    assert fx_compat.deepcopy_init(gm) is torch.fx.GraphModule.__init__
    fast = torch.fx.GraphModule(fx_compat.code_only_module(dict(gm.__dict__)), copy.deepcopy(gm.graph))
    monkeypatch.setattr(fx_compat, "_CodeOnlyModule", None)  # GraphModule itself still needs torch's
    root = fx_compat.code_only_module(dict(gm.__dict__))
    assert type(root).__name__ == "_PlainCodeOnlyModule"
    slow = torch.fx.GraphModule(root, copy.deepcopy(gm.graph))
    assert dict(slow.named_children()).keys() == dict(fast.named_children()).keys()
    assert all(a is b for a, b in zip(slow.parameters(), fast.parameters()))
    assert slow.code == fast.code
    x = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(slow(x), fast(x))


def _relu_to_gelu(graph: torch.fx.Graph) -> None:
    for node in graph.nodes:
        if node.target is F.relu:
            node.target, node.kwargs = F.gelu, {}


@pytest.mark.parametrize("lazy", [True, False])
def test_own_class_defers_compiling_and_hands_its_code_over(gm, monkeypatch, lazy):
    if not lazy:
        monkeypatch.setattr(fx_compat, "_LazyGraphModule", None)
    x = torch.randn(2, 3, 8, 8)
    expected = gm(x)
    work = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    cls, deferred = fx_compat.own_graph_module_class(work)
    assert deferred is lazy and cls is not type(work) and issubclass(cls, torch.fx.GraphModule)
    work.__class__ = cls
    _relu_to_gelu(work.graph)
    work.recompile()  # deferred: only marks the code stale; otherwise compiles at once
    assert (fx_compat.compiled_code(work) is None) is lazy
    assert "gelu" in work.code and "gelu" not in gm.code  # .code compiles a deferred one; gm keeps its own
    assert not torch.equal(work(x), expected)
    torch.testing.assert_close(gm(x), expected)
    work.graph.erase_node(next(n for n in work.graph.nodes if n.op == "output"))
    work.graph.output(next(n for n in work.graph.nodes if n.target is F.gelu))
    work.recompile()
    fx_compat.compile_now(work)  # compiles now whatever the class
    code = fx_compat.compiled_code(work)
    assert code is not None and work.code.strip().endswith("return relu")  # the gelu node, named relu
    # Handing the code to another module over that very graph: no recompile, the same forward.
    target = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    target.__dict__["_graph"] = work.graph
    fx_compat.install_code(target, code)
    assert target.code == work.code and type(target).forward is type(work).forward
    torch.testing.assert_close(target(x), work(x))
    # Fallback: no code to hand over (or a class compiling its own way): recompile.
    other = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    other.__dict__["_graph"] = work.graph
    fx_compat.install_code(other, None)
    assert other.code == work.code and type(other).forward is not type(work).forward


def test_module_dict_fallbacks(gm):
    for m in gm.modules():
        assert fx_compat.module_children(Hidden(m, "_modules")) == dict(fx_compat.module_children(m))
        assert fx_compat.module_parameters(Hidden(m, "_parameters")) == dict(fx_compat.module_parameters(m))
        assert fx_compat.module_buffers(Hidden(m, "_buffers")) == dict(fx_compat.module_buffers(m))
    bn = gm.bn
    x = torch.randn(2, 4, 8, 8)
    assert fx_compat.batch_norm_input_check(bn)(x) is None
    assert fx_compat.batch_norm_input_check(Hidden(bn, "_check_input_dim"))(x) is None
    with pytest.raises(ValueError):
        fx_compat.batch_norm_input_check(bn)(torch.randn(4))


def test_global_hooks_fallback_is_conservative(monkeypatch):
    assert fx_compat.global_module_hooks() is False
    monkeypatch.delattr(torch.nn.modules.module, "_global_forward_hooks")
    assert fx_compat.global_module_hooks() is True  # module calls are then kept as they are


def test_layer_class_fallbacks(gm, monkeypatch):
    dropout = fx_compat._base_class((nn.Dropout, nn.Dropout2d), "_NoSuchClass", "torch.nn.modules.dropout")
    assert dropout == (nn.Dropout, nn.Dropout2d)
    monkeypatch.delattr(torch.nn.modules.batchnorm, "_NormBase")
    norm = fx_compat._base_class((nn.BatchNorm2d,), "_NormBase", "torch.nn.modules.batchnorm")
    assert norm == (nn.BatchNorm2d,)
    monkeypatch.undo()
    for m in gm.modules():
        assert isinstance(m, fx_compat.DROPOUT_CLASSES) == isinstance(m, nn.modules.dropout._DropoutNd)
        assert isinstance(m, fx_compat.NORM_CLASSES) == isinstance(m, nn.modules.batchnorm._NormBase)


def test_operator_fallbacks(monkeypatch):
    ops = [torch.ops.aten.add.Tensor, torch.ops.aten.relu.default, torch.ops.aten.convolution.default]
    for op in ops:
        assert fx_compat.op_schema(Hidden(op, "_schema")) is None
        assert fx_compat.op_base_name(Hidden(op, "_schema")) == fx_compat.op_base_name(op) == op._schema.name.split("::")[1]
        assert fx_compat.op_overload_name(Hidden(op, "_overloadname")) == fx_compat.op_overload_name(op)
    for packet in (torch.ops.aten.add, torch.ops.aten.relu, torch.ops.aten.convolution):
        assert fx_compat.packet_qualified_name(Hidden(packet, "_qualified_op_name")) == fx_compat.packet_qualified_name(packet)
    assert fx_compat.OpOverload is type(torch.ops.aten.add.Tensor)
    assert fx_compat.OpOverloadPacket is type(torch.ops.aten.add)
    assert fx_compat.OP_TYPES == (fx_compat.OpOverload, fx_compat.OpOverloadPacket)
    for name, public in [("OpOverload", lambda: type(torch.ops.aten.add.Tensor)),
                         ("OpOverloadPacket", lambda: type(torch.ops.aten.add)),
                         ("HigherOrderOperator", lambda: type(torch.ops.higher_order.cond).__mro__[1])]:
        fast = fx_compat._op_type(name, public)
        with monkeypatch.context() as m:
            m.delattr(torch._ops, name)
            assert fx_compat._op_type(name, public) is fast
    assert torch.Tensor.__mro__[1] is fx_compat.TENSOR_BASE


def test_pytree_fallbacks(monkeypatch):
    value = ((torch.ones(2), [torch.zeros(1), 3]), {"a": torch.full((1,), 5.0), "b": None})
    fast_leaves = fx_compat.tree_leaves(value)
    fast_map = fx_compat.tree_map(lambda v: v * 2 if isinstance(v, torch.Tensor) else v, value)
    import torch.utils._pytree as pytree

    leaves, spec = pytree.tree_flatten(value)
    fast_tree = fx_compat.tree_unflatten(leaves, spec)
    monkeypatch.setattr(fx_compat, "_pytree", None)
    assert [id(v) for v in fx_compat.tree_leaves(value)] == [id(v) for v in fast_leaves]
    slow_map = fx_compat.tree_map(lambda v: v * 2 if isinstance(v, torch.Tensor) else v, value)
    torch.testing.assert_close(slow_map, fast_map)
    assert type(slow_map[0][1]) is list and type(slow_map[1]) is dict
    assert fx_compat.tree_unflatten(leaves, spec) == fast_tree


def test_tensor_metadata_fallback(monkeypatch):
    tensors = [torch.randn(2, 3), torch.randn(1, 3, 4, 4).to(memory_format=torch.channels_last),
               torch.randn(3, requires_grad=True), torch.randn(4, 4).t(), torch.zeros(())]
    fast = [fx_compat.extract_tensor_metadata(t) for t in tensors]
    monkeypatch.setattr(fx_compat, "_extract_tensor_metadata", None)
    assert [fx_compat.extract_tensor_metadata(t) for t in tensors] == fast


def test_without_fake_tensors_shapes_come_from_a_real_run(gm, monkeypatch):
    x = torch.randn(2, 3, 8, 8)
    notes: list[str] = []
    assert propagate_shapes(gm, (x,), notes) == "fake"
    fast = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}

    def missing(**_options):
        raise ImportError("no torch._subclasses")

    monkeypatch.setattr(fx_compat, "fake_tensor_mode", missing)
    assert propagate_shapes(gm, (x,), notes) == "real"
    slow = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}
    assert {k: (v.shape, v.dtype) for k, v in slow.items() if v is not None} == \
        {k: (v.shape, v.dtype) for k, v in fast.items() if v is not None}


def test_reparametrized_fallback(gm, monkeypatch):
    x = torch.randn(2, 3, 8, 8)
    new = {name: torch.zeros_like(t) for name, t in gm.named_parameters()}
    before = {name: t for name, t in gm.named_parameters()}
    with fx_compat.reparametrized(gm, new):
        fast = gm(x)
    monkeypatch.delattr(torch.nn.utils.stateless, "_reparametrize_module")
    with fx_compat.reparametrized(gm, new):
        assert all(p is new[name] for name, p in gm.named_parameters())
        slow = gm(x)
    assert all(p is before[name] for name, p in gm.named_parameters())
    torch.testing.assert_close(slow, fast)


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> bytes:
    ep = torch.export.export(nn.Sequential(nn.Linear(3, 2), nn.ReLU()).eval(), (torch.randn(4, 3),))
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    return buf.getvalue()


def test_pt2_reader_fallback_is_the_public_reader(archive, monkeypatch):
    fast = fx_compat.pt2_archive_reader(io.BytesIO(archive))
    import torch.export.pt2_archive._package as package

    monkeypatch.delattr(package, "PT2ArchiveReader")
    slow = fx_compat.pt2_archive_reader(io.BytesIO(archive))
    assert type(slow) is type(fast) and slow.get_file_names() == fast.get_file_names()


def test_archive_internals_without_fallback_refuse(tmp_path, archive, monkeypatch):
    from fxstudio.core.errors import LoadError
    from fxstudio.core.loading import load_model
    import torch._export.serde.serialize as serialize

    path = tmp_path / "tiny.pt2"
    path.write_bytes(archive)
    assert load_model(path).graph_module is not None
    # A program fxstudio's own reader leaves to torch (issue #28): a symbolic batch size.
    dynamic = tmp_path / "dynamic.pt2"
    batch = torch.export.Dim("batch", min=2, max=64)
    torch.export.save(torch.export.export(nn.Linear(3, 2), (torch.randn(4, 3),), dynamic_shapes=({0: batch},)),
                      dynamic)
    monkeypatch.delattr(serialize, "ExportedProgramDeserializer")
    with pytest.raises(ImportError):
        fx_compat.deserialize_program({}, {}, {}, None)
    with pytest.raises(LoadError):
        load_model(dynamic)
    assert load_model(path).exported_program is None  # the editable open needs no deserializer


# ----------------------------------------------------------------------------- one door

# Attribute names that are torch privates whatever object they are read on (the receiver of
# ``x._name`` is not known statically, so these are checked by name). Private module paths
# (``torch._ops``, ``torch.utils._pytree``) are caught as ``torch...._x`` chains instead.
TORCH_PRIVATE_ATTRS = {
    "_graph_namespace", "_used_names", "_base_count", "_rename_object", "_codegen", "_gen_python_code",
    "_body_transformer", "_lineno_map", "_prologue_start", "_input_nodes", "_args", "_kwargs", "_erased",
    "_modules", "_parameters", "_buffers", "_schema", "_overloadname", "_qualified_op_name", "_deepcopy_init",
    "_check_input_dim", "_get_qualified_name", "_extract_tensor_metadata", "_CodeOnlyModule", "_DropoutNd", "_NormBase",
    "_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks", "_global_backward_pre_hooks",
    "_get_tracing_state", "_reparametrize_module", "_bytes_to_dataclass",
}
# Private-looking names that are not torch's: ``sys._getframe`` (the caller's frame), the namedtuple
# API (``_fields``), and ATen operator names under ``torch.ops.aten`` (``_softmax``, ``_unsafe_view``:
# operators of the public ``torch.ops`` namespace whose names start with ``_``).
ALLOWED_ATTRS = {"_getframe", "_fields", "_asdict", "_replace", "_make", "_exit"}  # _exit: os._exit, stdlib API
# Strings are not checked: generated code (export/codegen.py's ``_attach``/``_tie`` helpers read
# ``nn.Module._modules``/``_parameters``/``_buffers`` in the user's exported file; the pytree import
# lines mirror fx's own custom builtins and are written only if forward code names them, which a
# plain forward never does), logger names and the trust allow-list of torch module names. Nor are
# string keys into a module's ``__dict__`` (``vars(m)["_parameters"]`` in compare/module_inline.py,
# the ``_modules``/``_parameters``/``_buffers`` tables that edits/whole_graph.py, passes/runner.py and
# module_state.py snapshot): they read the instance dict by design, below ``nn.Module.__getattr__``.


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_names(trees) -> set[str]:
    names: set[str] = set()
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                names.add(n.attr)
            elif isinstance(n, ast.arg):
                names.add(n.arg)
    return names


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def torch_privates(tree: ast.AST, own_names: set[str]) -> list[str]:
    """The torch privates a module's AST names: imports of private torch modules or names,
    ``torch._x`` paths, and ``x._name`` reads of a known torch private or of a name fxstudio
    itself never defines (a read of somebody else's private)."""
    found = []
    torch_aliases = {"torch"}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name.split(".")[0] == "torch":
                    torch_aliases.add((a.asname or a.name).split(".")[0])
                    if any(_private(p) for p in a.name.split(".")):
                        found.append(f"{n.lineno}: import {a.name}")
        elif isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "torch":
            if any(_private(p) for p in n.module.split(".")):
                found.append(f"{n.lineno}: from {n.module} import ...")
            for a in n.names:
                torch_aliases.add(a.asname or a.name)
                if _private(a.name):
                    found.append(f"{n.lineno}: from {n.module} import {a.name}")
        elif isinstance(n, ast.Attribute) and _private(n.attr) and n.attr not in ALLOWED_ATTRS:
            path = _dotted(n)
            if path and len(path) == 4 and path[:2] == ["torch", "ops"]:
                continue  # torch.ops.<namespace>._operator: an ATen operator's name
            on_torch = path is not None and path[0] in torch_aliases
            if on_torch or n.attr in TORCH_PRIVATE_ATTRS or n.attr not in own_names:
                found.append(f"{n.lineno}: .{n.attr}")
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr", "setattr")
              and len(n.args) > 1 and isinstance(n.args[1], ast.Constant) and n.args[1].value in TORCH_PRIVATE_ATTRS):
            found.append(f"{n.lineno}: {n.func.id}(..., {n.args[1].value!r})")
    return found


def test_no_module_but_fx_compat_names_a_torch_private():
    files = sorted(p for p in ROOT.rglob("*.py") if p.name not in ("fx_compat.py", "fx_compat_export.py", "fx_compat_dynamo.py", "fx_compat_names.py", "fx_compat_modules.py", "fx_compat_compile.py"))
    trees = {p: ast.parse(p.read_text(), str(p)) for p in files}
    own = _defined_names(trees.values()) - TORCH_PRIVATE_ATTRS
    bad = {str(p.relative_to(ROOT.parent)): hits for p, tree in trees.items() if (hits := torch_privates(tree, own))}
    assert not bad, f"go through fxstudio.core.fx_compat: {bad}"


def test_the_check_sees_each_kind_of_private():
    source = """
import torch.utils._pytree as pytree
from torch.fx.graph_module import _CodeOnlyModule
from torch._subclasses.fake_tensor import FakeTensorMode
import torch
x = torch._ops.OpOverload
y = node._input_nodes
z = getattr(target, "_schema", None)
w = torch.ops.aten._softmax.default
"""
    hits = torch_privates(ast.parse(source), set())
    assert len(hits) == 6, hits
    assert not any(".aten" in h or "_softmax" in h for h in hits)
