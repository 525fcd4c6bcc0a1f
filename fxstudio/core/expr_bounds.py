"""How large the numbers of a whitelisted expression can get, known before anything evaluates it.

A ``.pt2`` archive's symbolic-shape strings go to ``sympy.sympify`` and its input guards are exec'd
by ``ep.module()``. Both compute exactly: ``9**9**9`` (a shape expression) or ``3 ** 10 ** 9 > 0``
(a guard) never returns, and a whitelist of names does not see that. ``expression_problem`` walks
the parsed expression (never evaluating it) and gives every part a conservative bound on the
number it can be: how many bits its magnitude, and a fraction's denominator, may take, with every
symbol or tensor size counted as at most ``2**SIZE_BITS``. An expression any part of which could
pass ``budgets.MAX_INT_DIGITS`` decimal digits is refused, and so is a text longer, or a tree
larger or deeper, than the limits below. Both dialects share the rules:

- ``"sympy"``: what ``sympify`` reads (sympy's and torch's size functions, ``Symbol('s0', ...)``);
  ``^`` is refused, since sympify reads it as a power with another precedence than Python's;
- ``"guard"``: what an input guard is (sizes of ``L['x']``, ``math`` functions, ``int``/``min``...);
  a value of unknown type (``L['n']``) is only multiplied by a small constant (a string or list
  times an integer is a repeated copy).

Only which numbers an expression builds is judged here; which names it may use is the caller's
whitelist (``loading/pt2_archive``).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from fxstudio.core import budgets

MAX_TEXT = 20_000
"""Characters an expression's text may have."""

MAX_NODES = 4_000
"""Parts (syntax-tree nodes) an expression may have."""

MAX_DEPTH = 60
"""How deeply an expression's parts may nest."""

SIZE_BITS = 64
"""Bits of any symbol, tensor size, stride or input an expression names (at most ``2**63`` and sign)."""

_PREC = 64  # bits a floating-point sum may lose to cancellation (sympy's default precision is 53)
_GUARD_FLOAT = (1025, -1075)  # a Python float is below 2**1024 and not below 2**-1075 unless zero
_SMALL_REPEAT = 64  # an input of unknown type may be multiplied by a constant up to this


def max_bits() -> int:
    """Bits of the largest integer an expression may build (``budgets.MAX_INT_DIGITS`` digits)."""
    return math.ceil(budgets.MAX_INT_DIGITS * math.log2(10))


class _Refused(Exception):
    """An expression part whose number cannot be bounded (the message says why)."""


@dataclass(frozen=True)
class _Num:
    """A number: ``|x| < 2**hi``; ``|x| >= 2**lo`` unless zero; a fraction's denominator below
    ``2**den``; ``kind`` int, rat (exact fraction) or float; ``const`` its value when a plain integer."""

    hi: int
    lo: int = 0
    den: int = 0
    kind: str = "int"
    const: int | None = None


@dataclass(frozen=True)
class _Other:
    """Not a number: ``root`` (``L``), ``input`` (``L['x']``, type unknown), ``sizes`` (``.size()``),
    ``str``, ``func`` (a callable, ``name``), ``method`` (of an input), ``module`` (``math``),
    ``tuple`` (sympy ``Tuple``, ``items``), ``none``."""

    kind: str
    name: str = ""
    items: tuple = ()


_SYMBOL = _Num(SIZE_BITS)
_BOOL = _Num(1)


def expression_problem(text: str, dialect: str) -> str | None:
    """Why ``text`` (a shape expression, ``dialect="sympy"``, or an input guard, ``"guard"``) could
    build a number too large to compute, or is too large itself; None when it is bounded.

    The answer reads after "the expression ...": ``"could build a number of about 10**900 ..."``.
    Text that does not parse is the whitelist's business: None here.
    """
    if len(text) > MAX_TEXT:
        return f"is {len(text):,} characters long (more than {MAX_TEXT:,})"
    bad = next((c for c in text if not (" " <= c <= "~") or c in "#\\"), None)
    if bad is not None:
        return f"holds the character {bad!r} (comments, line breaks, escapes and non-ASCII text are refused)"
    if dialect == "sympy" and "^" in text:
        return "holds '^', which sympy reads as a power (with another precedence than Python's)"
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError):
        return "nests too deeply to read"
    count = 0
    for _ in ast.walk(tree):
        count += 1
        if count > MAX_NODES:
            return f"has more than {MAX_NODES:,} parts"
    try:
        _Bounder(text, dialect).value(tree.body, 0)
    except _Refused as exc:
        return str(exc)
    return None


