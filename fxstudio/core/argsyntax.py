"""The argument syntax of docs/edit-scripts.md: format any FX argument value as text, and parse it back.

Parsing uses ``ast`` against a whitelist and never ``eval``: literals (``inf``/``nan`` included),
tuples, lists, dicts, ``...``, ``slice(a, b, c)``, ``range(a, b, c)``, ``%name`` node references,
torch dtypes, ``torch.device(...)``, memory formats, layouts, ``torch.ops`` overloads and small
``torch.tensor([...], dtype=...)`` constants. ``format_value`` followed by ``parse_value`` gives a
value equal to the original.
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.errors import EditRefused

_REF_PREFIX = "__fxsref__"
_TENSOR_LITERAL_LIMIT = 64
MAX_VALUE_CHARS = 100_000  # an argument value longer than this is not something a person typed
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# ---------------------------------------------------------------------------------------- format


def format_value(value: Any) -> str:
    """Text for an FX argument value in the syntax of docs/edit-scripts.md (parses back to an equal value)."""
    if isinstance(value, torch.fx.Node):
        return f"%{value.name}"
    if value is None or isinstance(value, bool):
        return repr(value)
    if value is Ellipsis:
        return "..."
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        return _format_float(value)
    if isinstance(value, complex):
        return f"complex({_format_float(value.real)}, {_format_float(value.imag)})"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, (torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, fx_compat.OpOverload):
        return f"torch.ops.{value.namespace}.{fx_compat.op_base_name(value)}.{fx_compat.op_overload_name(value)}"
    if isinstance(value, fx_compat.OpOverloadPacket):
        return f"torch.ops.{fx_compat.packet_qualified_name(value).replace('::', '.')}"
    if isinstance(value, slice):
        parts = [value.start, value.stop] + ([value.step] if value.step is not None else [])
        return "slice(" + ", ".join(format_value(p) for p in parts) + ")"
    if isinstance(value, range):
        return f"range({value.start}, {value.stop}, {value.step})"
    if isinstance(value, tuple):
        inner = ", ".join(format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, torch.Tensor):
        return _format_tensor(value)
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return str(value)
    return f"<{type(value).__name__} {value!r}>"


def _format_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def _format_tensor(t: torch.Tensor) -> str:
    if t.numel() > _TENSOR_LITERAL_LIMIT or t.is_complex() or t.layout != torch.strided:
        shape = "×".join(str(s) for s in t.shape) or "scalar"
        return f"<tensor {shape} {str(t.dtype).removeprefix('torch.')}>"
    data = format_value(t.detach().cpu().tolist())
    return f"torch.tensor({data}, dtype={t.dtype})"


# ----------------------------------------------------------------------------------------- parse

NodeLookup = torch.fx.Graph | Mapping[str, torch.fx.Node] | Callable[[str], "torch.fx.Node | None"] | None


def parse_value(text: str, graph: NodeLookup = None) -> Any:
    """Parse argument text into a value; ``%name`` resolves to the node of that name in ``graph``.

    ``graph`` may be a ``torch.fx.Graph``, a mapping from names to nodes, or a lookup function.
    Raises ``EditRefused`` with the parser's message on anything outside the syntax.
    """
    if not isinstance(text, str):
        raise EditRefused(f"An argument value must be text, not {type(text).__name__}.")
    if len(text) > MAX_VALUE_CHARS:
        raise EditRefused(f"Cannot parse {short_repr(text)}: {len(text):,} characters is more than the "
                          f"{MAX_VALUE_CHARS:,} an argument value may have.")
    try:
        source = _replace_refs(text)
        tree = ast.parse(source.strip(), mode="eval")
        return _Parser(text, _lookup(graph)).value(tree.body)
    except SyntaxError as exc:
        col = f" at column {exc.offset}" if exc.offset else ""
        raise EditRefused(f"Cannot parse {short_repr(text)}: {exc.msg}{col}.") from None
    except UnicodeError:
        raise EditRefused(f"Cannot parse {short_repr(text)}: it holds a character that is not valid "
                          "Unicode text (a lone surrogate).") from None
    except ValueError as exc:  # null bytes, and the int digit limit in older Pythons
        raise EditRefused(f"Cannot parse {short_repr(text)}: {exc}.") from None
    except (RecursionError, MemoryError):
        raise EditRefused(f"Cannot parse {short_repr(text)}: it is nested too deeply.") from None


def dict_literal_keys(text: str) -> list[Any]:
    """The constant keys of ``text`` when it is a dict literal (``"{'dim': 1, 'x': %a}"`` gives
    ``['dim', 'x']``), read without a graph; [] when it is not one (``parse_value`` says why)."""
    try:
        tree = ast.parse(_replace_refs(text).strip(), mode="eval")
    except (SyntaxError, ValueError, UnicodeError, RecursionError, MemoryError):
        return []
    if not isinstance(tree.body, ast.Dict):
        return []
    return [k.value for k in tree.body.keys if isinstance(k, ast.Constant)]


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for one-line messages about user input."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[:limit - 12]}…{text[-8:]} ({len(text):,} chars)"


def _lookup(graph: NodeLookup) -> Callable[[str], torch.fx.Node | None]:
    if graph is None:
        return lambda name: None
    if isinstance(graph, torch.fx.Graph):
        def find(name: str) -> torch.fx.Node | None:
            for node in graph.nodes:
                if node.name == name:
                    return node
            return None
        return find
    if isinstance(graph, Mapping):
        return graph.get
    return graph


def rewrite_percent(text: str, follows: Callable[[tokenize.TokenInfo], bool], replacement: str, width: int) -> str:
    """Replace the ``width`` characters at each ``%`` operator token directly followed by a token ``follows``
    accepts, outside string literals, with ``replacement``; ``text`` unchanged when it does not tokenize (the
    parser then reports the error)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    cuts = [starts[tok.start[0] - 1] + tok.start[1] for tok, nxt in zip(tokens, tokens[1:])
            if tok.type == tokenize.OP and tok.string == "%" and nxt.start == tok.end and follows(nxt)]
    for off in reversed(cuts):
        text = text[:off] + replacement + text[off + width:]
    return text


