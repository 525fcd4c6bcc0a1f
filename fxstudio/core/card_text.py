"""What a canvas card says under its title, decided without a display: the layout sizes cards by it
and the canvas draws it (``qt/canvas/items.py``).

Under a card's title (the node's name) come, each only when it says something:

* the module the node was traced in, when no frame is drawn for it (a frame holding a single card
  is left out: :func:`module_caption`, relative to the frame around it: ``conv1 · Conv2d``);
* the target, leading with the op (:func:`short_target`: ``aten.linear``, ``F.linear``), unless the
  title already says it (``conv2d`` for ``torch.ops.aten.conv2d.default``: :func:`card_target_line`);
* the constant arguments (:func:`constants_text`: ``× 2``, ``stride=[2, 2], padding=[3, 3]``);
* the output shape.

:func:`card_lines` counts those lines: a card with more than two is taller (``layout.engine``).
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable

import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.argsyntax import format_value
from fxstudio.core.node_text import META_MODULE_PATH, META_MODULE_STACK, card_target_text

# Binary operators shown as their symbol with the constant operand: ``x * 2`` reads ``× 2``.
_OPERATOR_SYMBOLS = {"add": "+", "iadd": "+", "sub": "−", "isub": "−", "mul": "×", "imul": "×",
                     "truediv": "÷", "itruediv": "÷", "div": "÷", "floordiv": "//", "ifloordiv": "//", "mod": "%",
                     "pow": "**", "ipow": "**", "matmul": "@", "and_": "&", "or_": "|", "xor": "^",
                     "lshift": "<<", "rshift": ">>", "eq": "==", "ne": "!=", "lt": "<", "le": "<=",
                     "gt": ">", "ge": ">="}
MAX_CONST_CHARS = 60   # longer constants (a big list) are cut here; the card elides to its width
_COUNTER = re.compile(r"_\d+$")   # the ``_3`` torch.fx appends to the second, third... node of a name
_PREFIXES = (("torch.ops.", ""), ("torch.nn.functional.", "F."))


# ---- the target line -----------------------------------------------------------------------------


def short_target(text: str) -> str:
    """A target text led by its op, the redundant prefix cut: ``torch.ops.aten.linear.default`` →
    ``aten.linear`` (another overload stays: ``aten.unflatten.int``), ``torch.nn.functional.linear``
    → ``F.linear``; anything else as it is (``torch.relu``, ``operator.add``, ``layer1.0.conv1``)."""
    for prefix, short in _PREFIXES:
        if text.startswith(prefix):
            text = short + text[len(prefix):]
            if prefix == "torch.ops.":
                text = text.removesuffix(".default")
            break
    return text


def op_name(node: torch.fx.Node) -> str:
    """The bare name of what a call node calls: ``conv2d`` (``aten.conv2d.default``), ``relu``
    (``torch.relu``), ``view`` (a method), the submodule's path; ``""`` for other nodes."""
    if node.op == "call_method" or node.op == "call_module":
        return str(node.target)
    if node.op == "call_function":
        name = getattr(node.target, "__name__", "")
        if isinstance(node.target, fx_compat.OP_TYPES):
            name = name.split(".")[0]   # an overload's __name__ is "add.Tensor"
        return name if isinstance(name, str) else ""
    return ""


def title_says_target(node: torch.fx.Node) -> bool:
    """Whether the node's name already says its target: ``conv2d`` for ``aten.conv2d``, ``add_7`` for
    ``operator.add``, ``relu_`` for ``aten.relu_``, ``layer1_0_conv1`` for the submodule ``layer1.0.conv1``,
    ``conv1_weight`` for the attribute ``conv1.weight``."""
    if node.op in ("call_module", "get_attr"):
        flat = str(node.target).replace(".", "_")
        return node.name == flat or _COUNTER.sub("", node.name) == flat
    name = op_name(node)
    return bool(name) and (node.name == name or _COUNTER.sub("", node.name) == name)


def card_target_line(node: torch.fx.Node, gm: torch.nn.Module | None = None) -> str:
    """The target line of ``node``'s card: ``input`` for an input, the short target
    (:func:`short_target`) of a call whose name does not say it, a called submodule's class (with
    its path when the name does not spell it: ``blocks.0 · Block``), ``""`` when the title says it all."""
    if node.op == "placeholder":
        return "input"
    if node.op == "output":
        return ""
    if node.op == "call_module":
        text = card_target_text(node, gm)
        path, sep, cls = text.partition(" · ")
        return cls if sep and title_says_target(node) else text
    if title_says_target(node):
        return ""
    return short_target(card_target_text(node, gm))


def shows_target_line(node: torch.fx.Node) -> bool:
    """Whether :func:`card_target_line` is not empty (without looking up a submodule's class)."""
    return node.op in ("placeholder", "call_module") or (node.op != "output" and not title_says_target(node))


# ---- constants -------------------------------------------------------------------------------------


def _has_node(value) -> bool:
    if isinstance(value, torch.fx.Node):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_node(v) for v in value)
    if isinstance(value, dict):
        return any(_has_node(v) for v in value.values())
    return False


def _const(value) -> str:
    try:
        text = format_value(value)
    except Exception:  # noqa: BLE001 (an exotic constant: its repr is good enough on a card)
        text = repr(value)
    return text if len(text) <= MAX_CONST_CHARS else text[:MAX_CONST_CHARS - 1] + "…"


def _same(default, value) -> bool:
    """Whether an argument equals its schema default (``[1, 1]`` and ``(1, 1)`` alike)."""
    try:
        if isinstance(default, (list, tuple)) and isinstance(value, (list, tuple)):
            return list(default) == list(value)
        return type(default) is type(value) and default == value
    except Exception:  # noqa: BLE001 (exotic values: shown)
        return False


