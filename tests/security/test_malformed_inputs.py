"""Malformed edit scripts through the real ``fxstudio`` command (issue #12 item 6, docs/notes/trust-boundary.md):
each gets exit 2 and one clear line on stderr, never a traceback, for ``apply``, ``compare`` and
the window's ``--replay``; edits that would leave code fx cannot compile are refused (exit 1)."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fxstudio.resources import example_path

FXSTUDIO = Path(sys.executable).parent / "fxstudio"

MODEL = example_path("relu_add.py")
HEAD = b'{"format": "fxstudio.edits/1", "edits": '


def _edits_json(edits) -> str:
    return json.dumps({"format": "fxstudio.edits/1", "edits": edits})


# name -> (file content as bytes, a phrase the one-line message must hold)
MALFORMED = {
    "invalid_utf8": (HEAD + b'[{"op": "erase", "node": "r\xffelu"}]}', "not UTF-8"),
    "utf16_with_bom": (codecs.BOM_UTF16_LE + _edits_json([]).encode("utf-16-le"), "UTF-16"),
    "utf16_without_bom": (_edits_json([]).encode("utf-16-le"), "NUL bytes"),
    "binary": (bytes(range(256)) * 4, "NUL bytes"),
    "nested_100k_deep": (HEAD + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    "int_key_5000_digits": (HEAD + b'[{"op": "set_arg", "node": "add", "key": ' + b"7" * 5000
                            + b', "value": "1"}]}', "digits"),
    "op_is_a_list": (_edits_json([{"op": ["set_arg"], "node": "add", "key": 1, "value": "2"}]).encode(),
                     "Unknown edit op ['set_arg']"),
    "kwarg_key_lambda": (_edits_json([{"op": "set_arg", "node": "add", "key": "lambda", "value": "2"}]).encode(),
                         "'lambda' is a Python keyword"),
    "kwarg_key_class_in_insert": (_edits_json([{"op": "insert", "after": "relu", "kind": "call_method",
                                                "target": "clamp", "args": "(%relu,)",
                                                "kwargs": "{'class': 1}"}]).encode(), "'class' is a Python keyword"),
    "kwarg_key_nfkc_alias": (_edits_json([{"op": "insert", "after": "relu", "kind": "call_method",
                                           "target": "clamp", "args": "(%relu,)",
                                           "kwargs": "{'\uff58': 1, 'x': 2}"}]).encode(), "read by Python as 'x'"),
    "reroute_not_a_bool": (_edits_json([{"op": "insert", "after": "relu", "kind": "call_function",
                                         "target": "torch.neg", "args": "(%relu,)", "reroute": "yes"}]).encode(),
                           "must be true or false"),
}


def _write(hostile, name: str) -> os.PathLike:
    data, _ = MALFORMED[name]
    path = hostile.dir / f"{name}.json"
    path.write_bytes(data)
    return path


def _assert_one_line(hostile, proc, phrase: str, code: int = 2) -> None:
    hostile.assert_clean(proc, code=code)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("fxstudio: ") and phrase in lines[0], lines[0]
    assert len(lines[0]) < 400, lines[0]


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_apply_refuses_a_malformed_script_in_one_line(hostile, name):
    path = _write(hostile, name)
    out = hostile.dir / "out.py"
    proc = hostile.run("apply", MODEL, path, "-o", out)
    _assert_one_line(hostile, proc, MALFORMED[name][1])
    assert str(path) in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("name", ["invalid_utf8", "nested_100k_deep", "op_is_a_list"])
def test_compare_refuses_a_malformed_script_in_one_line(hostile, name):
    proc = hostile.run("compare", MODEL, _write(hostile, name))
    _assert_one_line(hostile, proc, MALFORMED[name][1])
    assert proc.stdout == ""


@pytest.mark.parametrize("name", ["nested_100k_deep", "int_key_5000_digits", "op_is_a_list"])
def test_window_replay_refuses_a_malformed_script_in_one_line(hostile, name):
    png = hostile.dir / "shot.png"
    proc = hostile.run(MODEL, "--screenshot", png, "--replay", _write(hostile, name))
    _assert_one_line(hostile, proc, MALFORMED[name][1])
    assert not png.exists()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_script_file_is_refused_not_read_forever(hostile):
    proc = hostile.run("apply", MODEL, "/dev/zero", timeout=60)
    _assert_one_line(hostile, proc, "larger than")


def test_a_literal_into_the_object_of_getattr_is_refused_and_the_export_still_compiles(hostile):
    """``set_arg`` of ``1`` into ``getattr(x, 'shape')`` used to make fx write ``1.shape``."""
    model = example_path("transformer_block.py")
    bad = hostile.script([{"op": "set_arg", "node": "getattr_1", "key": 0, "value": "1"}])
    proc = hostile.run("apply", model, bad)
    _assert_one_line(hostile, proc, "getattr", code=1)
    assert "Edit 1 (set_arg)" in proc.stderr


def test_a_string_that_is_not_unicode_text_is_refused(hostile):
    """A lone surrogate (valid in JSON as an escape, not in UTF-8) inside an argument value."""
    path = hostile.dir / "surrogate.json"
    path.write_text('{"format": "fxstudio.edits/1", "edits": [{"op": "set_arg", "node": "add", "key": 1, '
                    '"value": "\'\\ud800\'"}]}', encoding="utf-8")
    proc = hostile.run("apply", MODEL, path)
    _assert_one_line(hostile, proc, "not valid Unicode", code=1)


def test_compare_into_a_closed_pipe_exits_quietly(hostile):
    """``fxstudio compare ... | head``: the reader is gone before the report is written."""
    script = hostile.script([{"op": "set_arg", "node": "add", "key": 1, "value": "2"}])
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write gets EPIPE
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "FXSTUDIO_STATE_DIR": str(hostile.state),
           "OMP_NUM_THREADS": "1"}
    try:
        proc = subprocess.run([str(FXSTUDIO), "compare", str(MODEL), str(script), "--repeats", "1"],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120, env=env,
                              cwd=hostile.dir)
    finally:
        os.close(write_end)
    assert proc.stderr == "", proc.stderr
    assert proc.returncode == 141
    hostile.assert_clean()


@pytest.mark.parametrize("extra, phrase", [
    (["--seed", "9" * 30], "64-bit integer"),
    (["--input-spec", "99999999,99999999"], "elements is more than"),
    (["--inputs", "NOT_TENSORS"], "Cannot read inputs from"),
])
def test_compare_refuses_bad_run_options_in_one_line(hostile, extra, phrase):
    script = hostile.script([])
    (hostile.dir / "NOT_TENSORS").write_bytes(b"\x80\x02}q\x00." + bytes(range(64)))
    proc = hostile.run("compare", MODEL, script, "--repeats", "1", *extra)
    _assert_one_line(hostile, proc, phrase)


def test_compare_refuses_a_nan_tolerance(hostile):
    proc = hostile.run("compare", MODEL, hostile.script([]), "--rtol", "nan", "--repeats", "1")
    _assert_one_line(hostile, proc, "--rtol and --atol", code=1)
