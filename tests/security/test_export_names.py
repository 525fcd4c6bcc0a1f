"""Names become code in an export only after they are checked: node names, attribute and submodule
paths, method names, the header's edit labels. A graph carrying a name that would splice code into
the exported file (or into torch.fx's own forward) is refused before anything runs or is written."""

from __future__ import annotations

import ast

import pytest
import torch
import torch.fx
from hypothesis import given, settings
from hypothesis import strategies as st

from fxstudio.core.code_names import UnsafeNameError, is_attribute_path
from fxstudio.core.export import export_python
from fxstudio.core.export.codegen import comment_text, generate_file, quoted
from fxstudio.core.model import LoadedModel
from fxstudio.resources import example_path


def _graph_reading(attr: str) -> torch.fx.GraphModule:
    """``forward(x) = x + <buffer attr>``: a get_attr node whose target is ``attr``."""
    root = torch.nn.Module()
    root._buffers[attr] = torch.ones(3)  # register_buffer would refuse nothing here either
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.add, (x, graph.get_attr(attr))))
    return torch.fx.GraphModule(root, graph)


def _loaded(gm: torch.fx.GraphModule) -> LoadedModel:
    return LoadedModel(path=None, kind="pt2", module=gm, graph_module=gm, example_inputs=(torch.zeros(3),),
                       tracer="export")


def test_an_injecting_attribute_path_is_refused_before_it_runs(hostile):
    # torch.fx writes this target as getattr(self, "<target>"): the quotes make it a call of exec.
    code = list(hostile.payload.encode())  # torch.fx splits targets at dots: spell the payload without any
    attr = f'b") if exec(bytes({code})) else getattr(self, "b'
    with pytest.raises(UnsafeNameError, match="not an attribute path"):  # the code-name guard (fx_compat)
        _graph_reading(attr)
    hostile.assert_clean()
    assert sorted(p.name for p in hostile.dir.iterdir()) == [], "something was written"
    # Without the guard, torch.fx's own code generation runs the payload when the graph runs.
    unguarded = torch.fx.Graph.python_code.__wrapped__
    torch.fx.Graph.python_code, guarded = unguarded, torch.fx.Graph.python_code
    try:
        gm = _graph_reading(attr)
    finally:
        torch.fx.Graph.python_code = guarded
    with pytest.raises(UnsafeNameError, match="not an attribute path"):
        export_python(_loaded(gm), hostile.dir / "exported.py")
    hostile.assert_clean()
    with pytest.raises(AttributeError):  # running the graph does run the payload: the name really injects
        gm.forward(torch.zeros(3))
    assert hostile.marker.exists()


@pytest.mark.parametrize("op,target", [("call_method", "relu(); import os; os.getcwd"),
                                       ("call_module", 'sub")(x); exec("1'),
                                       ("get_attr", 'w"); import os; print("')])
def test_targets_and_methods_must_be_identifier_paths(tmp_path, op, target):
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    node = graph.create_node(op, target, (x,) if op != "get_attr" else ())
    graph.output(node)
    root = torch.nn.Module()
    if op == "call_module":
        root._modules[target] = torch.nn.ReLU()
    elif op == "get_attr":
        root._buffers[target] = torch.ones(1)
    with pytest.raises(UnsafeNameError):  # the code-name guard refuses torch.fx's own code generation
        torch.fx.GraphModule(root, graph)
    gm = torch.fx.GraphModule(root, torch.fx.Graph())
    gm._graph = graph  # installed without code generation: the export's own check refuses it as well
    with pytest.raises(UnsafeNameError):
        generate_file(gm, class_name="M", weights_name="m.weights.pt", header=[], example_inputs=(torch.zeros(1),))


def test_a_renamed_node_that_is_code_is_refused_by_the_cli(hostile):
    script = hostile.script([{"op": "rename", "node": "add", "name": f"x = 1; {hostile.payload} #"}])
    out = hostile.dir / "renamed.py"
    proc = hostile.run("apply", example_path("add_mul.py"), script, "-o", out)
    hostile.assert_clean(proc)
    assert proc.returncode in (1, 2) and not out.exists()


def test_header_lines_stay_comments(hostile):
    """An edit label with line breaks (e.g. a triple-quoted string typed as a value) stays in its comment."""
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    label = f"set relu[0] = '''\n{hostile.payload}\r\n'''\u2028end"
    generated = generate_file(gm, class_name="M", weights_name="m.weights.pt", header=["Edits:", label],
                              example_inputs=(torch.zeros(2),))
    lines = generated.source.splitlines()
    docstring = next(i for i, line in enumerate(lines) if line.startswith('"""'))
    assert all(line.startswith("#") for line in lines[:docstring])
    assert hostile.payload not in "\n".join(lines[docstring:])
    namespace: dict = {}
    exec(compile(generated.source, "m.py", "exec"), namespace)  # noqa: S102 - the generated file, as a user imports it
    hostile.assert_clean()


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_quoted_text_reads_back_and_comments_hold_no_code(text):
    try:
        literal = quoted(text)
    except Exception:  # noqa: BLE001 - refusing (lone surrogates) is allowed, splicing is not
        literal = None
    if literal is not None:
        assert ast.literal_eval(literal) == text
        assert "\n" not in literal and "\r" not in literal
    comment = "#" + comment_text(text)
    assert ast.parse(comment).body == [] and len(comment.splitlines()) == 1


@pytest.mark.parametrize("text,ok", [("layer1.0.conv1.weight", True), ("lin", True), ("0", True),
                                     ("", False), ("a..b", False), ("a.", False), ('a"b', False),
                                     ("a b", False), ("a.class", False), ("é", False), ("a\n", False)])
def test_attribute_path_rule(text, ok):
    assert is_attribute_path(text) is ok
