"""The text of an exported model file: imports, the module class, ``get_model`` and ``example_inputs``.

``forward`` is FX's own code generation for the (edited) graph, which already keeps local names
clear of keywords, builtins and globals; around it this module writes the imports for every global
the code uses, rebuilds the submodules the graph calls (``export_modules``), declares the
parameters, buffers and tensor constants it reads, and collects their values for the weights file.
aten graphs from ``torch.export`` get a plain ``forward``: the pytree flatten/unflatten plumbing of
``ExportedProgram.module()`` is replaced by the positional inputs and a literal output structure.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import keyword
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch import nn

from fxstudio.core import fx_compat
from fxstudio.core.code_names import check_attribute_path, check_identifier, check_node_code_names, is_identifier
from fxstudio.core.errors import ExportError
from fxstudio.core.export.modules import ImportNamer, constructor_expression, literal
from fxstudio.core.export.names import names_block
from fxstudio.core.export.outputs import build_outputs, check_inputs, header_lines, import_lines

# Names the generated file defines itself; globals of the forward code must not take them.
FIXED_NAMES = {"torch", "nn", "Path", "get_model", "example_inputs", "WEIGHTS_FILE", "_attach", "_tie",
               "FXSTUDIO_NODE_NAMES", "FXSTUDIO_GRAPH_SIGNATURE"}
_CUSTOM_BUILTIN_IMPORTS = {
    "inf": "from math import inf",
    "nan": "from math import nan",
    "NoneType": "NoneType = type(None)",
    "device": "from torch import device",
    "fx_pytree": "import torch.fx._pytree as fx_pytree",
    "pytree": "import torch.utils._pytree as pytree",
}
_NOT_WRAPPED_MODULES = ("torch", "math", "operator", "builtins", "_operator")
_FREE_STATEMENT = re.compile(r";  [A-Za-z_]\w*(?: = [A-Za-z_]\w*)* = None$")
_CONSTANT_NAME = re.compile(r"(^|\.)(_tensor_constant\d+|lifted_tensor_\d+|_frozen_param\d+)$")


def quoted(text: str) -> str:
    """``text`` as a Python string literal, checked to read back as ``text`` (names never splice into code)."""
    if not isinstance(text, str):
        raise ExportError(f"internal: {text!r} is not a string")
    literal_text = json.dumps(text)  # double quotes, every quote, backslash and control character escaped
    if ast.literal_eval(literal_text) != text:
        raise ExportError(f"internal: cannot write {literal_text} as a string literal")
    return literal_text


def comment_text(text: str) -> str:
    """``text`` for a ``#`` comment: line breaks and other control characters escaped, so it stays one comment."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def check_graph_names(graph: torch.fx.Graph) -> None:
    """Refuse a graph whose names torch.fx would write into code unchecked: node names, keyword names,
    attribute and submodule paths (``get_attr``/``call_module``) and method names (``call_method``)."""
    for node in graph.nodes:
        check_node_code_names(node)  # the rule torch.fx's own code needs (keyword names included)
        if node.op in ("get_attr", "call_module"):
            check_attribute_path(node.target, f"the {node.op} target of node {node.name}")
        elif node.op == "call_method":
            check_identifier(node.target, f"the method name of node {node.name}")

ATTACH_HELPER = '''
def _attach(root: nn.Module, path: str, value) -> None:
    """Set ``root.<path> = value``, creating empty container modules along the dotted path."""
    *parents, name = path.split(".")
    for part in parents:
        if part not in root._modules:
            root.add_module(part, nn.Module())
        root = root._modules[part]
    if isinstance(value, nn.Parameter):
        root.register_parameter(name, value)
    elif isinstance(value, torch.Tensor):
        root.register_buffer(name, value)
    else:
        root.add_module(name, value)
'''


@dataclass
class OriginalEntry:
    """The model file's entry (``Custom``, ``get_model`` or a ``model`` instance), from which the
    exported file takes submodules that cannot be rebuilt from their configuration."""

    name: str
    called: bool  # a class or factory, called with no arguments (else a module-level instance)
    module: nn.Module  # the original as loaded: paths and structure are checked against it


