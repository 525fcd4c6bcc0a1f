"""Issue #23, round 2, for ``.fxcap`` captures: each vector an attacker probe found against the real
CLI, as a real hostile file on disk, run through ``fxstudio`` under the address-space limit of
``tests/security/conftest.py``. Every one is refused or bounded with one ``fxstudio: `` line on
stderr, exit 2, no traceback, and the marker a payload would write never appears.

The vectors: code in a keyword name (``export``, ``--no-verify``, ``compare``), inputs and
attribute tensors whose bytes pass the data budget (float64, complex128, summed over the graph), a
saved-tensor member that is a zip bomb or compressed with bzip2, a manifest past 64 MiB or building millions of objects or
nesting deep, nodes whose outputs pass the budget (``torch.ones``, ``repeat``, ``expand``), a cost
check fooled by a recorded value, get_attr targets every module has, a shape whose strides
overflow, a graph selector in non-ASCII digits, and terminal escapes in the listing.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.security.test_capture_hostile import TENSOR, _graph, _node, write_capture

MiB = 1 << 20


def _refused(hostile, proc, *needles: str) -> str:
    """The one stderr line of a refusal (exit 2, no traceback, no marker), holding every needle."""
    hostile.assert_clean(proc, code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxstudio: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _graph_with_input(rec: dict, middle: list[dict]) -> dict:
    graph = _graph(middle)
    graph["inputs"] = [rec]
    graph["nodes"][0]["value"] = rec
    return graph


# ----------------------------------------------------------------------------- raw zip members


def deflate_repeated(chunk: bytes, count: int) -> bytes:
    """A raw deflate stream of ``chunk`` repeated ``count`` times, built without compressing it
    all: after a full flush, every further chunk compresses to the same block."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    return first + block * (count - 1) + c.flush(zlib.Z_FINISH)


def raw_zip(path: Path, members: list[tuple[str, int, bytes, int, int]]) -> Path:
    """A zip of ``(name, method, raw data, crc, declared size)`` members written byte by byte, as an
    attacker would (zip64 extra fields where a size needs them)."""
    out, central = bytearray(), bytearray()
    for name, method, data, crc, size in members:
        raw_name = name.encode()
        big = size >= 0xFFFFFFFF or len(data) >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, size, len(data)) if big else b""
        sizes = (0xFFFFFFFF, 0xFFFFFFFF) if big else (len(data), size)
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, method, 0, 0x21, crc, *sizes, len(raw_name), len(extra))
        out += raw_name + extra + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, method, 0, 0x21, crc, *sizes,
                               len(raw_name), len(extra), 0, 0, 0, 0, offset)
        central += raw_name + extra
    out += central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central),
                                 len(out), 0)
    path.write_bytes(bytes(out))
    return path


def _manifest(graphs: list[dict], **extra) -> dict:
    return {"format": "fxstudio-capture", "version": 1, "torch": "2.13", "backend": "eager", "notes": [],
            "graphs": graphs, **extra}


def _stored(name: str, data: bytes) -> tuple[str, int, bytes, int, int]:
    return (name, zipfile.ZIP_STORED, data, zlib.crc32(data), len(data))


# ----------------------------------------------------------------------------- 1. code in a keyword name


@pytest.mark.parametrize("op,name,target", [("call_function", "relu", "torch.nn.functional.relu"),
                                            ("call_method", "softmax", "softmax")])
def test_code_in_a_keyword_name_is_refused_before_the_graph_is_built(hostile, op, name, target):
    key = f"inplace=False) if open({str(hostile.marker)!r},'w') else None#"
    kwargs = "{" + repr(key) + ": False}" if op == "call_function" else "{'dim': 0, " + repr(key) + ": 0}"
    path = write_capture(hostile.dir / "kw.fxcap", [_graph([_node(op, name, target, "(%x,)", kwargs)])])
    edits = hostile.script([])
    for argv in (["inspect", f"{path}::0"], ["export", f"{path}::0", "-o", "out.py"],
                 ["export", f"{path}::0", "-o", "out.py", "--no-verify"], ["compare", f"{path}::0", edits]):
        proc = hostile.run(*argv)
        _refused(hostile, proc, f"kw.fxcap::0: node 1 ({name}): keyword name", "not a Python identifier")
    assert not (hostile.dir / "out.py").exists()


