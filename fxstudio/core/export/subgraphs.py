"""Nested graphs, written as classes of their own in the exported file: those of higher-order ops,
and submodules that are themselves traced ``GraphModule``s (``split_module``'s ``submod_0``...).

``torch.export`` keeps a region under ``torch.no_grad()`` / ``torch.autocast`` (and the branches of
``torch.cond``, the body of ``torch.map``) as a higher-order op, e.g.
``torch.ops.higher_order.wrap_with_set_grad_enabled(False, submod_1, x)``, whose graph is a nested
``GraphModule`` attribute read by a ``get_attr`` node. Each such graph becomes one generated
``nn.Module`` class (recursively: its own nested graphs become classes too), created in the parent's
``__init__`` under the same attribute name; its weights, if any, go in the one weights file under
that prefix. A called ``GraphModule`` becomes such a class the same way, made where the parent
calls it. FX prints the op itself as ``torch.ops.higher_order.<name>``, which resolves after a
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
from fxstudio.core.export.codegen import comment_text
from fxstudio.core.export.init_body import InitBody, init_body
from fxstudio.core.export.modules import ImportNamer
from fxstudio.core.export.op_imports import add_registration_imports


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
        self.needs_restore = False

    def class_for(self, sub: torch.fx.GraphModule, path: str, *, called: bool = False,
                  where: str | None = None) -> tuple[str, InitBody]:
        """Generate the class for the nested graph ``sub`` held at ``path`` of its parent (``called``:
        the parent's graph calls it as a submodule, else a higher-order op reads it; ``where``: its
        full path, for messages): the class name and its ``__init__`` body, paths relative to it."""
        where = where or path
        classes: dict = {}
        graph = codegen.plain_graph(sub, classes)
        if classes:
            raise ExportError(f"cannot export the nested graph '{where}': its output is not a tuple of tensors.")
        codegen.check_graph_names(graph)  # before torch.fx writes any of them into code
        check_higher_order_ops(graph)
        add_registration_imports([graph], self.namer)
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
                        f"cannot export the nested graph '{where}': the name {got} it needs for "
                        f"{getattr(obj, '__name__', name)} is also one of its node names; rename that node."
                    )
                renames[name] = got
            if callable(obj) and not isinstance(obj, type) and \
                    getattr(obj, "__module__", "").split(".")[0] not in codegen._NOT_WRAPPED_MODULES:
                self.wrapped.append(got)
        forward = codegen._tidy_keywords(codegen._rename_tokens(forward, renames)).rstrip()

        class_name = self.namer.claim(f"{self.owner_class}{_class_stem(path)}")
        body = init_body(sub, graph, self.namer, None, self, prefix=f"{where}.")
        self.needs_attach = self.needs_attach or body.uses("_attach")
        self.needs_restore = self.needs_restore or body.uses("_restore")
        role = "that the graph calls as a submodule" if called else "that a higher-order op (torch.ops.higher_order) of the graph calls"
        self.classes.append([
            f"class {class_name}(nn.Module):",
            f'    """The nested graph `{comment_text(where)}` {role}."""',
            "",
            "    def __init__(self):",
            "        super().__init__()",
            *(f"        {line}" if line else "" for line in body.lines),
            "",
            *("    " + line if line else "" for line in forward.splitlines()),
        ])
        return class_name, body