@dataclass
class GeneratedFile:
    """An exported model file's source and the tensors its weights file holds."""

    source: str
    weights: dict[str, torch.Tensor]
    class_name: str
    requirements: list[str] = field(default_factory=list)


def plain_graph(gm: torch.fx.GraphModule, classes: dict | None = None) -> torch.fx.Graph:
    """A copy of ``gm.graph`` with plain positional inputs and a literal output structure
    (``outputs``; ``classes`` collects the dict-like output classes it calls).

    Drops the input-guard call of ``ExportedProgram.module()`` and undoes its pytree codegen.
    """
    classes = {} if classes is None else classes
    graph = torch.fx.Graph()
    output = graph.graph_copy(gm.graph, {})
    for node in list(graph.nodes):
        if node.op == "call_module" and node.target == "_guards_fn" and not node.users:
            graph.erase_node(node)
    codegen = fx_compat.graph_codegen(gm.graph)
    info = getattr(codegen, "pytree_info", None)
    if info is not None:
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        if info.in_spec is not None:
            check_inputs(info.in_spec, len(placeholders))
        if info.out_spec is not None:
            flat = list(output) if isinstance(output, (tuple, list)) else [output]
            output = build_outputs(graph, flat, info.out_spec, classes)
            _check_output_structure(output)
    graph.output(output)
    graph.lint()
    return graph


def _check_output_structure(value: Any) -> None:
    if isinstance(value, (tuple, list)) and type(value) in (tuple, list):
        for v in value:
            _check_output_structure(v)
    elif type(value) is dict:
        for v in value.values():
            _check_output_structure(v)
    elif not isinstance(value, (torch.fx.Node, int, float, bool, str, type(None))):
        raise ExportError(
            f"cannot export this graph: its output contains a {type(value).__name__}; only tuples, "
            "lists, dicts, tensors and plain values are written as a literal output structure."
        )


def _rename_tokens(src: str, mapping: dict[str, str]) -> str:
    """``src`` with every NAME token in ``mapping`` replaced (strings and attributes untouched)."""
    if not mapping:
        return src
    lines = src.splitlines(keepends=True)
    spots = []
    prev = None
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.NAME and tok.string in mapping and not (prev and prev.string == "."):
            spots.append((tok.start, tok.string))
        prev = tok
    for (row, col), old in reversed(spots):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + mapping[old] + line[col + len(old):]
    return "".join(lines)


def _tidy_keywords(src: str) -> str:
    """``f(x, dim = 1)`` as FX prints keyword arguments, written ``f(x, dim=1)`` (PEP 8)."""
    lines = src.splitlines(keepends=True)
    spots: list[tuple[int, int]] = []
    depth, prev = 0, None
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.OP and tok.string == "=" and depth > 0 and prev is not None and prev.type == tokenize.NAME:
            row, col = tok.start
            line = lines[row - 1]
            if line[col - 1 : col] == " " and line[col + 1 : col + 2] == " ":
                spots.append((row, col))
        prev = tok
    for row, col in reversed(spots):
        line = lines[row - 1]
        lines[row - 1] = line[: col - 1] + "=" + line[col + 2 :]
    return "".join(lines)


def _names_in(src: str) -> set[str]:
    return {t.string for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.NAME}


def _clean_forward(src: str) -> str:
    """The ``def forward`` part of FX's code, without ``wrap()`` calls and ``x = None`` frees."""
    start = src.index("def forward(")
    lines = []
    for line in src[start:].rstrip().splitlines():
        line = _FREE_STATEMENT.sub("", line.rstrip())
        lines.append(line)
    return "\n".join(lines)


def _tensor_decl(value: torch.Tensor) -> str:
    shape = ", ".join(str(d) for d in value.shape) or "()"
    dtype = "" if value.dtype == torch.float32 else f", dtype={value.dtype}"
    return f"torch.empty({shape}{dtype})"