def _operator_symbol(node: torch.fx.Node) -> str | None:
    if node.op == "call_function" and getattr(node.target, "__module__", "") in ("_operator", "operator"):
        return _OPERATOR_SYMBOLS.get(getattr(node.target, "__name__", ""))
    return None


def _constant_args(node: torch.fx.Node):
    """(name or None, value) of each constant argument a card shows, in order; an ATen op's
    arguments left at their schema default are not shown."""
    if node.op in ("placeholder", "output", "get_attr"):
        return
    args, kwargs = node.args, node.kwargs
    spec = _schema_spec(node.target)   # an ATen op names its arguments and defaults
    if spec is not None:
        names, defaults = spec
        for name, value in (*zip(names, args), *kwargs.items()):
            if _has_node(value) or (name in defaults and _same(defaults[name], value)):
                continue
            yield name, value
        return
    for a in args:
        if not _has_node(a):
            yield None, a
    for k, v in kwargs.items():
        if not _has_node(v):
            yield k, v


_SPECS: dict = {}   # op -> (argument names, {name: default}) of its schema, or None


def _schema_spec(target):
    try:
        return _SPECS[target]
    except KeyError:
        pass
    except TypeError:   # an unhashable target
        return None
    schema = fx_compat.op_schema(target)
    spec = None if schema is None else (tuple(a.name for a in schema.arguments),
                                        {a.name: a.default_value for a in schema.arguments if a.has_default_value()})
    _SPECS[target] = spec
    return spec


def has_constants(node: torch.fx.Node) -> bool:
    """Whether ``node``'s card shows constant arguments (:func:`constants_text` is not empty)."""
    node_type = torch.fx.Node
    if all(type(a) is node_type for a in node.args) and all(type(v) is node_type for v in node.kwargs.values()):
        return False   # the common case, at no schema look-up
    return next(iter(_constant_args(node)), None) is not None


def constants_text(node: torch.fx.Node) -> str:
    """The node's constant arguments as a short line: ``× 2`` for ``x * 2``, ``max=5.0`` for
    ``clamp(x, max=5.0)``, ``1, -1`` for ``view(1, -1)``; ``""`` when every argument is a node."""
    symbol = _operator_symbol(node)
    if symbol and len(node.args) == 2 and not node.kwargs:
        a, b = node.args
        if _has_node(a) and not _has_node(b):
            return f"{symbol} {_const(b)}"
        if _has_node(b) and not _has_node(a):
            return f"{_const(a)} {symbol}"
    parts = [f"{name}={_const(value)}" if name is not None else _const(value) for name, value in _constant_args(node)]
    schema = fx_compat.op_schema(node.target)
    if schema is not None:
        symbol = _OPERATOR_SYMBOLS.get(schema.name.rpartition("::")[2].rstrip("_"))
        if symbol and len(parts) == 1 and parts[0].startswith("other="):   # aten.mul(x, 2): "× 2"
            return f"{symbol} {parts[0][6:]}"
    return ", ".join(parts)


# ---- the module caption ------------------------------------------------------------------------------


def frame_relative(path: str, parent: str) -> str:
    """``path`` as read inside the frame of ``parent``: ``layer1.0.conv1`` in ``layer1.0`` is
    ``conv1``; the whole path in no frame (``parent`` empty) or outside ``parent``."""
    return path[len(parent) + 1:] if parent and path.startswith(parent + ".") else path


def module_class(node: torch.fx.Node, path: str) -> str:
    """The class name of the module at ``path`` in ``node``'s module stack (``Conv2d``), or ``""``."""
    for entry in reversed(node.meta.get(META_MODULE_STACK) or ()):
        try:
            p, cls = entry[0], entry[1]
        except (TypeError, IndexError):
            continue
        if str(p) == path:
            name = str(cls).rsplit(".", 1)[-1]
            return "" if name == "Module" else name
    return ""


def single_card_paths(paths: Iterable[str]) -> set[str]:
    """The module paths (and their ancestors) that hold exactly one of the cards whose innermost
    module paths are ``paths``: the modules whose frame would hold one card."""
    count: dict[str, int] = {}
    for path in paths:
        while path:
            count[path] = count.get(path, 0) + 1
            path = path.rpartition(".")[0]
    return {p for p, c in count.items() if c == 1}


def module_caption(node: torch.fx.Node, framed: Container[str], single: Container[str]) -> str:
    """The module a call node was traced in, for its card, when the module is drawn as no frame
    because it holds that card only (``framed``: the module paths that have a frame or a collapsed
    card; ``single``: those holding one card, ``single_card_paths``): ``conv1 · Conv2d``, the path
    relative to the innermost frame around it. ``""`` when a frame shows the module, the node is at
    the top, or it is not a function or method call (a submodule's card names its module already)."""
    if node.op not in ("call_function", "call_method"):
        return ""
    path = node.meta.get(META_MODULE_PATH) or ""
    if not path or path in framed or path not in single:
        return ""
    parent = path
    while "." in parent:
        parent = parent.rsplit(".", 1)[0]
        if parent in framed:
            break
    else:
        parent = ""
    rel = frame_relative(path, parent)
    cls = module_class(node, path)
    return f"{rel} · {cls}" if cls else rel


def card_lines(node: torch.fx.Node, caption: bool = False) -> int:
    """How many lines a card shows under its title: the module caption (``caption``), the target
    line, the constants and the shape (counted whether or not it is known)."""
    return int(caption) + int(shows_target_line(node)) + int(has_constants(node)) + 1