# ----------------------------------------------------------------------------- 2. the data budget, in bytes


@pytest.mark.parametrize("graph,needle", [
    # under the old element cap (2**32), 32 GiB each
    (_graph_with_input({"kind": "tensor", "shape": [65536, 65536], "dtype": "float64"},
                       [_node("call_function", "relu", "torch.relu", "(%x,)")]), "input 0 (65536×65536 float64)"),
    (_graph_with_input({"kind": "tensor", "shape": [32768, 65536], "dtype": "complex128"},
                       [_node("call_function", "neg", "torch.neg", "(%x,)")]), "input 0 (32768×65536 complex128)"),
    # an attribute tensor of the recorded shape, 8 GiB
    (_graph([_node("get_attr", "w", "big_w", value={"kind": "tensor", "shape": [32768, 32768], "dtype": "float64"}),
             _node("call_function", "add", "operator.add", "(%x, %w)")]), "big_w (32768×32768 float64)"),
])
def test_tensors_made_from_recorded_shapes_are_counted_in_bytes(hostile, graph, needle):
    path = write_capture(hostile.dir / "bytes.fxcap", [graph])
    proc = hostile.run("export", f"{path}::0", "-o", "out.py")
    _refused(hostile, proc, needle, "budget of 2.0 GiB")


def test_the_budget_is_summed_over_the_whole_graph(hostile):
    """Three 1 GiB inputs: each under the budget, together past it."""
    rec = {"kind": "tensor", "shape": [16384, 16384], "dtype": "float32"}
    graph = _graph([_node("placeholder", "y", "L_y_", value=rec), _node("placeholder", "z", "L_z_", value=rec),
                    _node("call_function", "add", "operator.add", "(%x, %y)")])
    graph["inputs"] = [rec, rec, rec]
    path = write_capture(hostile.dir / "sum.fxcap", [graph])
    proc = hostile.run("inspect", f"{path}::0")
    _refused(hostile, proc, "input 2 (16384×16384 float32) needs 1.0 GiB, which with the 2.0 GiB already made")


def test_input_shapes_given_on_the_command_line_are_counted_too(hostile):
    path = write_capture(hostile.dir / "shaped.fxcap", [_graph([_node("call_function", "relu", "torch.relu", "(%x,)")])])
    proc = hostile.run("inspect", f"{path}::0", "--input-shape", "32768,65536")
    _refused(hostile, proc, "shaped.fxcap::0: --input-shape 0 needs 8.0 GiB", "budget of 2.0 GiB")


# ----------------------------------------------------------------------------- 3. saved tensors: a zip bomb


def test_a_saved_tensor_member_that_is_a_zip_bomb_is_refused_before_it_is_read(hostile):
    """An 8 MB file whose inputs member inflates to 7.9 GB (zeros): refused on its declared size."""
    graph = _graph([_node("call_function", "relu", "torch.relu", "(%x,)")])
    graph["saved_inputs"] = True
    bomb = deflate_repeated(bytes(MiB), 7900)
    manifest = json.dumps(_manifest([graph])).encode()
    path = raw_zip(hostile.dir / "bomb.fxcap", [_stored("capture.json", manifest),
                                                 ("inputs/graph_0.pt", zipfile.ZIP_DEFLATED, bomb, 0, 7900 * MiB)])
    assert path.stat().st_size < 9 * MiB
    for argv in (["inspect", f"{path}::0"], ["export", f"{path}::0", "-o", "out.py"]):
        _refused(hostile, hostile.run(*argv), "inputs/graph_0.pt", "7.7 GiB", "budget of 2.0 GiB")