def _owner_has(gm: torch.nn.Module, target: str, kind: str) -> bool:
    owner_path, _, name = target.rpartition(".")
    try:
        owner = gm.get_submodule(owner_path) if owner_path else gm
    except AttributeError:
        return False
    return name in getattr(owner, kind)


def _get_attr(gm: torch.nn.Module, target: str) -> Any:
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _covered(path: str, module_paths: set[str]) -> str | None:
    """The rebuilt module (if any) that ``path`` lies inside."""
    parts = path.split(".")
    return next((p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in module_paths), None)


def _assign(path: str, expr: str) -> str:
    if "." not in path and path.isidentifier() and not keyword.iskeyword(path):
        return f"self.{path} = {expr}"
    return f"_attach(self, {quoted(path)}, {expr})"


def _input_expr(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        shape = ", ".join(str(d) for d in value.shape) or "()"
        if value.dtype.is_floating_point or value.dtype.is_complex:
            dtype = "" if value.dtype == torch.float32 else f", dtype={value.dtype}"
            return f"torch.randn({shape}{dtype})"
        return f"torch.zeros({shape}, dtype={value.dtype})"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_input_expr(v) for v in value)
        if isinstance(value, tuple):
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_input_expr(v)}" for k, v in value.items()) + "}"
    try:
        return literal(value)
    except TypeError:
        raise ExportError(f"cannot write an example input of type {type(value).__name__}") from None


EXAMPLE_INPUTS_KEY = "#example_inputs"
"""The weights file's entry holding the example inputs (not a state-dict path: no weight can have it)."""


