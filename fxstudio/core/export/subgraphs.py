"""Nested graphs of higher-order ops, written as classes of their own in the exported file.

``torch.export`` keeps a region under ``torch.no_grad()`` / ``torch.autocast`` (and the branches of
``torch.cond``, the body of ``torch.map``) as a higher-order op, e.g.
``torch.ops.higher_order.wrap_with_set_grad_enabled(False, submod_1, x)``, whose graph is a nested
``GraphModule`` attribute read by a ``get_attr`` node. Each such graph becomes one generated
``nn.Module`` class (recursively: its own nested graphs become classes too), created in the parent's
``__init__`` under the same attribute name; its weights, if any, go in the one weights file under
that prefix. FX prints the op itself as ``torch.ops.higher_order.<name>``, which resolves after a
plain ``import torch``. Names go through the same checks as the top graph's (identifier paths,
string literals by ``codegen.quoted``).
"""

from __future__ import annotations

import builtins
import re

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.code_names import check_identifier
from fxstudio.core.errors import ExportError
from fxstudio.core.export import codegen
from fxstudio.core.export.modules import ImportNamer


def _class_stem(path: str) -> str:
    """``submod_1`` -> ``Submod1``; ``true_graph_0`` -> ``TrueGraph0`` (a checked identifier path in)."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9A-Za-z]+", path) if p) or "Subgraph"


def check_higher_order_ops(graph: torch.fx.Graph) -> None:
    """Refuse a higher-order op that FX would write as ``torch.ops.higher_order.<name>`` but that
    name does not give back (checked as an identifier first: it is written into code)."""
    for node in graph.nodes:
        if node.op == "call_function" and isinstance(node.target, fx_compat.HigherOrderOperator):
            name = getattr(node.target, "__name__", None)
            check_identifier(name, f"the higher-order op of node {node.name}")
            if getattr(torch.ops.higher_order, name, None) is not node.target:
                raise ExportError(
                    f"cannot export node {node.name}: its higher-order op is not torch.ops.higher_order.{name}."
                )


class SubgraphWriter:
    """Collects the generated classes of an export's nested graphs and what they need at module level."""

    def __init__(self, namer: ImportNamer, owner_class: str):
        self.namer = namer
        self.owner_class = owner_class
        self.classes: list[list[str]] = []  # source lines of each generated class, innermost first
        self.module_level: list[str] = []
        self.wrapped: list[str] = []
        self.needs_attach = False

    def class_for(self, sub: torch.fx.GraphModule, path: str) -> tuple[str, dict[str, torch.Tensor], list[tuple[str, str]]]:
        """Generate the class for the nested graph ``sub`` held at ``path`` of its parent: its name,
        its weights (keys prefixed with ``path.``) and tied weights as (name, same_as), prefixed too."""
        classes: dict = {}
        graph = codegen.plain_graph(sub, classes)
        if classes:
            raise ExportError(f"cannot export the nested graph '{path}': its output is not a tuple of tensors.")
        codegen.check_graph_names(graph)  # before torch.fx writes any of them into code
        check_higher_order_ops(graph)
        code = graph.python_code(root_module="self")
        forward = codegen._clean_forward(code.src)
        local_names = {n.name for n in graph.nodes} | {"self"}
        used = codegen._names_in(forward)
        renames: dict[str, str] = {}
        for name, obj in code.globals.items():
            if name not in used or obj is torch.fx.wrap or name == "torch":
                continue
            if name in codegen._CUSTOM_BUILTIN_IMPORTS:
                line = codegen._CUSTOM_BUILTIN_IMPORTS[name]
                if line.startswith(("import ", "from ")):
                    self.namer.lines[line] = None
                elif line not in self.module_level:
                    self.module_level.append(line)
                continue
            if getattr(builtins, name, None) is obj:
                continue
            got = self.namer.name_for(obj, preferred=name)
            if got != name:
                if got in local_names:
                    raise ExportError(
                        f"cannot export the nested graph '{path}': the name {got} it needs for "
                        f"{getattr(obj, '__name__', name)} is also one of its node names; rename that node."
                    )
                renames[name] = got
            if callable(obj) and not isinstance(obj, type) and \
                    getattr(obj, "__module__", "").split(".")[0] not in codegen._NOT_WRAPPED_MODULES:
                self.wrapped.append(got)
        forward = codegen._tidy_keywords(codegen._rename_tokens(forward, renames)).rstrip()

        class_name = self.namer.claim(f"{self.owner_class}{_class_stem(path)}")
        init_lines, weights, needs_attach, tied = codegen._init_body(sub, graph, self.namer, None, self)
        self.needs_attach = self.needs_attach or needs_attach
        self.classes.append([
            f"class {class_name}(nn.Module):",
            f'    """The nested graph `{path}` that a higher-order op (torch.ops.higher_order) of the graph calls."""',
            "",
            "    def __init__(self):",
            "        super().__init__()",
            *(f"        {line}" if line else "" for line in init_lines),
            "",
            *("    " + line if line else "" for line in forward.splitlines()),
        ])
        prefixed = {f"{path}.{key}": value for key, value in weights.items()}
        return class_name, prefixed, [(f"{path}.{a}", f"{path}.{b}") for a, b in tied]
