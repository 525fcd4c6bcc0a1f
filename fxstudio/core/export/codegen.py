"""The text of an exported model file: imports, the module class, ``get_model`` and ``example_inputs``.

``forward`` is FX's own code generation for the (edited) graph, which already keeps local names
clear of keywords, builtins and globals; around it this module writes the imports for every global
the code uses and for every operator namespace it calls (``op_imports``), the ``__init__`` that makes
the submodules and attributes the graph reaches (``init_body``, ``module_writer``, ``state_rebuild``,
nested graphs by ``subgraphs``), the helpers those lines call, and the weights file's contents.
aten graphs from ``torch.export`` get a plain ``forward``: the pytree flatten/unflatten plumbing of
``ExportedProgram.module()`` is replaced by the positional inputs and a literal output structure.
"""

from __future__ import annotations

import builtins
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.compile_aside import compile_code
from fxstudio.core.code_names import check_identifier, check_node_code_names, is_identifier
from fxstudio.core.errors import ExportError
from fxstudio.core.export.meta_weights import MATERIALIZE_CALL, MATERIALIZE_HELPER, built_on_meta, holds_meta, meta_devices_to_cpu
from fxstudio.core.export.init_body import ATTACH_HELPER, TIE_HELPER, InitBody, init_body
from fxstudio.core.export.module_writer import OriginalEntry
from fxstudio.core.export.modules import ImportNamer, literal, quoted
from fxstudio.core.export.op_imports import add_registration_imports
from fxstudio.core.export.state_rebuild import RESTORE_HELPER
from fxstudio.core.export.names import names_block
from fxstudio.core.export.outputs import build_outputs, check_inputs, header_lines, import_lines

# Names the generated file defines itself; globals of the forward code must not take them.
FIXED_NAMES = {"torch", "nn", "Path", "get_model", "example_inputs", "WEIGHTS_FILE", "_attach", "_tie", "_restore",
               "FXSTUDIO_NODE_NAMES", "FXSTUDIO_GRAPH_SIGNATURE", "FXSTUDIO_NODE_STRUCTURE"}
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


def comment_text(text: str) -> str:
    """``text`` for a ``#`` comment: line breaks and other control characters escaped, so it stays one comment."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def check_graph_names(graph: torch.fx.Graph) -> None:
    """Refuse a graph whose names torch.fx would write into code unchecked: node names, keyword names,
    attribute and submodule paths (``get_attr``/``call_module``: parts without quotes, backslashes or
    control characters) and method names (``call_method``)."""
    for node in graph.nodes:
        # The rule torch.fx's own code needs (keyword names included); get_attr/call_module paths may
        # hold parts such as ``block1-0``, which torch.fx and the file write as string literals.
        check_node_code_names(node)
        if node.op == "call_method":
            check_identifier(node.target, f"the method name of node {node.name}")

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
            if value.device.type == "meta":  # no values to store: the file makes random ones
                raise TypeError("meta tensor")
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
    if built_on_meta(gm):
        gm = meta_devices_to_cpu(gm)
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
    add_registration_imports([graph], namer)
    nested = SubgraphWriter(namer, class_name)
    body = init_body(gm, graph, namer, original, nested)
    init_lines, weights, tied = body.lines, body.state_weights(), body.tied
    helpers = [helper for helper, used in ((ATTACH_HELPER, body.uses("_attach") or nested.needs_attach),
                                           (RESTORE_HELPER, body.uses("_restore") or nested.needs_restore),
                                           (TIE_HELPER, bool(tied)),
                                           (MATERIALIZE_HELPER, holds_meta(weights))) if used]
    module_level += [line for line in nested.module_level if line not in module_level]
    wrapped += [name for name in nested.wrapped if name not in wrapped]
    train_lines = [f"    model.get_submodule({quoted(path)}).train({flag})" for path, flag in _train_flags(gm, body)]

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
    for helper in helpers:
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
    if holds_meta(weights):
        out.append(MATERIALIZE_CALL)
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
        compile_code(source, f"{class_name}.py")   # in the window's worker: off the interpreter lock
    except SyntaxError as exc:
        raise ExportError(f"the generated code does not compile (line {exc.lineno}: {exc.msg}); this is a bug in fxstudio's export") from None
    return GeneratedFile(source, weights, class_name, requirements)


def _train_flags(gm: torch.fx.GraphModule, body: InitBody) -> list[tuple[str, bool]]:
    """(path, flag) for the ``.train(flag)`` calls that give each module the file makes its training
    flag after ``model.train(gm.training)``: outermost first, each call setting a whole subtree."""
    roots, shells = set(body.subtrees), set(body.shells)

    def made(path: str) -> bool:
        """Whether the file makes the module at ``path`` as the graph module has it."""
        parts = path.split(".")
        return path in shells or any(".".join(parts[:i]) in roots for i in range(1, len(parts) + 1))

    modules = [(path, m) for path, m in gm.named_modules(remove_duplicate=False) if path and made(path)]
    current = {path: gm.training for path, _ in modules}
    out = []
    for path, module in modules:
        if module.training != current[path]:
            out.append((path, module.training))
            for other in current:
                if other == path or other.startswith(path + "."):
                    current[other] = module.training
    return out

