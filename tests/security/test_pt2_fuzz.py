"""Issue #23, fuzzed: generated ``.pt2`` archives opened without trust, in process.

Each example starts from one tiny real ``torch.export.save`` archive (static or dynamic batch,
``pt2_hostile.Tiny``) and rewrites its JSON: node and argument names (keyword ones too), shape
expressions built as random syntax trees (huge powers, products, shifts, sympy's and torch's size
functions, floats that sympy reads exactly), input guards the same way, recorded sizes, strides,
hints and dtypes, symbol ranges, weights declared over fewer bytes than their shape, dropped
stored inputs (fxstudio then makes inputs from the recorded shapes). ``load_model(path)`` may only
raise ``LoadError`` (or another ``FxStudioError``), and returns within ``EXAMPLE_SECONDS``; a hang
inside one example (a computation holding the GIL) ends the process through ``faulthandler``'s
watchdog instead of stalling the run, leaving the archive it hung on as ``current.pt2`` and the
stack in ``watchdog.txt``, in pytest's ``pt2-fuzz*`` temporary folder (exit status 1, no report). The data budget is lowered to ``BUDGET`` so that what it
lets through is also quick to make.

Default profile: derandomized, about 25 s. ``HYPOTHESIS_PROFILE=long`` uses the long profile
``tests/core/edits/test_stateful_edits.py`` registers (fresh random seeds, many more examples).
"""

from __future__ import annotations

import copy
import faulthandler
import json
import os
import time
import zipfile

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import tests.core.edits.test_stateful_edits  # noqa: F401 - registers the "edits-default" and "long" profiles
from fxstudio.core.errors import FxStudioError, LoadError
from tests.security import pt2_hostile as h

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PROFILE = settings(settings.get_profile("long" if LONG else "edits-default"),
                   max_examples=int(os.environ.get("PT2_FUZZ_EXAMPLES", 10000 if LONG else 500)),
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                          HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
EXAMPLE_SECONDS = 5.0
WATCHDOG_SECONDS = 60
BUDGET = "64M"
SYMBOL = "Symbol('s77', positive=True, integer=True)"


class _Bases(tuple):
    """(folder, {dynamic: (top folder, records)}), shown short in a falsifying example."""

    def __repr__(self) -> str:
        return "bases"


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """The records of the two tiny archives every example rewrites, and a folder to write to."""
    folder = tmp_path_factory.mktemp("pt2-fuzz")
    out = {}
    for dynamic in (False, True):
        path = h.save_tiny(folder / f"base_{dynamic}.pt2", dynamic=dynamic)
        with zipfile.ZipFile(path) as zf:
            top = zf.namelist()[0].split("/", 1)[0]
            out[dynamic] = (top, {n.split("/", 1)[1]: zf.read(n) for n in zf.namelist()})
    return _Bases((folder, out))


# -- expressions ----------------------------------------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(-5, 70).map(str), st.integers(0, 10**30).map(str),
    st.sampled_from(["9", "10", "2", "3", "0", "1", "-1", "2**63", "10**300", "10**400", "1" + "0" * 400,
                     "1e-400", "1e308", "1e999", "0.5", "1.5e-300", "1_000", "0x10", "True", "None"]),
)
_ATOMS_SYMPY = st.one_of(_NUMBERS, st.sampled_from([SYMBOL, "s77", "Symbol('u0', integer=True)", "pi", "oo", "E",
                                                    "Integer(9)", "Float(1.5)", "Rational(1, 3)", "x", "_private"]))
_ATOMS_GUARD = st.one_of(_NUMBERS, st.sampled_from([
    "L['x'].size()[0]", "L['x'].size()[1]", "L['x'].stride()[0]", "L['x'].numel()", "L['x'].dim()",
    "L['x'].storage_offset()", "L['x']", "L['x'].size()", "L['y'].size()[0]", "L", "math.pi"]))
_BINOPS = st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "^", "&", "|", "<", "<=", "==", "!=",
                           " and ", " or "])
_SYMPY_FUNCS = st.sampled_from(["Pow", "Mul", "Add", "FloorDiv", "Mod", "Max", "Min", "CeilDiv", "LShift", "RShift",
                                "PowByNatural", "FloatPow", "Rational", "IntTrueDiv", "PythonMod", "Eq", "Lt",
                                "BitwiseFn_bitwise_and", "RoundDecimal"])
_SYMPY_UNARY = st.sampled_from(["floor", "ceiling", "sqrt", "OpaqueUnaryFn_exp", "OpaqueUnaryFn_log", "Integer",
                                "Float", "Abs", "ToFloat", "TruncToInt", "Identity", "Not", "Symbol", "Sum", "Tuple"])
_GUARD_FUNCS = st.sampled_from(["int", "float", "abs", "math.floor", "math.ceil", "math.sqrt", "math.exp",
                                "math.log2", "bool", "min", "max"])


