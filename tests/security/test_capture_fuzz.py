"""Issue #23, fuzzed: generated ``.fxcap`` files (random node names, keyword names with quotes,
newlines and code, targets in and out of the allow-list, argument text with payloads, shapes with
huge, negative and non-integer sizes, unknown dtypes, junk and deep nesting in the manifest, saved
tensor members that are garbage, pickles, bzip2 or lie about their size) opened in process with
``load_model(f"{path}::0")`` and listed with ``summary_lines``. Whatever the file: nothing but
``LoadError`` escapes (one line), the payload's marker never appears, the listing holds no control
character, a graph that opens compiles and runs without the marker, and each example returns
within a few seconds. The data budget is lowered to 64 MiB so that what opens stays small.

Default profile: derandomized, 200 examples (~20 s). ``HYPOTHESIS_PROFILE=long``: fresh random
seeds and 3000 examples (the long profile ``tests/core/edits/test_stateful_edits.py`` registers).
"""

from __future__ import annotations

import bz2
import io
import json
import os
import pickle
import time
import zipfile
import zlib
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import tests.core.edits.test_stateful_edits  # noqa: F401 - registers the "edits-default" and "long" profiles
from fxstudio.core.capture import read_capture, summary_lines
from fxstudio.core.errors import LoadError
from fxstudio.core.loading import load_model
from tests.security.test_capture_round2 import deflate_repeated, raw_zip

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PROFILE = settings(settings.get_profile("long" if LONG else "edits-default"),
                   max_examples=3000 if LONG else 200,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                          HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
EXAMPLE_SECONDS = 8.0
BUDGET = "64M"


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """``(folder, marker)``: where each example's file is written, and the path a payload would create."""
    folder = tmp_path_factory.mktemp("capture-fuzz")
    before = os.environ.get("FXSTUDIO_DATA_BUDGET")
    os.environ["FXSTUDIO_DATA_BUDGET"] = BUDGET
    yield folder, folder / "PWNED_MARKER"
    if before is None:
        os.environ.pop("FXSTUDIO_DATA_BUDGET", None)
    else:
        os.environ["FXSTUDIO_DATA_BUDGET"] = before


MARKER_TOKEN = "@MARKER@"  # replaced by the marker's path when the file is written


def _payloads() -> st.SearchStrategy[str]:
    code = f"open({MARKER_TOKEN!r}, 'w')"
    return st.sampled_from([
        f"inplace=False) if {code} else None#", f"x\nimport os; os.system('touch {MARKER_TOKEN}')\n",
        f"a\"); {code}; (\"", f"__import__('os').system('touch {MARKER_TOKEN}')", f"{code}",
        "self.__class__", "a.b", "../x", "", "class", "é", "a b", "a\rb", "\x1b[2J", "a" * 300, "0x", "%x",
    ])


_IDENTS = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
_NAMES = st.one_of(_IDENTS, _IDENTS, _payloads(), st.text(max_size=8))
_KEYS = st.one_of(st.sampled_from(["dim", "inplace", "alpha", "keepdim", "out", "dtype"]), _payloads(),
                  st.text(alphabet="ab_'\"\n()=#", max_size=8))
_INTS = st.one_of(st.integers(-3, 8), st.sampled_from([2 ** 31, 2 ** 40, 2 ** 62, 2 ** 64, -2 ** 63, 10 ** 30]))
_SIZES = st.one_of(st.integers(0, 6), st.integers(0, 6), st.sampled_from([2 ** 16, 2 ** 31, 2 ** 62, 2 ** 64, -1]),
                   st.sampled_from(["s0", "", 1.5, True, None, [2], {"a": 1}]))
_SHAPES = st.one_of(st.lists(_SIZES, max_size=4), st.just([1] * 65), st.sampled_from([7, "2,3", None, {"x": 1}]))
_DTYPES = st.sampled_from(["float32", "float32", "float64", "complex128", "int64", "bool", "bfloat16", "float",
                           "torch.float32", "quint8", "", 3, None, ["float32"], "\x1b[31m"])
_FUNCTIONS = st.sampled_from([
    "torch.relu", "torch.nn.functional.relu", "torch.add", "operator.add", "operator.mul", "operator.pow",
    "operator.getitem", "torch.ones", "torch.zeros", "torch.cat", "torch.nonzero", "torch.sum", "math.factorial",
    "getattr", "torch.ops.aten.resize_.default", "torch.ops.aten.expand.default",
    "os.system", "builtins.exec", "eval", "builtins.__import__", "torch.save", "torch.load", "subprocess.call",
    "torch.nn.functional.torch.os.system", "open", "fxstudio.core.fileio.atomic_write_text",
])
_METHODS = st.sampled_from(["softmax", "relu", "add", "add_", "mul", "size", "view", "reshape", "repeat", "expand",
                            "unsqueeze_", "t_", "contiguous", "sum", "item", "tolist", "__reduce_ex__", "tofile",
                            "apply_", "storage", "set_", "x; import os"])


def _scalar_text(prev: list[str]) -> st.SearchStrategy[str]:
    refs = st.sampled_from(prev).map(lambda n: f"%{n}") if prev else st.just("%x")
    return st.one_of(refs, refs, _INTS.map(str), st.sampled_from(["1.5", "-0.0", "True", "None", "torch.float64",
                                                                   "'shape'", "slice(None, 2)", "(2, 3)", "[2, -1]"]),
                     _payloads().map(repr), _payloads())


def _args_text(prev: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(_scalar_text(prev), max_size=4).map(lambda items: "(" + "".join(f"{i}, " for i in items) + ")"),
        st.sampled_from(["()", "(", "((%x,),)", "[%x]", "{}", "x"]), st.text(max_size=10),
        st.sampled_from([7, None, ["(%x,)"]]))


def _kwargs_text(prev: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just("{}"), st.just("{}"),
        st.dictionaries(_KEYS, _scalar_text(prev), max_size=2).map(
            lambda d: "{" + ", ".join(f"{k!r}: {v}" for k, v in d.items()) + "}"),
        st.sampled_from(["{", "{**x}", "{1: 2}", "[]"]), st.sampled_from([{"dim": 1}, 3]))


def _record() -> st.SearchStrategy[dict]:
    return st.one_of(
        st.builds(lambda shape, dtype: {"kind": "tensor", "shape": shape, "dtype": dtype}, _SHAPES, _DTYPES),
        st.builds(lambda v: {"kind": "int", "value": v}, _INTS),
        st.sampled_from([{"kind": "float", "value": 1.5}, {"kind": "bool", "value": "yes"}, {"kind": "tuple"}, {},
                         {"kind": "tensor"}, {"kind": "symbol", "text": "s0"}]))


# Calls that open on float tensors, so that the fuzz also explores graphs that load and run.
_BENIGN_CALLS = [
    ("call_function", "torch.relu", "(%a,)", "{}"), ("call_function", "torch.nn.functional.relu", "(%a,)", "{}"),
    ("call_function", "operator.add", "(%a, %b)", "{}"), ("call_function", "torch.add", "(%a, 2)", "{'alpha': 3}"),
    ("call_function", "torch.sum", "(%a,)", "{}"), ("call_function", "torch.ones", "((3, 4),)", "{}"),
    ("call_function", "torch.cat", "((%a, %b),)", "{}"), ("call_function", "operator.mul", "(%a, 2)", "{}"),
    ("call_method", "softmax", "(%a,)", "{'dim': -1}"), ("call_method", "relu", "(%a,)", "{}"),
    ("call_method", "size", "(%a, 0)", "{}"), ("call_method", "view", "(%a, -1)", "{}"),
    ("call_method", "repeat", "(%a, 2, 3)", "{}"), ("call_method", "expand", "(%a, 4, -1, -1)", "{}"),
    ("call_method", "unsqueeze_", "(%a, 0)", "{}"), ("call_method", "t_", "(%a,)", "{}"),
    ("call_method", "add_", "(%a, 1)", "{}"), ("call_method", "contiguous", "(%a,)", "{}"),
]


@st.composite
def graphs(draw, hostility: int) -> dict:
    """One graph: inputs, a chain of nodes, usually an output. Each field is hostile one time in
    ``hostility`` (1: always drawn from the hostile strategies)."""
    def hostile() -> bool:
        return hostility == 1 or draw(st.integers(0, hostility - 1)) == 0

    benign_input = st.builds(lambda shape, dtype: {"kind": "tensor", "shape": shape, "dtype": dtype},
                             st.lists(st.integers(1, 4), min_size=1, max_size=3),
                             st.sampled_from(["float32", "float64", "complex64"]))
    inputs = draw(st.lists(_record() if hostile() else benign_input, min_size=1, max_size=3))
    nodes = [{"op": "placeholder", "name": f"x{k}" if k else "x", "target": f"L_x{k}_", "args": "()",
              "kwargs": "{}", "value": rec} for k, rec in enumerate(inputs)]
    names = [n["name"] for n in nodes]
    for i in range(draw(st.integers(0, 5))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        op, target, args, kwargs = draw(st.sampled_from(_BENIGN_CALLS))
        args, kwargs = args.replace("%a", f"%{a}").replace("%b", f"%{b}"), kwargs
        name = f"n{i}"
        if hostile():
            op = draw(st.sampled_from(["call_function"] * 3 + ["call_method"] * 3 + [
                "get_attr", "placeholder", "call_module", "output", "bogus", 3]))
            target = draw(_FUNCTIONS if op == "call_function" else _METHODS if op == "call_method" else
                          st.one_of(_IDENTS, st.sampled_from(["forward", "__class__", "graph", "training", "w"]),
                                    _payloads()))
        if hostile():
            name = draw(st.one_of(_NAMES, st.sampled_from(names)))
        if hostile():
            args = draw(_args_text(names))
        if hostile():
            kwargs = draw(_kwargs_text(names))
        node = {"op": op, "name": name, "target": target, "args": args, "kwargs": kwargs}
        if hostile():
            node["value"] = draw(_record())
        if hostile():
            node["stack_trace"] = draw(st.sampled_from(
                ['File "/tmp/\x1b[31m.py", line 3, in f\n    x = 1\r', "\x00" * 10, 5]))
        nodes.append(node)
        names.append(name if isinstance(name, str) else "x")
    if not hostile() or draw(st.booleans()):
        nodes.append({"op": "output", "name": "output", "target": "output", "args": f"((%{names[-1]},),)",
                      "kwargs": "{}"})
    graph = {"index": 0, "inputs": draw(st.sampled_from([[], "x", [None]])) if hostile() else inputs,
             "nodes": nodes, "saved_inputs": False,
             "break": draw(st.sampled_from([{"reason": "r\x1b[2J\nExplanation: e\r", "graph_break": True,
                                             "user_frame": {"file": "/tmp/\x07.py", "line": 3}},
                                            None, "x", {"reason": ["x"] * 3, "user_frame": {"file": [1]}}]))}
    return graph


def _nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def captures(draw) -> dict:
    """``{"manifest": ..., "saved": member kind}`` for one file."""
    manifest = {"format": "fxstudio-capture", "version": 1, "torch": draw(st.sampled_from(["2.13", "\x1b[31m", 5])),
                "backend": draw(st.sampled_from(["eager", "\r\x1b]0;x\x07", None])),
                "notes": draw(st.lists(st.one_of(st.text(max_size=12), st.sampled_from(["\x1b[2J", 3, None])),
                                       max_size=3)),
                "graphs": draw(st.lists(graphs(draw(st.sampled_from([1, 4, 12, 12]))), min_size=1, max_size=2))}
    mutation = draw(st.sampled_from(["none"] * 12 + ["version", "format", "graphs", "nodes", "deep", "junk"]))
    if mutation == "version":
        manifest["version"] = draw(st.sampled_from([2, "1", 10 ** 300, None, [1]]))
    elif mutation == "format":
        manifest["format"] = draw(st.sampled_from(["other", None, {"a": 1}]))
    elif mutation == "graphs":
        manifest["graphs"] = draw(st.sampled_from([{}, "x", [1, 2], None]))
    elif mutation == "nodes":
        manifest["graphs"][0]["nodes"] = draw(st.sampled_from([{}, "x", [1], None]))
    elif mutation == "deep":
        manifest["notes"] = _nested(draw(st.sampled_from([30, 63, 70, 900])))
    elif mutation == "junk":
        manifest["pad"] = [{}] * draw(st.sampled_from([10, 1000, 100_000]))
    saved = draw(st.sampled_from(["none"] * 10 + ["tensors", "garbage", "pickle", "liar", "bzip2", "huge"]))
    return {"manifest": manifest, "saved": saved, "seed": draw(st.integers(0, 3))}


class _Payload:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _saved_member(kind: str, marker: Path, seed: int) -> tuple[str, int, bytes, int, int] | None:
    name = "inputs/graph_0.pt"
    if kind == "tensors":
        buffer = io.BytesIO()
        gen = torch.Generator().manual_seed(seed)
        shapes = [(2,), (3, 4), (1 << 10, 1 << 10), ()][seed]
        torch.save({"0": torch.randn(shapes, generator=gen), "attr:w": torch.zeros(2),
                    "1": torch.zeros(1).expand(1 << 20, 1 << 20) if seed == 3 else torch.ones(1)}, buffer)
        data = buffer.getvalue()
    elif kind == "garbage":
        data = bytes(range(256)) * 4
    elif kind == "pickle":
        data = pickle.dumps({"0": _Payload(marker)})
    elif kind == "liar":  # 256 MiB of zeros declared as 1 KiB, or 1 KiB declared as 7.9 GB
        if seed % 2:
            return (name, zipfile.ZIP_DEFLATED, deflate_repeated(bytes(1 << 20), 256), zlib.crc32(bytes(1024)), 1024)
        return (name, zipfile.ZIP_DEFLATED, zlib.compress(bytes(1024))[2:-4], 0, 7900 << 20)
    elif kind == "bzip2":
        data = bytes(1 << 20)
        return (name, zipfile.ZIP_BZIP2, bz2.compress(data), zlib.crc32(data), len(data))
    elif kind == "huge":
        return (name, zipfile.ZIP_DEFLATED, deflate_repeated(bytes(1 << 20), 100), 0, 100 << 20)
    else:
        return None
    return (name, zipfile.ZIP_STORED, data, zlib.crc32(data), len(data))


def _write(folder: Path, marker: Path, capture: dict) -> Path:
    text = json.dumps(capture["manifest"]).replace(MARKER_TOKEN, str(marker)).encode()
    members = [("capture.json", zipfile.ZIP_STORED, text, zlib.crc32(text), len(text))]
    saved = _saved_member(capture["saved"], marker, capture["seed"])
    if saved is not None:
        members.append(saved)
    return raw_zip(folder / "fuzz.fxcap", members)


def _real_shapes(gm: torch.fx.GraphModule, inputs: tuple) -> dict[str, tuple]:
    """Each node's real output shape (a tensor's), from a node-by-node run."""
    shapes: dict[str, tuple] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if isinstance(value, torch.Tensor):
                shapes[n.name] = tuple(value.shape)
            return value

    Recorder(gm).run(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
    return shapes


def _check_message(exc: LoadError) -> None:
    message = str(exc)
    assert "\n" not in message and "\r" not in message and "\x1b" not in message, message
    assert len(message) < 1200, message


@PROFILE
@given(capture=captures())
def test_generated_captures_only_ever_refuse_with_one_line(place, capture):
    folder, marker = place
    path = _write(folder, marker, capture)
    start = time.perf_counter()
    try:
        lines = summary_lines(read_capture(path))
        assert all(line.isprintable() for line in lines), lines
    except LoadError as exc:
        _check_message(exc)
    try:
        loaded = load_model(f"{path}::0")
    except LoadError as exc:
        _check_message(exc)
        event(f"refused: {str(exc).split(': ', 2)[-1][:40]}")
    else:
        event("opened")
        gm = loaded.graph_module
        gm.code  # noqa: B018 - generates and compiles forward (the code-name guard runs here)
        try:
            real = _real_shapes(gm, loaded.example_inputs)
        except Exception as exc:  # noqa: BLE001 - a graph may fail on real values; only the marker matters
            event(f"opened, run failed ({type(exc).__name__})")
        else:
            event("opened and ran")
            # the budget counted what fake tensors said each node makes: the real run must agree
            for node in gm.graph.nodes:
                meta = node.meta.get("tensor_meta")
                if node.name in real and hasattr(meta, "shape"):
                    assert tuple(meta.shape) == real[node.name], (node.format_node(), meta.shape, real[node.name])
    took = time.perf_counter() - start
    assert not marker.exists(), capture
    assert took < EXAMPLE_SECONDS, (round(took, 2), capture)


def test_the_fuzz_reaches_opened_graphs_and_refusals(place):
    """A guard against a vacuous fuzz: a graph the strategies draw opens and runs, and a hostile one
    is refused without running."""
    folder, marker = place
    good = {"inputs": [{"kind": "tensor", "shape": [2, 3], "dtype": "float32"}], "break": None, "nodes": [
        {"op": "placeholder", "name": "x", "target": "L_x_", "args": "()", "kwargs": "{}"},
        {"op": "call_method", "name": "s", "target": "softmax", "args": "(%x,)", "kwargs": "{'dim': -1}"},
        {"op": "output", "name": "output", "target": "output", "args": "((%s,),)", "kwargs": "{}"}]}
    path = _write(folder, marker, {"manifest": {"format": "fxstudio-capture", "version": 1, "graphs": [good]},
                                   "saved": "none", "seed": 0})
    loaded = load_model(f"{path}::0")
    (out,) = loaded.graph_module(*loaded.example_inputs)
    assert out.shape == (2, 3)
    good["nodes"][1]["kwargs"] = "{" + repr(f"dim=-1) if open({MARKER_TOKEN!r}, 'w') else None#") + ": 0}"
    path = _write(folder, marker, {"manifest": {"format": "fxstudio-capture", "version": 1, "graphs": [good]},
                                   "saved": "none", "seed": 0})
    with pytest.raises(LoadError, match="keyword name"):
        load_model(f"{path}::0")
    assert not marker.exists()