def test_a_member_compressed_with_bzip2_is_never_decompressed(hostile):
    """bzip2 may inflate one small chunk into gigabytes in a single call: only stored or deflated
    members are read."""
    import bz2

    graph = _graph([_node("call_function", "relu", "torch.relu", "(%x,)")])
    graph["saved_inputs"] = True
    data = bytes(64 * MiB)
    manifest = json.dumps(_manifest([graph])).encode()
    path = raw_zip(hostile.dir / "bz.fxcap", [_stored("capture.json", manifest),
                                               ("inputs/graph_0.pt", zipfile.ZIP_BZIP2, bz2.compress(data),
                                                zlib.crc32(data), len(data))])
    _refused(hostile, hostile.run("inspect", f"{path}::0"), "zip method 12", "stored or deflated")


# ----------------------------------------------------------------------------- 4. the manifest


def test_a_250_mb_manifest_in_a_small_file_is_refused_before_it_is_read(hostile):
    head = json.dumps(_manifest([_graph([])]))[:-1].encode() + b', "pad": ['
    chunk = b'{"a":{},"b":[]},' * 65536  # 1 MiB of small objects
    count = 250
    tail = b'{}]}'
    # one stream: the head, the repeated chunk, the tail (each full-flushed so the chunks repeat)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    stream += block * count + c.compress(tail) + c.flush(zlib.Z_FINISH)
    crc = zlib.crc32(head)
    for _ in range(count):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + count * len(chunk) + len(tail)
    path = raw_zip(hostile.dir / "huge.fxcap", [("capture.json", zipfile.ZIP_DEFLATED, stream, crc, size)])
    assert path.stat().st_size < 2 * MiB
    for argv in (["inspect", str(path)], ["inspect", f"{path}::0"]):
        _refused(hostile, hostile.run(*argv), "capture.json declares 250.0 MiB", "64.0 MiB")


@pytest.mark.parametrize("pad,needle", [
    ("[" + "{}," * 2_500_000 + "{}]", "JSON objects and arrays"),  # 7.5 MB: 2.5 million dicts
    ("[" + '"ab",' * 9_000_000 + "1]", "JSON values"),  # 45 MB: 9 million strings, under the byte cap
    ("[" * 500 + "]" * 500, "levels deep"),
])
def test_a_manifest_under_the_byte_cap_that_builds_too_much_is_refused(hostile, pad, needle):
    text = json.dumps(_manifest([_graph([])]))[:-1] + ', "pad": ' + pad + "}"
    path = hostile.dir / "objects.fxcap"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("capture.json", text)
    _refused(hostile, hostile.run("inspect", str(path)), needle, "not read")


# ----------------------------------------------------------------------------- 5. node outputs


@pytest.mark.parametrize("middle,needle", [
    ([_node("call_function", "z", "torch.ones", "((65536, 65536),)")], "node 1 (z)'s output needs 16.0 GiB"),
    ([_node("call_method", "r", "repeat", "(%x, 32768, 32768)")], "node 1 (r)'s output needs 8.0 GiB"),
    ([_node("call_method", "e", "expand", "(%x, 2147483648, 2)"),
      _node("call_method", "c", "contiguous", "(%e,)")], "node 1 (e)'s output needs 16.0 GiB"),
    # the zeros fit, then a node fake tensors cannot evaluate: nothing falls back to a real run
    ([_node("call_function", "z", "torch.zeros", "((4096, 4096),)"),
      _node("call_function", "nz", "torch.nonzero", "(%x,)"),
      _node("call_function", "big", "torch.ones", "((65536, 65536),)")], "node 2 (nz) cannot be evaluated"),
])
def test_node_outputs_are_counted_on_fake_tensors_before_anything_runs(hostile, middle, needle):
    path = write_capture(hostile.dir / "outputs.fxcap", [_graph(middle)])
    runs = [["export", f"{path}::0", "-o", "out.py"]]
    if middle[0]["name"] == "z" and len(middle) == 1:  # every command that loads, once
        runs += [["inspect", f"{path}::0"], ["compare", f"{path}::0", hostile.script([])]]
    for argv in runs:
        _refused(hostile, hostile.run(*argv), "outputs.fxcap::0: ", needle)
    assert not (hostile.dir / "out.py").exists()


