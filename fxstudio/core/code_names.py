"""The one rule for names that become code: identifiers, and attribute paths of identifiers.

A name read from a file (a parameter path in a ``.pt2`` archive, a submodule path, a node name)
is written into generated Python by ``torch.fx`` itself (``self.lin.weight``, ``getattr(self, "0")``)
and by fxstudio's export. Such a name is used only after it passes the checks here; anything
else (a quote, a bracket, a newline) is refused with ``UnsafeNameError``.
"""

from __future__ import annotations

import keyword
import re

from fxstudio.core.errors import LoadError

_PART = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)\Z")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class UnsafeNameError(LoadError):
    """A name from a file that is not an identifier (path) and so cannot safely become code (exit 2)."""


def is_identifier(text: object) -> bool:
    """ASCII identifier that is not a Python keyword (``relu_1``; not ``a"b``, ``class`` or ``é``)."""
    return isinstance(text, str) and bool(_IDENTIFIER.match(text)) and not keyword.iskeyword(text)


def is_attribute_path(text: object, *, keywords: bool = False) -> bool:
    """Dot-joined identifiers or decimal indices (``layer1.0.conv1.weight``); not empty. Keywords
    (``a.class``) pass only with ``keywords=True``: they cannot inject code, only fail to compile."""
    if not isinstance(text, str) or not text:
        return False
    return all(_PART.match(part) and (keywords or not keyword.iskeyword(part)) for part in text.split("."))


def shown(text: object, limit: int = 60) -> str:
    """``text`` quoted for a one-line message: control characters escaped, long text cut."""
    value = repr(text)
    return value if len(value) <= limit else value[: limit - 3] + "..."


def check_identifier(text: object, what: str) -> str:
    """``text`` if it is an identifier, else ``UnsafeNameError`` naming ``what`` holds it."""
    if not is_identifier(text):
        raise UnsafeNameError(f"{what} {shown(text)} is not a Python identifier; refusing to turn it into code.")
    return text  # type: ignore[return-value]


def check_attribute_path(text: object, what: str) -> str:
    """``text`` if it is an attribute path, else ``UnsafeNameError`` naming ``what`` holds it."""
    if not is_attribute_path(text):
        raise UnsafeNameError(
            f"{what} {shown(text)} is not an attribute path (identifiers joined by dots); "
            "refusing to turn it into code."
        )
    return text  # type: ignore[return-value]


# ----------------------------------------------------------------------------- names torch.fx writes
# torch.fx writes these into ``forward`` as they are (torch/fx/graph.py, ``_gen_python_code``): a
# node's name (``relu_1 = ...``), a placeholder's target (the signature), a call_method's target
# (``x.relu()``), a keyword's name (``f(x, inplace = False)``) and each part of a get_attr /
# call_module path (``self.layer1`` or, for a part that is not an identifier, ``getattr(self, "part")``,
# spliced between double quotes unescaped). This is the one rule for all of them.

def is_quotable_part(text: object) -> bool:
    """A path part that torch.fx may splice between double quotes: printable, no quote or backslash
    (``block1-0``, ``0``; not ``a"b`` or a newline)."""
    return (isinstance(text, str) and bool(text) and text.isprintable()
            and '"' not in text and "\\" not in text and "." not in text)


def is_code_path(text: object) -> bool:
    """A get_attr / call_module target torch.fx writes safely: dot-joined quotable parts."""
    return isinstance(text, str) and bool(text) and all(is_quotable_part(p) for p in text.split("."))


def node_code_name_problem(node) -> str | None:
    """Why ``node`` (a ``torch.fx.Node``) holds a name that torch.fx would write into code unsafely,
    or None when every such name passes."""
    if not isinstance(node.name, str) or not node.name.isidentifier():  # a keyword is renamed by fx's codegen
        return f"node name {shown(node.name)} is not a Python identifier"
    op, target = node.op, node.target
    if op == "placeholder":
        bare = target.lstrip("*") if isinstance(target, str) else target
        if not is_identifier(bare) or len(target) - len(bare) > 2:
            return f"input {shown(target)} of node {node.name} is not a Python identifier"
    elif op == "call_method":
        if not is_identifier(target):
            return f"method name {shown(target)} of node {node.name} is not a Python identifier"
    elif op in ("get_attr", "call_module"):
        if not is_code_path(target):
            return (f"{op} target {shown(target)} of node {node.name} is not an attribute path "
                    "(parts without quotes, backslashes or control characters)")
    if op in ("call_function", "call_method", "call_module"):
        for key in node.kwargs:
            if not is_identifier(key):
                return f"keyword name {shown(key)} of node {node.name} is not a Python identifier"
    return None


def check_node_code_names(node, where: str = "") -> None:
    """``UnsafeNameError`` when ``node`` holds a name that torch.fx would write into code unsafely."""
    problem = node_code_name_problem(node)
    if problem:
        prefix = f"{where}: " if where else ""
        raise UnsafeNameError(f"{prefix}{problem}; refusing to turn it into code.")


def check_graph_code_names(graph, where: str = "") -> None:
    """``check_node_code_names`` for every node of ``graph`` (a ``torch.fx.Graph``)."""
    for node in graph.nodes:
        check_node_code_names(node, where)