def stored_inputs(inputs: tuple) -> tuple | None:
    """Detached copies of ``inputs`` to store in the weights file; None when a value is not a tensor,
    a plain value or a tuple/list/dict of those (``torch.load(weights_only=True)`` reads no other)."""
    def copy(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.detach().cpu().clone()
        if type(value) in (tuple, list):
            return type(value)(copy(v) for v in value)
        if type(value) is dict and all(isinstance(k, (str, int)) for k in value):
            return {k: copy(v) for k, v in value.items()}
        if value is None or type(value) in (bool, int, float, str):
            return value
        raise TypeError(type(value).__name__)

    try:
        return tuple(copy(v) for v in inputs)
    except TypeError:
        return None


def generate_file(
    gm: torch.fx.GraphModule,
    *,
    class_name: str,
    weights_name: str,
    header: list[str],
    example_inputs: tuple,
    user_module: Any = None,
    user_import: str | None = None,
    record_names: bool = False,
    original: OriginalEntry | None = None,
) -> GeneratedFile:
    """Generate the exported file for ``gm`` (see the module docstring)."""
    classes: dict = {}
    graph = plain_graph(gm, classes)
    check_graph_names(graph)  # before torch.fx writes any of them into code
    code = graph.python_code(root_module="self")
    forward = _clean_forward(code.src)

    renames = {n: f"{n}_fn" for n in code.globals if n in FIXED_NAMES - {"torch"} and n in _names_in(forward)}
    namer = ImportNamer(set(FIXED_NAMES) | set(code.globals) | set(renames.values()), user_module, user_import)
    output_names: dict = {}  # name in the file -> OutputClass, for the guarded imports
    local_names = _names_in(forward)
    for name, obj in code.globals.items():
        if obj in classes and name in local_names:
            base = obj.__name__
            while base in local_names:
                base += "_"
            renames[name] = namer.claim(base)
            output_names[renames[name]] = classes[obj]
    forward = _tidy_keywords(_rename_tokens(forward, renames)).rstrip()
    used = _names_in(forward)
    module_level: list[str] = []
    wrapped: list[str] = []
    for name, obj in code.globals.items():
        name = renames.get(name, name)
        if name not in used or obj is torch.fx.wrap or name in output_names:
            continue
        if name == "torch":
            continue
        if name in _CUSTOM_BUILTIN_IMPORTS:
            line = _CUSTOM_BUILTIN_IMPORTS[name]
            if line.startswith(("import ", "from ")):
                namer.lines[line] = None
            else:
                module_level.append(line)
            continue
        if getattr(builtins, name, None) is obj:
            continue
        namer.reserved.discard(name)
        got = namer.name_for(obj, preferred=name)
        if got != name:
            raise ExportError(f"internal naming conflict for {name} in the exported file")
        if callable(obj) and not isinstance(obj, type) and getattr(obj, "__module__", "").split(".")[0] not in _NOT_WRAPPED_MODULES:
            wrapped.append(name)

    class_name = namer.claim(class_name)
    from fxstudio.core.export.subgraphs import SubgraphWriter, check_higher_order_ops  # they build on this module

    check_higher_order_ops(graph)
    nested = SubgraphWriter(namer, class_name)
    init_lines, weights, needs_attach, tied = _init_body(gm, graph, namer, original, nested)
    needs_attach = needs_attach or nested.needs_attach
    module_level += [line for line in nested.module_level if line not in module_level]
    wrapped += [name for name in nested.wrapped if name not in wrapped]
    called = {n.target for n in graph.nodes if n.op == "call_module"}
    train_lines = [
        f"    model.get_submodule({quoted(path)}).train({m.training})"
        for path, m in gm.named_modules()
        if path in called and m.training != gm.training
    ]

    if namer.user_names and user_import and not is_identifier(user_import):
        raise ExportError(
            f"cannot import {', '.join(namer.user_names)} from the model file {user_import}.py in the exported "
            "file: its name is not a Python identifier. Rename the model file (e.g. my_model.py)."
        )
    requirements = []
    if namer.user_names and user_import:
        requirements.append(
            f"the model file {user_import}.py importable as `{user_import}` (its folder on sys.path or "
            f"PYTHONPATH) for {', '.join(namer.user_names)}"
        )
    for mod in namer.other_modules:
        if mod != user_import:
            requirements.append(f"the module `{mod}` importable")

    header = list(header) + header_lines(output_names)
    out: list[str] = [f"# {comment_text(line)}" if line else "#" for line in header]
    if requirements:
        out.append("#")
        out.append("# Needs at import time: " + comment_text("; ".join(requirements)) + ".")
    out.append('"""A torch.fx graph exported by fxstudio as a plain nn.Module."""')
    out.append("")
    top = lambda line: line.split()[1].split(".")[0]  # noqa: E731
    stdlib = sorted({"from pathlib import Path"} | {x for x in namer.lines if top(x) in ("copy", "math", "operator")})
    torch_lines = ["import torch", "from torch import nn"] + sorted(
        x for x in namer.lines if top(x) == "torch" and x != "from torch import nn"
    )
    others = [x for x in namer.lines if x not in stdlib and x not in torch_lines]
    from_user = [x for x in others if user_import and x.startswith(f"from {user_import} import ")]
    others = [x for x in others if x not in from_user]
    out.extend(stdlib)
    out.append("")
    out.extend(torch_lines)
    if others:
        out.append("")
        out.extend(others)
    if from_user:
        out += ["", "try:", *(f"    {x}" for x in from_user),
                "except ModuleNotFoundError as exc:",
                f"    if exc.name != {quoted(user_import)}:",
                "        raise",
                "    raise ModuleNotFoundError(",
                f'        "this file uses code from {user_import}.py, the model file it was exported from: put the "',
                '        "folder of that file on sys.path (or PYTHONPATH)", name=exc.name',
                "    ) from exc"]
    for name, item in output_names.items():
        out += ["", *import_lines(name, item)]
    out.extend(module_level)
    if wrapped:
        out += ["", "# Keep these calls as single nodes when this file is traced with torch.fx (as in the graph it came from).",
                *(f"torch.fx.wrap({quoted(n)})" for n in wrapped)]
    out += ["", f"WEIGHTS_FILE = {quoted(weights_name)}",
            '"""Parameters, buffers and tensor constants, in the file beside this one."""']
    for helper in ([ATTACH_HELPER] if needs_attach else []) + ([TIE_HELPER] if tied else []):
        out += ["", "", helper.strip("\n")]
    for lines in nested.classes:
        out += ["", "", *lines]
    out += ["", "", f"class {class_name}(nn.Module):",
            '    """The graph as a module; its weights come from WEIGHTS_FILE (see get_model)."""',
            "",
            "    def __init__(self):",
            "        super().__init__()",
            *(f"        {line}" if line else "" for line in init_lines),
            "",
            *("    " + line if line else "" for line in forward.splitlines()),
            "", "", f"def get_model() -> {class_name}:",
            '    """Build the module and load its weights from the file beside this one."""',
            f"    model = {class_name}()",
            "    state = torch.load(Path(__file__).with_name(WEIGHTS_FILE), map_location=\"cpu\", weights_only=True)",
            "    model.load_state_dict(state, assign=True)"]
    if tied:
        out.append("    # One tensor under several names in the source model: tie them again.")
        out.extend(f"    _tie(model, {quoted(name)}, {quoted(same_as)})" for name, same_as in tied)
    stored = stored_inputs(example_inputs)
    if stored is not None:
        weights[EXAMPLE_INPUTS_KEY] = stored
        out.insert(out.index("    model.load_state_dict(state, assign=True)"),
                   f"    state.pop({quoted(EXAMPLE_INPUTS_KEY)}, None)  # the example inputs, not a weight")
    out += [f"    model.train({gm.training})", *train_lines, "    return model",
            "", "", "def example_inputs() -> tuple:"]
    if stored is not None:
        out += ['    """The example inputs the model was opened with (stored in WEIGHTS_FILE)."""',
                "    state = torch.load(Path(__file__).with_name(WEIGHTS_FILE), map_location=\"cpu\", weights_only=True, mmap=True)",
                f"    return tuple(state[{quoted(EXAMPLE_INPUTS_KEY)}])"]
    else:
        out += ['    """Random inputs with the shapes and dtypes of the example inputs the graph was traced with."""',
                f"    return {_input_expr(tuple(example_inputs))}"]
    if record_names:
        out += ["", "", *names_block(gm.graph)]
    source = "\n".join(out) + "\n"
    try:
        compile(source, f"{class_name}.py", "exec")
    except SyntaxError as exc:
        raise ExportError(f"the generated code does not compile (line {exc.lineno}: {exc.msg}); this is a bug in fxstudio's export") from None
    return GeneratedFile(source, weights, class_name, requirements)


def _from_original(module: nn.Module, path: str, namer: ImportNamer, original: OriginalEntry | None,
                   lines: list[str]) -> str | None:
    """``original.get_submodule(path)`` when the original model has that very submodule, else None."""
    if original is None or namer.user_import is None:
        return None
    try:
        there = original.module.get_submodule(path)
    except AttributeError:
        return None
    shapes = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    if type(there) is not type(module) or {k: tuple(v.shape) for k, v in there.state_dict().items()} != shapes:
        return None
    if not any(line.startswith("original = ") for line in lines):
        name = namer.claim(original.name)
        namer.lines[f"from {namer.user_import} import {original.name}" + (f" as {name}" if name != original.name else "")] = None
        if original.name not in namer.user_names:
            namer.user_names.append(original.name)
        lines.insert(0, "# The model as its file builds it: submodules that cannot be rebuilt from their")
        lines.insert(1, "# configuration are taken from it (their weights then come from WEIGHTS_FILE).")
        lines.insert(2, f"original = {name}()" if original.called else f"original = {name}")
    if original.called:
        return f"original.get_submodule({quoted(path)})"
    namer.lines["import copy"] = None
    return f"copy.deepcopy(original.get_submodule({quoted(path)}))"


class _TensorCopies:
    """Detached copies of the weights, one per tensor object: a tensor held under two names (tied
    weights) is stored once in the weights file and tied again by ``get_model``."""

    def __init__(self):
        self._copies: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def of(self, value: torch.Tensor) -> torch.Tensor:
        """The copy of ``value`` (the same copy for the same tensor object)."""
        got = self._copies.get(id(value))
        if got is None:
            got = self._copies[id(value)] = (value, value.detach().clone())  # keeps ``value`` alive: ids stay unique
        return got[1]

    @staticmethod
    def tied(weights: dict[str, torch.Tensor]) -> list[tuple[str, str]]:
        """(name, same_as) for every name whose copy an earlier name already holds."""
        first: dict[int, str] = {}
        out = []
        for name, copy in weights.items():
            if id(copy) in first:
                out.append((name, first[id(copy)]))
            else:
                first[id(copy)] = name
        return out


TIE_HELPER = '''
def _tie(model: nn.Module, name: str, same_as: str) -> None:
    """Make ``name`` the very tensor ``same_as`` is: they were one tensor (tied) in the source model."""
    home, _, key = same_as.rpartition(".")
    source = model.get_submodule(home)
    value = source._parameters[key] if key in source._parameters else source._buffers[key]
    owner, _, attr = name.rpartition(".")
    target = model.get_submodule(owner)
    (target._parameters if attr in target._parameters else target._buffers)[attr] = value
'''


def _init_body(gm: torch.fx.GraphModule, graph: torch.fx.Graph, namer: ImportNamer,
               original: OriginalEntry | None = None, subgraphs: Any = None):
    """Lines of ``__init__`` after ``super().__init__()``, the weights, whether ``_attach`` is used,
    and the tied weights as (name, same_as) pairs. Nested graphs (of higher-order ops) read by
    ``get_attr`` become classes of ``subgraphs`` (a ``subgraphs.SubgraphWriter``)."""
    lines: list[str] = []
    weights: dict[str, torch.Tensor] = {}
    copies = _TensorCopies()
    nested_tied: list[tuple[str, str]] = []
    module_paths: set[str] = set()
    for node in graph.nodes:
        if node.op != "call_module" or node.target in module_paths:
            continue
        if _covered(node.target, module_paths):
            continue
        module = gm.get_submodule(node.target)
        if isinstance(module, torch.fx.GraphModule):
            raise ExportError(
                f"cannot export submodule '{node.target}': it is itself a traced GraphModule; inline it first."
            )
        try:
            expr = constructor_expression(module, node.target, namer)
        except ExportError:
            expr = _from_original(module, node.target, namer, original, lines)
            if expr is None:
                raise
        lines.append(_assign(node.target, expr))
        module_paths.add(node.target)
        for key, value in module.state_dict(keep_vars=True).items():
            weights[f"{node.target}.{key}"] = copies.of(value)
    seen: set[str] = set()
    for node in graph.nodes:
        if node.op != "get_attr" or node.target in seen:
            continue
        seen.add(node.target)
        target = node.target
        owner = _covered(target, module_paths)
        if owner is not None and f"{target}" in weights:
            continue
        value = _get_attr(gm, target)
        if isinstance(value, torch.fx.GraphModule) and subgraphs is not None:
            sub_class, sub_weights, sub_tied = subgraphs.class_for(value, target)
            lines.append(_assign(target, f"{sub_class}()"))
            weights.update(sub_weights)
            nested_tied.extend(sub_tied)
            continue
        if not isinstance(value, torch.Tensor):
            raise ExportError(
                f"cannot export attribute '{target}' read by node {node.name}: it is a {type(value).__name__}, "
                "not a tensor; only tensors are stored in the weights file."
            )
        if isinstance(value, nn.Parameter):
            grad = "" if value.requires_grad else ", requires_grad=False"
            expr = f"nn.Parameter({_tensor_decl(value)}{grad})"
            lines.append(_assign(target, expr))
        else:
            is_buffer = _owner_has(gm, target, "_buffers")
            if not is_buffer or _CONSTANT_NAME.search(target):
                lines.append("# A tensor constant captured when the graph was traced; its value is in the weights file.")
            if "." not in target and target.isidentifier():
                lines.append(f"self.register_buffer({quoted(target)}, {_tensor_decl(value)})")
            else:
                lines.append(_assign(target, _tensor_decl(value)))
        weights[target] = copies.of(value)
    needs_attach = any(line.startswith("_attach(") for line in lines)
    return lines, weights, needs_attach, copies.tied(weights) + nested_tied