def test_a_recorded_value_that_lies_does_not_pass_the_cost_check(hostile):
    """The node records its size as 2; it is 2**26, and pow(2**26, 2**26) would run for hours."""
    rec = {"kind": "tensor", "shape": [1 << 26], "dtype": "int8"}
    graph = _graph_with_input(rec, [_node("call_method", "s", "size", "(%x, 0)", value={"kind": "int", "value": 2}),
                                    _node("call_function", "p", "operator.pow", "(%s, %s)",
                                          value={"kind": "int", "value": 4})])
    path = write_capture(hostile.dir / "lie.fxcap", [graph])
    _refused(hostile, hostile.run("inspect", f"{path}::0"), "node 2 (p)", "bounded cost")


def test_an_input_value_that_lies_to_its_node_does_not_pass_the_cost_check(hostile):
    graph = _graph_with_input({"kind": "int", "value": 10 ** 4000},
                              [_node("call_function", "p", "operator.pow", "(%x, %x)")])
    graph["nodes"][0]["value"] = {"kind": "int", "value": 2}
    path = write_capture(hostile.dir / "lie2.fxcap", [graph])
    _refused(hostile, hostile.run("inspect", f"{path}::0"), "node 1 (p)", "bounded cost")


# ----------------------------------------------------------------------------- 6. one line, not a traceback


@pytest.mark.parametrize("target", ["forward", "__class__", "graph"])
def test_get_attr_targets_every_module_has_are_refused(hostile, target):
    path = write_capture(hostile.dir / "attr.fxcap", [_graph([_node("get_attr", "a", target, value=TENSOR)])])
    _refused(hostile, hostile.run("inspect", f"{path}::0"), f"get_attr target {target!r}")


def test_a_shape_whose_strides_overflow_is_refused(hostile):
    graph = _graph_with_input({"kind": "tensor", "shape": [0, 2 ** 62, 2 ** 62], "dtype": "float32"},
                              [_node("call_function", "relu", "torch.relu", "(%x,)")])
    path = write_capture(hostile.dir / "stride.fxcap", [graph])
    _refused(hostile, hostile.run("export", f"{path}::0", "-o", "out.py"), "input 0", "2**62")


@pytest.mark.parametrize("selector", ["²", "graph_٣", "¹⁰"])  # str.isdigit() is True for each
def test_a_graph_selector_that_is_not_ascii_digits_is_one_line(hostile, selector):
    path = write_capture(hostile.dir / "sel.fxcap", [_graph([])])
    _refused(hostile, hostile.run("inspect", f"{path}::{selector}"), "name a graph by its number")


# ----------------------------------------------------------------------------- 7. terminal escapes


def test_strings_from_the_file_are_printed_escaped(hostile):
    evil = "\x1b[2J\x1b]0;owned\x07\rEVIL\u202e"
    graph = _graph([_node("call_function", "relu", "torch.relu", "(%x,)")])
    graph["inputs"] = [{"kind": "tensor", "shape": [2, evil], "dtype": evil}]
    graph["break"] = {"reason": f"because{evil}", "graph_break": True,
                      "user_frame": {"file": f"/tmp/{evil}.py", "line": evil}}
    path = write_capture(hostile.dir / "esc.fxcap", [graph])
    manifest = json.loads(zipfile.ZipFile(path).read("capture.json"))
    manifest.update(notes=[f"note{evil}"], backend=evil, torch=evil)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("capture.json", json.dumps(manifest))
    proc = hostile.run("inspect", str(path))
    hostile.assert_clean(proc, code=0)
    for raw in ("\x1b", "\r", "\x07", "\u202e"):
        assert raw not in proc.stdout and raw not in proc.stderr
    shown = "\\x1b[2J\\x1b]0;owned\\x07\\rEVIL\\u202e"
    assert f"(backend {shown}, torch {shown})" in proc.stdout, proc.stdout
    assert f"inputs: 2×{shown} {shown}" in proc.stdout and f"note: note{shown}" in proc.stdout, proc.stdout
    assert "ends: because\\x1b[2J" in proc.stdout and "at /tmp/\\x1b[2J" in proc.stdout, proc.stdout