class _Bounder:
    """The bound of each part of one expression, bottom up (``value``)."""

    def __init__(self, text: str, dialect: str):
        self.text, self.dialect, self.limit = text, dialect, max_bits()

    # -- the walk --------------------------------------------------------------------------------

    def value(self, node: ast.AST, depth: int):
        """The bound (``_Num``) or kind (``_Other``) of ``node``; ``_Refused`` when unbounded."""
        if depth > MAX_DEPTH:
            raise _Refused(f"nests more than {MAX_DEPTH} levels deep")
        method = _NODES.get(type(node))
        if method is None:
            raise _Refused(f"uses {type(node).__name__}, which fxstudio does not bound")
        return self.checked(method(self, node, depth + 1))

    def checked(self, value):
        """``value``, refused when its number could pass the digit limit."""
        if not isinstance(value, _Num):
            return value
        if self.dialect == "guard" and value.kind == "float":  # a Python float overflows, never grows
            return _Num(min(value.hi, _GUARD_FLOAT[0]), max(value.lo, _GUARD_FLOAT[1]), 0, "float")
        size = max(value.hi + value.den, -value.lo if value.kind != "float" else 0)
        if size > self.limit:
            raise _Refused(f"could build a number of about {_digits(size)} "
                           f"(more than {budgets.MAX_INT_DIGITS} digits)")
        return value

    def _constant(self, node: ast.Constant, depth: int):
        v = node.value
        if isinstance(v, bool):
            return _Num(1, 0, 0, "int", int(v))
        if isinstance(v, int):
            return _Num(max(abs(v).bit_length(), 1), 0, 0, "int", v)
        if isinstance(v, float):
            return self._float_literal(node)
        if isinstance(v, str):
            return _Other("str", v)
        if v is None:
            return _Other("none")
        raise _Refused(f"holds the constant {type(v).__name__}, which fxstudio does not bound")

    def _float_literal(self, node: ast.Constant) -> _Num:
        """A float literal's magnitude from its text (sympy reads ``1e-400`` exactly: not zero)."""
        source = ast.get_source_segment(self.text, node) or repr(node.value)
        try:
            exact = Decimal(source.replace("_", ""))
        except InvalidOperation:
            exact = Decimal(repr(node.value))
        if not exact.is_finite():
            raise _Refused("holds an infinite number")
        if exact == 0:
            return _Num(0, 0, 0, "float")
        digits = exact.adjusted()  # 10**digits <= |x| < 10**(digits + 1)
        if abs(digits) > 10 * budgets.MAX_INT_DIGITS:
            raise _Refused(f"holds the number {source[:40]}, of about {abs(digits):,} digits")
        return _Num(math.ceil((digits + 1) * math.log2(10)) + 1, math.floor(digits * math.log2(10)) - 1, 0, "float")

    def _name(self, node: ast.Name, depth: int):
        name = node.id
        if self.dialect == "guard":
            if name == "L":
                return _Other("root")
            if name == "math":
                return _Other("module")
            if name in _GUARD_FUNCS:
                return _Other("func", name)
            raise _Refused(f"names {name!r}, which fxstudio does not bound")
        if name in _SYMPY_FUNCS or name in ("Symbol", "Tuple", "Integer", "Float", "Rational"):
            return _Other("func", name)
        return _SYMBOL  # a symbol, or one of sympy's constants (pi, E, oo...)

    def _unaryop(self, node: ast.UnaryOp, depth: int):
        a = self.value(node.operand, depth)
        if isinstance(node.op, ast.Not):
            return _BOOL
        a = self.number(a, "a sign")
        if isinstance(node.op, ast.Invert):
            return _Num(a.hi + 1, 0, 0, "int")
        const = -a.const if a.const is not None and isinstance(node.op, ast.USub) else a.const
        return _Num(a.hi, a.lo, a.den, a.kind, const)

    def _binop(self, node: ast.BinOp, depth: int):
        a, b = self.value(node.left, depth), self.value(node.right, depth)
        op = type(node.op).__name__
        if op == "Mult":
            return self.mult(a, b)
        if op == "Add" and self.dialect == "guard" and _unknown(a) and _unknown(b):
            return _Other("input")  # two inputs of unknown type joined: no larger than they are
        a, b = self.number(a, op), self.number(b, op)
        rule = _BINARY.get(op)
        if rule is None:
            raise _Refused(f"uses the operator {op}, which fxstudio does not bound")
        return rule(self, a, b)

    def _compare(self, node: ast.Compare, depth: int):
        for part in (node.left, *node.comparators):
            self.value(part, depth)
        return _BOOL

    def _boolop(self, node: ast.BoolOp, depth: int):
        values = [self.value(v, depth) for v in node.values]
        if all(isinstance(v, _Num) for v in values):
            return _join(values)
        return _Other("input")  # ``a or b`` is one of them, of a type not known here

    def _subscript(self, node: ast.Subscript, depth: int):
        if self.dialect != "guard":
            raise _Refused("uses a subscript, which fxstudio does not bound")
        base, index = self.value(node.value, depth), self.value(node.slice, depth)
        if isinstance(base, _Other) and base.kind in ("root", "input"):
            if (isinstance(index, _Other) and index.kind == "str") or (isinstance(index, _Num) and index.const is not None):
                return _Other("input")
        if isinstance(base, _Other) and base.kind == "sizes" and isinstance(index, _Num) and index.kind == "int":
            return _SYMBOL
        raise _Refused("uses a subscript other than an input's path or one of its sizes")

    def _attribute(self, node: ast.Attribute, depth: int):
        base = self.value(node.value, depth)
        if isinstance(base, _Other) and base.kind == "module" and f"math.{node.attr}" in _GUARD_FUNCS:
            return _Other("func", f"math.{node.attr}")
        if isinstance(base, _Other) and base.kind == "input" and node.attr in _METHODS:
            return _Other("method", node.attr)
        raise _Refused(f"uses the attribute {node.attr!r} of something fxstudio does not bound")

    def _call(self, node: ast.Call, depth: int):
        func = self.value(node.func, depth)
        if not isinstance(func, _Other) or func.kind not in ("func", "method"):
            raise _Refused("calls something that is not a known function")
        for keyword in node.keywords:
            value = keyword.value
            if not (isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, bool))):
                raise _Refused(f"passes {keyword.arg}= a value other than True, False or None")
            if func.name != "Symbol" and keyword.arg != "evaluate":
                raise _Refused(f"passes {keyword.arg}= to {func.name}, which fxstudio does not bound")
        args = [self.value(a, depth) for a in node.args]
        if func.kind == "method":
            return _method(func.name, args)
        rule = (_GUARD_FUNCS if self.dialect == "guard" else _SYMPY_FUNCS).get(func.name)
        if func.name in ("Symbol", "Tuple", "Integer", "Float", "Rational") and self.dialect == "sympy":
            rule = _CONSTRUCTORS[func.name]
        if rule is None:
            raise _Refused(f"calls {func.name}, which fxstudio does not bound")
        return rule(self, args)

    # -- numbers ---------------------------------------------------------------------------------

    def number(self, value, what: str) -> _Num:
        """``value`` as a number: an input of unknown type counts as a size; anything else is refused."""
        if isinstance(value, _Num):
            return value
        if self.dialect == "guard" and _unknown(value):
            return _SYMBOL
        raise _Refused(f"uses {_describe(value)} in arithmetic ({what})")

    def mult(self, a, b) -> _Num | _Other:
        """``a * b``: exponents of magnitudes add; an unknown input only times a small constant."""
        if self.dialect == "guard" and (_unknown(a) or _unknown(b)):
            other = b if _unknown(a) else a
            if not (isinstance(other, _Num) and other.const is not None and abs(other.const) <= _SMALL_REPEAT):
                raise _Refused("multiplies an input of unknown type by more than a small constant "
                               "(a string or list would be repeated)")
            return _Other("input")
        a, b = self.number(a, "Mult"), self.number(b, "Mult")
        kind = _kind(a, b)
        return _Num(a.hi + b.hi, a.lo + b.lo - (1 if kind == "float" else 0), a.den + b.den, kind, _const(a, b, int.__mul__))

    def add(self, a: _Num, b: _Num) -> _Num:
        """``a + b`` (and ``a - b``)."""
        kind = _kind(a, b)
        hi = max(a.hi, b.hi) + 1
        if kind == "int":
            return _Num(hi, 0, 0, "int")
        if kind == "float":
            return _Num(hi, min(a.lo, b.lo) - _PREC, 0, "float")
        den = a.den + b.den
        return _Num(hi, -den, den, "rat")

    def div(self, a: _Num, b: _Num, kind: str | None = None) -> _Num:
        """``a / b``: a fraction in sympy, a float in Python."""
        kind = kind or ("float" if self.dialect == "guard" or "float" in (a.kind, b.kind) else "rat")
        hi, lo = a.hi - b.lo + 1, a.lo - b.hi - 1
        if kind == "float":
            return _Num(max(hi, 1), lo, 0, "float")
        den = a.den + b.hi + b.den
        return _Num(max(hi, 1), -den, den, "rat")

    def floordiv(self, a: _Num, b: _Num) -> _Num:
        """``a // b``, ``FloorDiv``, ``CeilDiv``: an integer no larger than ``a / b`` (plus one)."""
        return _Num(max(a.hi - b.lo + 1, 1), 0, 0, "int" if _kind(a, b) == "int" else "float")

    def mod(self, a: _Num, b: _Num) -> _Num:
        """``a % b``: smaller than ``b``."""
        kind = _kind(a, b)
        if kind == "int":
            return _Num(b.hi, 0, 0, "int")
        if kind == "float":
            return _Num(b.hi, min(a.lo, b.lo) - _PREC, 0, "float")
        den = a.den + b.den
        return _Num(b.hi, -den, den, "rat")

    def exponent(self, b: _Num, what: str) -> int:
        """The largest magnitude of the exponent (or shift) ``b``: refused beyond the digit limit."""
        if b.const is not None:
            return abs(b.const)
        if b.den > SIZE_BITS:
            raise _Refused(f"uses an exponent with a denominator of about {_digits(b.den)} ({what})")
        if b.hi > self.limit.bit_length():
            raise _Refused(f"uses an exponent of up to 2**{b.hi} ({what}), which could build a number of "
                           f"more than {budgets.MAX_INT_DIGITS} digits")
        return 1 << max(b.hi, 0)

    def power(self, a: _Num, b: _Num) -> _Num:
        """``a ** b``: the magnitude's exponent times the exponent's magnitude."""
        n = self.exponent(b, "a power")
        base = max(a.hi, -a.lo, 1) + a.den
        if base > 0 and n > self.limit // base + 1:
            raise _Refused(f"could build a number of about {_digits(base * n)} by a power "
                           f"(more than {budgets.MAX_INT_DIGITS} digits)")
        size = base * n
        if a.kind == "int" and b.kind == "int" and b.const is not None and b.const >= 0:
            return _Num(max(size, 1), 0, 0, "int")
        if "float" in (a.kind, b.kind):
            return _Num(size + 1, -size - 1, 0, "float")
        return _Num(size + 1, -size, size, "rat")

    def lshift(self, a: _Num, b: _Num) -> _Num:
        """``a << b``: ``a`` times ``2**b``."""
        n = self.exponent(b, "a shift")
        if n > self.limit:
            raise _Refused(f"shifts by up to {n:,} bits (more than {budgets.MAX_INT_DIGITS} digits)")
        return _Num(a.hi + n, 0, 0, "int")