def _replace_refs(text: str) -> str:
    """Rewrite ``%name`` (outside string literals) as a reserved identifier the AST can hold."""
    return rewrite_percent(text, lambda nxt: nxt.type == tokenize.NAME, _REF_PREFIX, 1)


_NAMED_FLOATS = {"inf": math.inf, "nan": math.nan}
_TORCH_CONSTANT_TYPES = (torch.dtype, torch.memory_format, torch.layout)


class _Parser:
    """Walks the AST of one value, accepting only the whitelisted forms."""

    def __init__(self, text: str, lookup: Callable[[str], torch.fx.Node | None]):
        self.text = text
        self.lookup = lookup

    def fail(self, what: str) -> EditRefused:
        if len(what) > 300:
            what = what[:290] + "…"
        return EditRefused(f"Cannot parse {short_repr(self.text)}: {what}.")

    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bytes):
                raise self.fail("bytes literals are not FX argument values")
            return node.value
        if isinstance(node, ast.Tuple):
            return tuple(self.value(e) for e in node.elts)
        if isinstance(node, ast.List):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise self.fail("'**' unpacking is not allowed in a dict")
            out = {}
            for k, v in zip(node.keys, node.values):
                key = self.value(k)
                try:
                    hash(key)
                except TypeError:
                    raise self.fail(f"a dict key must be hashable (a number, string or tuple), not a "
                                    f"{type(key).__name__}") from None
                out[key] = self.value(v)
            return out
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.value(node.operand)
            if isinstance(operand, bool) or not isinstance(operand, (int, float, complex)):
                raise self.fail("a sign applies only to a number")
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            return self.complex_literal(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(f"{_describe(node)} is not allowed (only literals, %node references and torch constants)")

    def name(self, ident: str) -> Any:
        if ident.startswith(_REF_PREFIX):
            name = ident[len(_REF_PREFIX):]
            found = self.lookup(name)
            if found is None:
                shown = name if len(name) <= 40 else name[:30] + "…"
                raise EditRefused(f"Cannot parse {short_repr(self.text)}: there is no node named %{shown} in the graph.")
            return found
        if ident in _NAMED_FLOATS:
            return _NAMED_FLOATS[ident]
        shown = ident if len(ident) <= 40 else ident[:30] + "…"
        raise self.fail(f"unknown name {shown!r} (write node references as %{shown}, strings in quotes)")

    def complex_literal(self, node: ast.BinOp) -> complex:
        left, right = self.value(node.left), self.value(node.right)
        if not (isinstance(right, complex) and isinstance(left, (int, float)) and not isinstance(left, bool)):
            raise self.fail("arithmetic is not allowed (only complex literals like 1+2j)")
        return left + right if isinstance(node.op, ast.Add) else left - right

    def dotted(self, node: ast.AST) -> str:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            raise self.fail(f"{_describe(node)} is not allowed")
        parts.append(node.id)
        return ".".join(reversed(parts))

    def attribute(self, node: ast.Attribute) -> Any:
        path = self.dotted(node)
        if path in ("math.inf", "math.nan"):
            return _NAMED_FLOATS[path[5:]]
        if path.startswith("torch.ops."):
            return _resolve_op(path, self.fail)
        if path.startswith("torch.") and path.count(".") == 1:
            obj = getattr(torch, path[6:], None)
            if isinstance(obj, _TORCH_CONSTANT_TYPES):
                return obj
        raise self.fail(f"{path} is not a torch dtype, memory format, layout or torch.ops overload")

    def call(self, node: ast.Call) -> Any:
        func = self.dotted(node.func)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise self.fail("'*' and '**' are not allowed in calls")
        args = [self.value(a) for a in node.args]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords}
        builders = {
            "slice": _build_slice,
            "range": _build_range,
            "complex": _build_complex,
            "float": _build_float,
            "torch.device": _build_device,
            "torch.tensor": _build_tensor,
        }
        if func not in builders:
            raise self.fail(f"calling {func}() is not allowed (only slice, range, complex, float, torch.device, torch.tensor)")
        try:
            return builders[func](*args, **kwargs)
        except EditRefused:
            raise
        except (TypeError, ValueError, RuntimeError) as exc:
            raise self.fail(f"{func}(): {exc}") from None