def _tree(atoms, unary, binary):
    return st.recursive(atoms, lambda inner: st.one_of(
        st.tuples(inner, _BINOPS, inner).map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
        st.tuples(unary, inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner).map(lambda t: f"-{t[0]}"),
        *([] if binary is None else [st.tuples(binary, inner, inner).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
                                     st.tuples(inner, inner, inner).map(lambda t: f"ModularIndexing({t[0]}, {t[1]}, {t[2]})"),
                                     st.tuples(inner).map(lambda t: f"Piecewise(Tuple({t[0]}, True))")]),
    ), max_leaves=12)


SYMPY_EXPRS = st.one_of(
    _tree(_ATOMS_SYMPY, _SYMPY_UNARY, _SYMPY_FUNCS),
    st.sampled_from(["9**9**9", "Pow(Integer(9), Pow(Integer(9), Integer(9)))", "2^3^4", f"Pow({SYMBOL}, {SYMBOL})",
                     f"Mul({', '.join([SYMBOL] * 20)})", "floor(1/1e-400)", "LShift(1, 10**9)", "Rational(1, 3)**10**6",
                     f"{SYMBOL} # comment", "1" + "+1" * 3000, "Tuple(1, 2)*10**9", "Float(1, 10**6)"]),
    st.text(alphabet="0123456789+-*/()^ sSymbol'", max_size=30),
)
GUARD_EXPRS = st.one_of(
    _tree(_ATOMS_GUARD, _GUARD_FUNCS, None).map(lambda t: f"{t} >= 0"),
    st.sampled_from(["3 ** 10 ** 9 > 0", "1 << 10**9 > 0", "L['x'].size() * 10**9 == ()", "int(1e308) ** 8 > 0",
                     "L['x'].size()[0] >= 0 # )", "math.exp(10**6) > 0", "L['x'].size()[0] ** L['x'].size()[0] > 0"]),
)

# -- program mutations ------------------------------------------------------------------------------

_NAMES = st.one_of(st.sampled_from(["x", "linear", "input", "weight", "self", "import", "lambda", "__class__",
                                    "a b", "1x", "x'", "", "forward", "L", "_tensor_constant0"]),
                   st.text(alphabet="abcxyz_0123456789 .'\"()", max_size=10))
_SIZES = st.one_of(st.integers(0, 8), st.integers(-3, 2**20), st.sampled_from([2**31, 2**32, 2**62, 2**63, 2**64, 2**70, 10**30]))
_DTYPES = st.one_of(st.sampled_from([1, 4, 5, 6, 7, 8, 9, 11, 12, 13, 29, 35]), st.integers(-2, 60), st.just("float"))


def _tensor_values(program):
    return program["graph_module"]["graph"]["tensor_values"]


def _nodes(program):
    return program["graph_module"]["graph"]["nodes"]


def _mutation(kind: str, data):
    """One change to (program, records), drawn from ``data``; returns a label for ``event``."""
    def apply(program, records):
        values, nodes = _tensor_values(program), _nodes(program)
        if kind == "node name":
            node = data.draw(st.sampled_from(nodes))
            old = node["outputs"][0].get("as_tensor", {}).get("name")
            new = data.draw(_NAMES)
            if old in values:
                values[new] = values.pop(old)
                node["outputs"][0]["as_tensor"]["name"] = new
            node["name"] = new
        elif kind == "argument name":
            node = data.draw(st.sampled_from(nodes))
            item = data.draw(st.sampled_from(node["inputs"]))
            item["name"] = data.draw(_NAMES)
            item["kind"] = data.draw(st.sampled_from([1, 2, 3]))
        elif kind == "shape expression":
            name = data.draw(st.sampled_from(sorted(values)))
            sizes = values[name]["sizes"] = values[name].get("sizes") or [{"as_int": 1}]
            i = data.draw(st.integers(0, len(sizes) - 1))
            sizes[i] = {"as_expr": {"expr_str": data.draw(SYMPY_EXPRS),
                                    "hint": data.draw(st.one_of(st.none(), _SIZES.map(lambda v: {"as_int": v})))}}
        elif kind == "guard":
            program["guards_code"] = data.draw(st.lists(GUARD_EXPRS, min_size=1, max_size=3))
        elif kind == "sizes":
            name = data.draw(st.sampled_from(sorted(values)))
            count = data.draw(st.integers(0, 4))
            sizes = data.draw(st.lists(_SIZES, min_size=count, max_size=count))
            h.recorded_shape(program, name, sizes, data.draw(st.one_of(st.none(), st.lists(_SIZES, min_size=count,
                                                                                            max_size=count))))
        elif kind == "dtype":
            values[data.draw(st.sampled_from(sorted(values)))]["dtype"] = data.draw(_DTYPES)
        elif kind == "range":
            ranges = program.setdefault("range_constraints", {})
            key = data.draw(st.one_of(st.sampled_from(["s77", "u5", "u99999999999", "zuf7", "u1_000_000_000", "a b"]),
                                      _NAMES))
            ranges[key] = {"min_val": data.draw(st.one_of(st.none(), _SIZES)), "max_val": data.draw(st.one_of(st.none(), _SIZES))}
        elif kind == "weight layout":
            config = json.loads(records["data/weights/model_weights_config.json"])
            fqn = data.draw(st.sampled_from(sorted(config["config"])))
            meta = config["config"][fqn]["tensor_meta"]
            count = data.draw(st.integers(0, 3))
            meta["sizes"] = [{"as_int": v} for v in data.draw(st.lists(_SIZES, min_size=count, max_size=count))]
            meta["strides"] = [{"as_int": v} for v in data.draw(st.lists(st.sampled_from([0, 1, 3, 2**40]),
                                                                         min_size=count, max_size=count))]
            meta["dtype"] = data.draw(_DTYPES)
            if data.draw(st.booleans()):
                records[f"data/weights/{config['config'][fqn]['path_name']}"] = b""
            records["data/weights/model_weights_config.json"] = json.dumps(config).encode()
        elif kind == "no inputs":
            records.pop("data/sample_inputs/model.pt", None)
        return kind
    return apply