def _digits(bits: int) -> str:
    return f"10**{math.ceil(bits * math.log10(2)):,}" if bits < 10**15 else "more digits than can be written"


def _unknown(value) -> bool:
    return isinstance(value, _Other) and value.kind == "input"


def _describe(value) -> str:
    names = {"root": "L (the inputs)", "sizes": "a tuple of sizes", "str": "a string", "func": "a function",
             "method": "a method", "module": "the math module", "tuple": "a Tuple", "none": "None"}
    return names.get(value.kind, value.kind)


def _kind(*values: _Num) -> str:
    kinds = {v.kind for v in values}
    return "float" if "float" in kinds else "rat" if "rat" in kinds else "int"


def _const(a: _Num, b: _Num, op) -> int | None:
    if a.const is None or b.const is None:
        return None
    return op(a.const, b.const)  # both below the digit limit: cheap


def _join(values: list[_Num]) -> _Num:
    """One of ``values`` (``Max``, ``Where``, ``a or b``)."""
    if not values:
        return _Num(0)
    return _Num(max(v.hi for v in values), min(v.lo for v in values), max(v.den for v in values), _kind(*values))


def _method(name: str, args: list) -> _Num | _Other:
    if any(not isinstance(a, _Num) for a in args) or len(args) > 1:
        raise _Refused(f"calls .{name}() with arguments other than one number")
    if name in ("size", "stride") and not args:
        return _Other("sizes")
    return _SYMBOL