def _describe(node: ast.AST) -> str:
    kind = type(node).__name__
    return {"BinOp": "arithmetic", "Lambda": "a lambda", "Subscript": "subscripting",
            "Set": "a set", "Compare": "a comparison", "BoolOp": "a boolean expression"}.get(kind, f"a {kind} expression")


def _check_no_nodes(*values: Any) -> None:
    for v in values:
        if isinstance(v, torch.fx.Node):
            raise TypeError("a node reference is not allowed here")


def _build_slice(*args: Any) -> slice:
    if not 1 <= len(args) <= 3:
        raise TypeError("expects 1 to 3 arguments")
    return slice(*args)


def _build_range(*args: Any) -> range:
    _check_no_nodes(*args)
    return range(*args)


def _build_complex(real: Any = 0.0, imag: Any = 0.0) -> complex:
    _check_no_nodes(real, imag)
    if isinstance(real, str) or isinstance(imag, str):
        raise TypeError("expects numbers")
    return complex(real, imag)


def _build_float(text: Any) -> float:
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        raise TypeError("expects a number or one of 'inf', '-inf', 'nan'")
    return float(text)


def _build_device(*args: Any) -> torch.device:
    if not args or not all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in args):
        raise TypeError("expects a device string such as 'cuda:0' (and optionally an index)")
    return torch.device(*args)


def _build_tensor(data: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    def check(v: Any) -> None:
        if isinstance(v, (list, tuple)):
            for x in v:
                check(x)
        elif not isinstance(v, (int, float, bool)):
            raise TypeError("expects nested lists of numbers")
    check(data)
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError("dtype must be a torch dtype")
    return torch.tensor(data, dtype=dtype)


def _resolve_op(path: str, fail: Callable[[str], Exception]) -> Any:
    obj: Any = torch.ops
    for part in path.split(".")[2:]:
        if not _IDENT.match(part):
            raise fail(f"{path} is not a torch.ops operator")
        try:
            obj = getattr(obj, part)
        except (AttributeError, RuntimeError):
            raise fail(f"{path} is not a torch.ops operator") from None
    if not isinstance(obj, fx_compat.OP_TYPES):
        raise fail(f"{path} is not a torch.ops operator overload")
    return obj


def values_equal(a: Any, b: Any) -> bool:
    """Structural equality of argument values: nan equals nan, tensors compare by content."""
    if isinstance(a, torch.fx.Node) or isinstance(b, torch.fx.Node):
        return a is b
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, complex) and isinstance(b, complex):
        return values_equal(a.real, b.real) and values_equal(a.imag, b.imag)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                and a.shape == b.shape and bool(torch.equal(a, b)))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return (isinstance(a, tuple) == isinstance(b, tuple) and len(a) == len(b)
                and all(values_equal(x, y) for x, y in zip(a, b)))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    if isinstance(a, slice) and isinstance(b, slice):
        return all(values_equal(x, y) for x, y in ((a.start, b.start), (a.stop, b.stop), (a.step, b.step)))
    if type(a) is not type(b) and (isinstance(a, bool) or isinstance(b, bool)):
        return False
    return a == b