KINDS = ["node name", "argument name", "shape expression", "guard", "sizes", "dtype", "range", "weight layout",
         "no inputs"]


def _write(folder, top: str, records: dict, program: dict, name: str = "current"):
    records = dict(records)
    records["models/model.json"] = json.dumps(program).encode()
    path = folder / f"{name}.pt2"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, data in records.items():
            zf.writestr(f"{top}/{name}", data)
    return path


@pytest.mark.timeout(6 * 3600 if LONG else 300)
@PROFILE
@given(data=st.data())
def test_generated_archives_only_raise_load_errors_and_return_quickly(bases, data, monkeypatch):
    from fxstudio.core.loading import load_model

    folder, archives = bases
    top, records = archives[data.draw(st.booleans(), label="dynamic")]
    records = dict(records)
    program = json.loads(records["models/model.json"])
    for kind in data.draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4), label="mutations"):
        event(_mutation(kind, data)(program, records))
    path = _write(folder, top, records, copy.deepcopy(program))
    monkeypatch.setenv("FXSTUDIO_DATA_BUDGET", BUDGET)
    faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True, file=_watchdog_file(folder))
    start = time.perf_counter()
    try:
        load_model(path)
        event("opened")
    except LoadError as exc:
        event("refused: " + _reason(str(exc)))
        assert "\n" not in str(exc).strip(), str(exc)
    except FxStudioError as exc:
        event(f"refused ({type(exc).__name__})")
    finally:
        faulthandler.cancel_dump_traceback_later()
    took = time.perf_counter() - start
    assert took < EXAMPLE_SECONDS, (round(took, 2), json.dumps(program)[:2000])


_WATCHDOG: dict = {}


def _watchdog_file(folder):
    """The file ``faulthandler`` writes a hung example's stack to (pytest captures stderr)."""
    if folder not in _WATCHDOG:
        _WATCHDOG[folder] = open(folder / "watchdog.txt", "w")  # noqa: SIM115 - open for the session
    return _WATCHDOG[folder]


def _reason(message: str) -> str:
    """A short class of a refusal, for the statistics (``pytest --hypothesis-show-statistics``)."""
    for words in ("might never finish", "no tensor can have", "budget", "zip bomb", "range_constraints",
                  "not a plain", "not a Python identifier", "not an attribute path", "could not rebuild",
                  "larger than any", "cannot make", "damaged", "cannot be turned into a module", "legacy"):
        if words in message:
            return words
    return message.split(": ", 1)[-1][:40]


def test_the_fuzz_reaches_openings_and_each_refusal(bases, tmp_path, monkeypatch):
    """A guard against a vacuous fuzz: the base archives open, and the mutations the fuzz draws reach
    the bounds (an expression, a guard), the size checks and the budget."""
    from fxstudio.core.loading import load_model

    monkeypatch.setenv("FXSTUDIO_DATA_BUDGET", BUDGET)
    folder, archives = bases
    for dynamic, (top, records) in archives.items():
        load_model(_write(tmp_path, top, records, json.loads(records["models/model.json"]), f"base_{dynamic}"))
    top, records = archives[True]

    def opened(change):
        program = json.loads(records["models/model.json"])
        change(program)
        return _write(tmp_path, top, records, program)

    cases = [
        (lambda p: _tensor_values(p)["x"]["sizes"].__setitem__(0, {"as_expr": {"expr_str": "9**9**9", "hint": None}}),
         "might never finish"),
        (lambda p: p.__setitem__("guards_code", ["3 ** 10 ** 9 > 0"]), "might never finish"),
        (lambda p: h.recorded_shape(p, "x", [0, 2**62, 2**62]), "no tensor can have"),
        (lambda p: p["range_constraints"].update(u1_000_000_000={"min_val": 0, "max_val": None}), "counts up to it"),
    ]
    for change, words in cases:
        with pytest.raises(LoadError, match=words):
            load_model(opened(change))