def _unary(rule):
    """A rule for a function of one number."""
    def apply(bounder: _Bounder, args: list):
        if len(args) != 1:
            raise _Refused(f"calls a one-argument function with {len(args)} arguments")
        return rule(bounder, bounder.number(args[0], "an argument"))
    return apply


def _binary(rule):
    """A rule for a function of two numbers."""
    def apply(bounder: _Bounder, args: list):
        if len(args) != 2:
            raise _Refused(f"calls a two-argument function with {len(args)} arguments")
        return rule(bounder, bounder.number(args[0], "an argument"), bounder.number(args[1], "an argument"))
    return apply


def _many(rule):
    """A rule for a function of any count of numbers."""
    def apply(bounder: _Bounder, args: list):
        return rule(bounder, [bounder.number(a, "an argument") for a in args])
    return apply


def _fold(step, empty: _Num):
    def apply(bounder: _Bounder, args: list[_Num]) -> _Num:
        if not args:
            return empty
        out = args[0]
        for arg in args[1:]:
            out = bounder.checked(step(bounder, out, arg))
        return out
    return _many(apply)


def _to_int(bounder, a: _Num) -> _Num:
    return _Num(max(a.hi, 1), 0, 0, "int", a.const)


def _to_float(bounder, a: _Num) -> _Num:
    return _Num(a.hi, a.lo if a.kind == "float" else -a.den - 1, 0, "float")


def _sqrt(bounder, a: _Num) -> _Num:
    return _Num(a.hi // 2 + 1, (a.lo - a.den) // 2 - 1, 0, "float")


def _log(bounder, a: _Num) -> _Num:
    size = max(a.hi, -a.lo, 1) + a.den
    return _Num(size.bit_length() + 1, -size - _PREC, 0, "float")


def _exp(bounder, a: _Num) -> _Num:
    n = bounder.exponent(a, "an exponential")
    size = math.ceil(n * math.log2(math.e)) + 1
    if size > bounder.limit:
        raise _Refused(f"could build a number of about {_digits(size)} by an exponential "
                       f"(more than {budgets.MAX_INT_DIGITS} digits)")
    return _Num(size, -size, 0, "float")


def _trig(bounder, a: _Num) -> _Num:
    return _Num(1, -max(a.hi, -a.lo, 1) - a.den - _PREC, 0, "float")


def _bitwise(bounder, a: _Num, b: _Num) -> _Num:
    return _Num(max(a.hi, b.hi) + 1, 0, 0, "int")


def _bool(bounder, args: list) -> _Num:
    return _BOOL


def _same(bounder, a: _Num) -> _Num:
    return a


def _round(bounder, a: _Num, ndigits: _Num) -> _Num:
    if ndigits.hi > 16:
        raise _Refused("rounds to more digits than fxstudio bounds")
    return _Num(a.hi + 1, min(a.lo, 0) - _PREC, 0, "float")


def _modular_indexing(bounder, args: list) -> _Num:
    if len(args) != 3:
        raise _Refused(f"calls ModularIndexing with {len(args)} arguments")
    x, d, m = (bounder.number(a, "an argument") for a in args)
    bounder.checked(bounder.floordiv(x, d))
    return bounder.mod(x, m)


def _choice(bounder, args: list) -> _Num:
    """``ITE(c, a, b)`` / ``Where(c, a, b)``: one of ``a`` and ``b``."""
    if len(args) != 3:
        raise _Refused(f"calls a condition with {len(args)} arguments")
    return _join([bounder.number(a, "an argument") for a in args[1:]])


def _min_max(bounder, args: list) -> _Num:
    if len(args) == 1 and isinstance(args[0], _Other) and args[0].kind == "sizes":
        return _SYMBOL  # min(L['x'].size())
    return _join([bounder.number(a, "an argument") for a in args])


def _piecewise(bounder, args: list) -> _Num:
    firsts = []
    for arg in args:
        if not (isinstance(arg, _Other) and arg.kind == "tuple" and len(arg.items) == 2):
            raise _Refused("calls Piecewise with an argument other than a Tuple(value, condition)")
        firsts.append(bounder.number(arg.items[0], "a Piecewise value"))
    return _join(firsts)


def _symbol(bounder, args: list) -> _Num:
    if len(args) != 1 or not (isinstance(args[0], _Other) and args[0].kind == "str"):
        raise _Refused("calls Symbol with arguments other than one name")
    return _SYMBOL


def _tuple(bounder, args: list) -> _Other:
    return _Other("tuple", items=tuple(args))


def _rational(bounder, args: list) -> _Num:
    if len(args) == 1:
        return bounder.number(args[0], "an argument")
    if len(args) != 2:
        raise _Refused(f"calls Rational with {len(args)} arguments")
    return bounder.div(bounder.number(args[0], "an argument"), bounder.number(args[1], "an argument"), "rat")


_BINARY = {
    "Add": _Bounder.add, "Sub": _Bounder.add, "Div": _Bounder.div, "FloorDiv": _Bounder.floordiv,
    "Mod": _Bounder.mod, "Pow": _Bounder.power, "LShift": _Bounder.lshift,
    "RShift": lambda self, a, b: _Num(a.hi, 0, 0, "int"),
    "BitAnd": _bitwise, "BitOr": _bitwise, "BitXor": _bitwise,
}
_METHODS = {"size", "stride", "storage_offset", "dim", "numel"}
_NODES = {ast.Constant: _Bounder._constant, ast.Name: _Bounder._name, ast.UnaryOp: _Bounder._unaryop,
          ast.BinOp: _Bounder._binop, ast.Compare: _Bounder._compare, ast.BoolOp: _Bounder._boolop,
          ast.Subscript: _Bounder._subscript, ast.Attribute: _Bounder._attribute, ast.Call: _Bounder._call}

_GUARD_FUNCS = {
    "int": _unary(_to_int), "float": _unary(_to_float), "abs": _unary(_same), "bool": _bool,
    "min": _min_max, "max": _min_max, "IsNonOverlappingAndDenseIndicator": _many(_bool),
    "cast_symbool_to_symint_guardless": _unary(lambda b, a: _BOOL),
    "math.floor": _unary(_to_int), "math.ceil": _unary(_to_int), "math.trunc": _unary(_to_int),
    "math.sqrt": _unary(_sqrt), "math.log2": _unary(_log), "math.log": _unary(_log), "math.exp": _unary(_exp),
}

_SYMPY_FUNCS = {
    "Add": _fold(_Bounder.add, _Num(0)), "Mul": _fold(_Bounder.mult, _Num(1, 0, 0, "int", 1)),
    "Pow": _binary(_Bounder.power), "PowByNatural": _binary(_Bounder.power), "FloatPow": _binary(_Bounder.power),
    "Max": _many(lambda b, a: _join(a)), "Min": _many(lambda b, a: _join(a)), "Abs": _unary(_same),
    "Mod": _binary(_Bounder.mod), "PythonMod": _binary(_Bounder.mod),
    "FloorDiv": _binary(_Bounder.floordiv), "CeilDiv": _binary(_Bounder.floordiv),
    "CleanDiv": _binary(_Bounder.floordiv), "ModularIndexing": _modular_indexing,
    "IntTrueDiv": _binary(lambda b, x, y: b.div(x, y, "float")),
    "FloatTrueDiv": _binary(lambda b, x, y: b.div(x, y, "float")),
    "floor": _unary(_to_int), "ceiling": _unary(_to_int), "CeilToInt": _unary(_to_int),
    "FloorToInt": _unary(_to_int), "TruncToInt": _unary(_to_int), "RoundToInt": _unary(_to_int),
    "RoundDecimal": _binary(_round), "ToFloat": _unary(_to_float), "TruncToFloat": _unary(_to_float),
    "Identity": _unary(_same), "sqrt": _unary(_sqrt), "OpaqueUnaryFn_sqrt": _unary(_sqrt),
    "OpaqueUnaryFn_exp": _unary(_exp), "OpaqueUnaryFn_log": _unary(_log),
    "OpaqueUnaryFn_cos": _unary(_trig), "OpaqueUnaryFn_sin": _unary(_trig),
    "LShift": _binary(_Bounder.lshift), "RShift": _binary(lambda b, x, y: _Num(x.hi, 0, 0, "int")),
    "BitwiseFn_bitwise_and": _binary(_bitwise), "BitwiseFn_bitwise_or": _binary(_bitwise),
    **{name: _many(_bool) for name in (
        "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "StrictLessThan", "StrictGreaterThan", "LessThan", "GreaterThan",
        "Equality", "Unequality", "And", "Or", "Not", "Xor", "IsNonOverlappingAndDenseIndicator")},
    "ITE": _choice, "Where": _choice, "Piecewise": _piecewise,
}

_CONSTRUCTORS = {
    "Symbol": _symbol, "Tuple": _tuple, "Integer": _unary(_to_int), "Float": _unary(_to_float),
    "Rational": _rational,
}
